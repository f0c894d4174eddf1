package conformance

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	echomq "github.com/echomq/echomq-go"
)

// TestFrozen is frozen conformance (docs/protocol.md §12; test/conformance/frozen.spec.ts):
// the scenarios recorded in conformance/frozen.json for the current protocol version still hash
// the same, and every scenario of an older version (conformance/v<N>/) is refused by the current
// bytes: each of its calls answers EMQ_VERSION and nothing is written.
func TestFrozen(t *testing.T) {
	conf := filepath.Join(root, "conformance")
	v := echomq.ProtocolVersion
	t.Run("the recorded scenarios of protocol "+v+" are unchanged", func(t *testing.T) {
		frozen, ok, err := ReadFrozen(filepath.Join(conf, "frozen.json"))
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			t.Skip("conformance/frozen.json does not exist yet (npm run conformance:freeze records it)")
		}
		recorded := frozen[v]
		if len(recorded) == 0 {
			t.Fatalf("conformance/frozen.json records no scenario of protocol %s (run npm run conformance:freeze)", v)
		}
		now, err := CurrentScenarios(filepath.Join(conf, "scenarios"))
		if err != nil {
			t.Fatal(err)
		}
		if changed := ChangedScenarios(recorded, now); len(changed) > 0 {
			t.Fatalf("%d scenario(s) recorded under protocol %s changed or are gone (a change that breaks a scenario needs a version bump, not an edit):\n  %s",
				len(changed), v, strings.Join(changed, "\n  "))
		}
	})
	older, err := OlderVersionDirs(conf, v)
	if err != nil {
		t.Fatal(err)
	}
	if len(older) == 0 {
		t.Logf("no conformance/v<N>/ older than protocol %s: nothing to replay", v)
		return
	}
	scripts := loadScripts(t)
	r := &Runner{RDB: connect(t), Scripts: scripts}
	for _, dir := range older {
		t.Run(dir, func(t *testing.T) {
			path := filepath.Join(conf, dir)
			names, err := SelectedFiles(path, "")
			if err != nil || len(names) == 0 {
				t.Fatalf("no scenario files in %s (%v)", path, err)
			}
			for _, f := range LoadFiles(path, names, scripts) {
				t.Run(f.Name, func(t *testing.T) {
					if f.Err != nil {
						t.Fatal(f.Err)
					}
					for _, s := range f.Scenarios {
						t.Run(s.Name, func(t *testing.T) {
							if s.Err != nil {
								t.Fatalf("%s/%s › %q is malformed: %v", dir, f.Name, s.Name, s.Err)
							}
							if err := r.Run(context.Background(), dir+"/"+f.Name, AsRefused(s.Scenario, strings.TrimPrefix(dir, "v"))); err != nil {
								t.Fatal(err)
							}
						})
					}
				})
			}
		})
	}
}

func mustParse(t *testing.T, s string) any {
	t.Helper()
	v, err := parseJSON([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// The transform of asRefused (test/conformance/frozen.ts) on a small scenario.
func TestAsRefused(t *testing.T) {
	in := mustParse(t, `{"name": "n", "note": "kept", "steps": [
		{"snapshot": "s0"},
		{"call": "claim", "keys": ["@meta", "emq:{$Q}:x"], "argv": ["1", 5, "$token"], "expect": [{"$bind": "token"}]},
		{"command": ["HSET", "@meta", "v", "2"]},
		{"repeat": 2, "steps": [
			{"sleep": 1},
			{"call": "complete", "keys": ["@job:$job_a"], "argv": ["$job_a-$evt_b-$ver_c-$T-$NS-$Qx-$$-$tok$en-$"], "error": "EMQ_STALE"},
			{"repeat": 3, "steps": [{"call": "enqueue", "note": "dropped"}]}
		]},
		{"keys_state": {"@meta": {"type": "none"}}},
		{"unchanged": "s0"}
	]}`).(*Obj)
	got := StringifyJS(AsRefused(in, "1"))
	want := `{"name":"n","note":"kept","steps":[` +
		`{"snapshot":"frozen"},` +
		`{"call":"claim","keys":["@meta","emq:{$Q}:x"],"argv":["1",5,"0"],"error":"EMQ_VERSION"},` +
		`{"unchanged":"frozen"}]}` // the complete and enqueue calls send no "1": not a v1 caller's
	if got2 := StringifyJS(AsRefused(in, "$job_a-$evt_b-$ver_c-$T-$NS-$Qx-$$-$tok$en-$")); !strings.Contains(got2, `"argv":["$job_a-$evt_b-$ver_c-$T-$NS-0-$$-00-$"],"error":"EMQ_VERSION"`) {
		t.Errorf("AsRefused: unknown variables become 0: %s", got2)
	}
	if got != want {
		t.Errorf("AsRefused:\n got %s\nwant %s", got, want)
	}
	if StringifyJS(in) == got {
		t.Error("AsRefused changed its input")
	}
	has := func(n string) bool { return n == "claim" || n == "complete" || n == "enqueue" }
	if _, err := checkScenario(AsRefused(in, "1"), "refused", has); err != nil {
		t.Errorf("the refused scenario is not valid: %v", err)
	}
}

// StringifyJS is JSON.stringify of JSON.parse: the expected text and hash were computed by node
// (`JSON.stringify(JSON.parse(text))`, `createHash('sha1')`) on this very text.
func TestStringifyJSMatchesNode(t *testing.T) {
	text := `{"name": "tricky <&> \u00e9 \u2028 é \/ \u0001\t", "b": 1.0, "a": [1e21, 1.5e-7, 0.000001, -0, 123456789012345678, 1E2, 2.50, 1e400, null, true, false], "10": "ten", "2": {"z": 1, "0": 0, "01": "x", "4294967295": "max", "4294967294": "idx"}, "steps": []}`
	want := "{\"2\":{\"0\":0,\"4294967294\":\"idx\",\"z\":1,\"01\":\"x\",\"4294967295\":\"max\"},\"10\":\"ten\",\"name\":\"tricky <&> é \u2028 é / \\u0001\\t\",\"b\":1,\"a\":[1e+21,1.5e-7,0.000001,0,123456789012345680,100,2.5,null,null,true,false],\"steps\":[]}"
	v := mustParse(t, text)
	if got := StringifyJS(v); got != want {
		t.Errorf("StringifyJS:\n got %s\nwant %s", got, want)
	}
	if got := ScenarioHash(v); got != "b7c5ef18e5afc97b63f4c1fea5eb9649b1c22750" {
		t.Errorf("ScenarioHash = %s, node computed b7c5ef18e5afc97b63f4c1fea5eb9649b1c22750", got)
	}
}

// The hashes of every scenario of conformance/scenarios/ and conformance/v<N>/ are those node
// computes with scenarioHash's own expression (scripts/conformance-freeze.ts). Skipped without node.
func TestScenarioHashesMatchNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH")
	}
	const script = `
const fs = require('fs'), path = require('path'), { createHash } = require('crypto');
const dir = process.argv[1], out = {};
for (const f of fs.readdirSync(dir).filter((f) => f.endsWith('.json')).sort()) {
  const parsed = JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8'));
  for (const s of parsed.scenarios) out[f + '#' + s.name] = createHash('sha1').update(JSON.stringify(s)).digest('hex');
}
process.stdout.write(JSON.stringify(out));`
	conf := filepath.Join(root, "conformance")
	dirs := []string{"scenarios"}
	older, _ := OlderVersionDirs(conf, "1000000")
	dirs = append(dirs, older...)
	for _, d := range dirs {
		t.Run(d, func(t *testing.T) {
			dir := filepath.Join(conf, d)
			b, err := exec.Command(node, "-e", script, dir).Output()
			if err != nil {
				t.Fatalf("node: %v", err)
			}
			var want map[string]string
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			got, err := CurrentScenarios(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) == 0 || len(got) != len(want) {
				t.Fatalf("%d scenarios hashed, node hashed %d", len(got), len(want))
			}
			for k, h := range want {
				if got[k] != h {
					t.Errorf("%s: Go %s, node %s", k, got[k], h)
				}
			}
		})
	}
}

// A recorded scenario that changes, or goes, is reported; an added one is not.
func TestChangedScenarios(t *testing.T) {
	dir := t.TempDir()
	write := func(text string) {
		if err := os.WriteFile(filepath.Join(dir, "a.json"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"about": "x", "scenarios": [{"name": "one", "steps": [{"sleep": 1}]}, {"name": "two", "steps": [{"sleep": 2}]}]}`)
	recorded, err := CurrentScenarios(dir)
	if err != nil || len(recorded) != 2 {
		t.Fatalf("%v %v", recorded, err)
	}
	if c := ChangedScenarios(recorded, recorded); len(c) != 0 {
		t.Errorf("unchanged files reported %v", c)
	}
	// Whitespace is not a change; a new scenario is not a change.
	write(`{"about": "x", "scenarios": [{"name":"one","steps":[{"sleep":1}]},
		{"name": "two", "steps": [{"sleep": 2}]}, {"name": "three", "steps": [{"sleep": 3}]}]}`)
	now, _ := CurrentScenarios(dir)
	if c := ChangedScenarios(recorded, now); len(c) != 0 {
		t.Errorf("reformatting or adding reported %v", c)
	}
	// A changed value, a reordered key and a removed scenario are changes.
	write(`{"about": "x", "scenarios": [{"steps": [{"sleep": 1}], "name": "one"}, {"name": "three", "steps": [{"sleep": 3}]}]}`)
	now, _ = CurrentScenarios(dir)
	if c := ChangedScenarios(recorded, now); strings.Join(c, ",") != "a.json#one,a.json#two" {
		t.Errorf("changed = %v, want a.json#one, a.json#two", c)
	}
	f, ok, err := ReadFrozen(filepath.Join(dir, "frozen.json"))
	if ok || err != nil || len(f) != 0 {
		t.Errorf("a missing frozen.json: %v %v %v", f, ok, err)
	}
}

func TestOlderVersionDirs(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"v1", "v2", "v10", "vx", "scenarios", "v03"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "v0"), nil, 0o644); err != nil { // a file, not a folder
		t.Fatal(err)
	}
	for cur, want := range map[string]string{"1": "", "2": "v1", "3": "v1,v2", "11": "v1,v2,v03,v10"} {
		got, err := OlderVersionDirs(dir, cur)
		if err != nil || strings.Join(got, ",") != want {
			t.Errorf("OlderVersionDirs(%s) = %v %v, want %s", cur, got, err, want)
		}
	}
	if _, err := OlderVersionDirs(dir, "x"); err == nil {
		t.Error("a version that is not a number was accepted")
	}
}
