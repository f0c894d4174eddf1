// Package cli holds what the example commands share: flags for the connection and the scripts.
package cli

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	echomq "github.com/echomq/echomq-go"
	"github.com/redis/go-redis/v9"
)

// Common are the flags every command takes.
type Common struct {
	URL   string
	Queue string
	Lua   string
}

// Register adds -url, -queue and -lua to the default flag set.
func (c *Common) Register() {
	flag.StringVar(&c.URL, "url", envOr("ECHOMQ_URL", os.Getenv("ECHOMQ_TEST_URL")), "Valkey URL (default $ECHOMQ_URL or $ECHOMQ_TEST_URL)")
	flag.StringVar(&c.Queue, "queue", "", "queue name")
	flag.StringVar(&c.Lua, "lua", envOr("ECHOMQ_LUA", defaultLua()), "directory of the protocol's *.lua scripts")
}

func envOr(k, d string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return d
}

// defaultLua is ../../lua from the module root, found from the working directory upwards.
func defaultLua() string {
	dir, _ := os.Getwd()
	for d := dir; ; d = filepath.Dir(d) {
		if st, err := os.Stat(filepath.Join(d, "lua", "claim.lua")); err == nil && !st.IsDir() {
			return filepath.Join(d, "lua")
		}
		if filepath.Dir(d) == d {
			return "lua"
		}
	}
}

// Open connects as emq:<role>:go-<pid> (RESP2, so a Lua false reads as nil, as every runtime sees it) and loads the
// scripts and the queue.
func (c *Common) Open(ctx context.Context, role string) (*redis.Client, *echomq.Scripts, *echomq.Queue, error) {
	if c.Queue == "" {
		return nil, nil, nil, fmt.Errorf("-url and -queue are required")
	}
	rdb, scripts, err := c.Connect(ctx, role)
	if err != nil {
		return nil, nil, nil, err
	}
	q, err := echomq.NewQueue(rdb, scripts, c.Queue)
	if err != nil {
		return nil, nil, nil, err
	}
	return rdb, scripts, q, nil
}

// Connect connects as emq:<role>:go-<pid> (RESP2) and loads the scripts; -queue is not needed.
func (c *Common) Connect(ctx context.Context, role string) (*redis.Client, *echomq.Scripts, error) {
	if c.URL == "" {
		return nil, nil, fmt.Errorf("-url is required")
	}
	opt, err := redis.ParseURL(c.URL)
	if err != nil {
		return nil, nil, err
	}
	opt.Protocol = 2
	opt.ClientName = fmt.Sprintf("emq:%s:go-%d", role, os.Getpid()) // CLIENT SETNAME, for CLIENT LIST
	rdb := redis.NewClient(opt)
	if err := rdb.Ping(ctx).Err(); err != nil {
		return nil, nil, err
	}
	scripts, err := echomq.LoadScripts(c.Lua)
	if err != nil {
		return nil, nil, err
	}
	return rdb, scripts, nil
}

// Fail prints err and exits 1.
func Fail(err error) {
	fmt.Fprintln(os.Stderr, "error:", err)
	os.Exit(1)
}
