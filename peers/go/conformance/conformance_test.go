package conformance

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	echomq "github.com/echomq/echomq-go"
	"github.com/redis/go-redis/v9"
)

// The repository root, from peers/go/conformance.
var root = filepath.Join("..", "..", "..")

// testURL is ECHOMQ_TEST_URL, or a valkey-server started for this run in a temp dir (stopped by pid).
func testURL(t *testing.T) string {
	if u := os.Getenv("ECHOMQ_TEST_URL"); u != "" {
		return u
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	dir := t.TempDir()
	cmd := exec.Command("valkey-server", "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--dir", dir, "--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		t.Fatalf("ECHOMQ_TEST_URL is unset and valkey-server cannot start: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := fmt.Sprintf("redis://127.0.0.1:%d", port)
	opt, _ := redis.ParseURL(url)
	c := redis.NewClient(opt)
	defer c.Close()
	for i := 0; i < 200; i++ {
		if c.Ping(context.Background()).Err() == nil {
			return url
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatal("valkey-server did not answer PING")
	return ""
}

// loadScripts loads the scripts of ECHOMQ_LUA, or of the repository's lua/.
func loadScripts(t *testing.T) *echomq.Scripts {
	lua := os.Getenv("ECHOMQ_LUA")
	if lua == "" {
		lua = filepath.Join(root, "lua")
	}
	scripts, err := echomq.LoadScripts(lua)
	if err != nil {
		t.Fatal(err)
	}
	return scripts
}

// connect opens a RESP2 client on the test Valkey, closed when the test ends.
func connect(t *testing.T) *redis.Client {
	opt, err := redis.ParseURL(testURL(t))
	if err != nil {
		t.Fatal(err)
	}
	opt.Protocol = 2 // RESP2: a Lua false is a nil reply, as for every runtime (protocol.md §9)
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func TestConformance(t *testing.T) {
	scripts := loadScripts(t)
	dir := filepath.Join(root, "conformance", "scenarios")
	names, err := SelectedFiles(dir, os.Getenv("ECHOMQ_CONFORMANCE"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no scenario files selected in %s (%v)", dir, err)
	}
	r := &Runner{RDB: connect(t), Scripts: scripts}
	for _, f := range LoadFiles(dir, names, scripts) {
		t.Run(f.Name, func(t *testing.T) {
			if f.Err != nil {
				t.Fatal(f.Err)
			}
			for _, s := range f.Scenarios {
				t.Run(s.Name, func(t *testing.T) {
					if s.Err != nil {
						t.Fatalf("%s › %q is malformed: %v", f.Name, s.Name, s.Err)
					}
					if err := r.Run(context.Background(), f.Name, s.Scenario); err != nil {
						t.Fatal(err)
					}
				})
			}
		})
	}
}
