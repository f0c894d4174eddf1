package echomq

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// manifest is the part of lua/manifest.json (written by `npm run lua:build`) this peer relies on.
type manifest struct {
	Protocol string `json:"protocol"`
	Scripts  []struct {
		Name    string `json:"name"`
		File    string `json:"file"`
		SHA1    string `json:"sha1"`
		Version string `json:"version"`
	} `json:"scripts"`
}

// luaDir is ECHOMQ_LUA, or the repository's lua/ (peers/go is two levels down).
func luaDir() string {
	if d := os.Getenv("ECHOMQ_LUA"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "lua")
}

// The manifest states the wire per script (docs/protocol.md §12): every script it lists is one
// LoadScripts loads, with the same SHA1 (the bytes this peer sends are the ones the manifest
// names), and its protocol is the version this peer speaks. Until every script is built from
// lua/src the manifest lists only some; those are checked.
func TestLoadedScriptsMatchManifest(t *testing.T) {
	dir := luaDir()
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatalf("lua/manifest.json: %v", err)
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("lua/manifest.json: %v", err)
	}
	if m.Protocol != ProtocolVersion {
		t.Errorf("lua/manifest.json speaks protocol %q, this peer's ProtocolVersion is %q", m.Protocol, ProtocolVersion)
	}
	if len(m.Scripts) == 0 {
		t.Fatal("lua/manifest.json lists no script")
	}
	scripts, err := LoadScripts(dir)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, e := range m.Scripts {
		if seen[e.Name] {
			t.Errorf("%s: listed twice in the manifest", e.Name)
		}
		seen[e.Name] = true
		if want := "lua/" + e.Name + ".lua"; e.File != want {
			t.Errorf("%s: the manifest's file is %q; LoadScripts reads %s", e.Name, e.File, want)
		}
		if e.Version != ProtocolVersion {
			t.Errorf("%s: the manifest says it speaks protocol %q, this peer %q", e.Name, e.Version, ProtocolVersion)
		}
		s := scripts.Get(e.Name)
		if s == nil {
			t.Errorf("%s: in the manifest, but LoadScripts(%s) did not load it", e.Name, dir)
			continue
		}
		if s.SHA != e.SHA1 {
			t.Errorf("%s: loaded SHA1 %s, the manifest says %s (run `npm run lua:build`, or the bytes were edited after the build)", e.Name, s.SHA, e.SHA1)
		}
	}
}

// Every script this peer calls (a `Run(ctx, <conn>, "<name>"` in its non-test sources, such as
// lease.lua and semaphore.lua of the coordination surface) is one the manifest lists: the peer
// speaks only the wire the repository states.
func TestCalledScriptsAreInTheManifest(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(luaDir(), "manifest.json"))
	if err != nil {
		t.Fatalf("lua/manifest.json: %v", err)
	}
	var m manifest
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, e := range m.Scripts {
		listed[e.Name] = true
	}
	files, _ := filepath.Glob("*.go")
	call := regexp.MustCompile(`\.Run\(ctx, [A-Za-z.]+, "([a-z-]+)"`)
	called := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range call.FindAllStringSubmatch(string(src), -1) {
			called[m[1]] = true
		}
	}
	for _, want := range []string{"claim", "node", "lease", "semaphore"} {
		if !called[want] {
			t.Errorf("the scan found no call of %s.lua: the pattern no longer matches the sources", want)
		}
	}
	for name := range called {
		if !listed[name] {
			t.Errorf("the peer calls %s.lua, which lua/manifest.json does not list", name)
		}
	}
}
