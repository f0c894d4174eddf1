package conformance

// Frozen conformance (docs/protocol.md §12), as test/conformance/frozen.ts and
// scripts/conformance-freeze.ts do it on the TypeScript side:
//
//   - the scenarios of an older protocol version stay in conformance/v<N>/; against the current
//     bytes every script call in them must be refused with EMQ_VERSION and write nothing
//     (AsRefused turns such a scenario into that check, for the ordinary Runner);
//   - conformance/frozen.json records, per version, a hash of every scenario of
//     conformance/scenarios/ once it is part of that version; a recorded scenario must not change
//     (ScenarioHash is the same SHA1 of JSON.stringify(scenario) the TypeScript side records).

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// knownVar are the variables a refused-only run still knows: the runner's fresh names and the
// ids it mints. Anything else would have been bound by an earlier reply, which a refusal never
// gives, so it becomes "0" (a call refused by version reads no argument).
var knownVar = regexp.MustCompile(`^(Q|T|NS|job_\w+|evt_\w+|ver_\w+)$`)

var varToken = regexp.MustCompile(`\$([A-Za-z_][A-Za-z0-9_]*)`)

// unbind replaces every variable of a string that is not knownVar by "0"; other values pass.
func unbind(v any) any {
	s, ok := v.(string)
	if !ok {
		return v
	}
	return varToken.ReplaceAllStringFunc(s, func(m string) string {
		if knownVar.MatchString(m[1:]) {
			return m
		}
		return "0"
	})
}

// newObj builds an *Obj from key, value pairs, in that order.
func newObj(kv ...any) *Obj {
	o := &Obj{Vals: map[string]any{}}
	for i := 0; i+1 < len(kv); i += 2 {
		k := kv[i].(string)
		o.Keys = append(o.Keys, k)
		o.Vals[k] = kv[i+1]
	}
	return o
}

// refusedCalls are the call steps of a step list, in order, nested repeats flattened (each call
// once), each expecting EMQ_VERSION, with its keys and arguments unbound.
func refusedCalls(steps []any, version string) []any {
	out := []any{}
	for _, st := range steps {
		s, ok := st.(*Obj)
		if !ok {
			continue
		}
		switch {
		case s.Has("call"):
			keys, _ := s.Get("keys").([]any)
			argv, _ := s.Get("argv").([]any)
			// Only the calls of a caller of that version: a call that sends another version on
			// purpose (a v1 scenario testing the fence with "2") says nothing about the bump.
			if len(argv) == 0 || fmt.Sprint(argv[0]) != version {
				continue
			}
			k := make([]any, len(keys))
			for i, x := range keys {
				k[i] = unbind(x)
			}
			a := make([]any, len(argv))
			for i, x := range argv {
				a[i] = unbind(x)
			}
			out = append(out, newObj("call", s.Get("call"), "keys", k, "argv", a, "error", "EMQ_VERSION"))
		case s.Has("repeat"):
			inner, _ := s.Get("steps").([]any)
			out = append(out, refusedCalls(inner, version)...)
		}
	}
	return out
}

// AsRefused is the scenario of an older version as the refusal check: one snapshot, each of its
// calls made as a caller of that version (ARGV[1] = version; repeats once) expecting EMQ_VERSION,
// nothing changed. Its other keys (name, note) stay.
func AsRefused(sc *Obj, version string) *Obj {
	out := &Obj{Keys: slices.Clone(sc.Keys), Vals: maps.Clone(sc.Vals)}
	if !out.Has("steps") {
		out.Keys = append(out.Keys, "steps")
	}
	src, _ := sc.Get("steps").([]any)
	steps := []any{newObj("snapshot", "frozen")}
	steps = append(steps, refusedCalls(src, version)...)
	steps = append(steps, newObj("unchanged", "frozen"))
	out.Vals["steps"] = steps
	return out
}

// StringifyJS is JSON.stringify of a value parsed by parseJSON (JSON.parse's result): objects keep
// the file's key order except that array-index keys ("0", "7", …) come first in ascending order,
// as in any JavaScript object; numbers are printed as JavaScript prints them (1.0 -> 1,
// 1e21 -> 1e+21); strings escape only '"', '\' and control characters (no HTML escaping, U+2028
// and U+2029 raw), so the text, and the hash, are those the TypeScript side computes.
func StringifyJS(v any) string {
	var b strings.Builder
	writeJS(&b, v)
	return b.String()
}

func writeJS(b *strings.Builder, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case json.Number:
		b.WriteString(jsNumber(x))
	case string:
		writeJSString(b, x)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJS(b, e)
		}
		b.WriteByte(']')
	case *Obj:
		b.WriteByte('{')
		for i, k := range jsKeyOrder(x.Keys) {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSString(b, k)
			b.WriteByte(':')
			writeJS(b, x.Vals[k])
		}
		b.WriteByte('}')
	default:
		panic(fmt.Sprintf("StringifyJS: unexpected %T", v))
	}
}

// arrayIndex reports whether k is a canonical array index (0 .. 2^32-2) and its value.
func arrayIndex(k string) (uint64, bool) {
	if k == "" || (len(k) > 1 && k[0] == '0') {
		return 0, false
	}
	n, err := strconv.ParseUint(k, 10, 64)
	if err != nil || n >= math.MaxUint32 {
		return 0, false
	}
	return n, true
}

// jsKeyOrder is the order of a JavaScript object's own keys: array indices ascending, then the
// other keys in insertion order.
func jsKeyOrder(keys []string) []string {
	var idx, rest []string
	for _, k := range keys {
		if _, ok := arrayIndex(k); ok {
			idx = append(idx, k)
		} else {
			rest = append(rest, k)
		}
	}
	if len(idx) == 0 {
		return keys
	}
	sort.Slice(idx, func(i, j int) bool { a, _ := arrayIndex(idx[i]); c, _ := arrayIndex(idx[j]); return a < c })
	return append(idx, rest...)
}

// jsNumber prints a JSON number as JavaScript's Number#toString does.
func jsNumber(n json.Number) string {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil && !strings.Contains(err.Error(), "range") {
		return string(n)
	}
	if math.IsInf(f, 0) {
		return "null" // JSON.stringify(Infinity)
	}
	if f == 0 {
		return "0" // -0 prints as 0
	}
	abs := math.Abs(f)
	if abs >= 1e-6 && abs < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // 1e+21, 1.5e-07
	mant, exp, _ := strings.Cut(s, "e")
	sign := exp[0]
	exp = strings.TrimLeft(exp[1:], "0")
	return mant + "e" + string(sign) + exp
}

// writeJSString writes s as JSON.stringify does.
func writeJSString(b *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			_, n := utf8.DecodeRuneInString(s[i:])
			b.WriteString(s[i : i+n])
			i += n
			continue
		}
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 {
				b.WriteString(`\u00`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&15])
			} else {
				b.WriteByte(c)
			}
		}
		i++
	}
	b.WriteByte('"')
}

// ScenarioHash is the hash conformance/frozen.json records for a scenario: the SHA1 of its JSON
// text with the key order the file gives it (scenarioHash in scripts/conformance-freeze.ts).
func ScenarioHash(scenario any) string {
	sum := sha1.Sum([]byte(StringifyJS(scenario)))
	return hex.EncodeToString(sum[:])
}

// CurrentScenarios hashes every scenario of the *.json files of dir, by "<file>#<name>" (a later
// scenario of the same name replaces an earlier one, as in the TypeScript Map).
func CurrentScenarios(dir string) (map[string]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	out := map[string]string{}
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		v, err := parseJSON(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		f, ok := v.(*Obj)
		if !ok {
			return nil, fmt.Errorf("%s: not a JSON object", path)
		}
		list, ok := f.Get("scenarios").([]any)
		if !ok {
			return nil, fmt.Errorf("%s: no \"scenarios\" array", path)
		}
		for _, s := range list {
			name := "undefined"
			if o, ok := s.(*Obj); ok {
				if n, ok := o.Get("name").(string); ok {
					name = n
				}
			}
			out[filepath.Base(path)+"#"+name] = ScenarioHash(s)
		}
	}
	return out, nil
}

// Frozen is conformance/frozen.json: per protocol version, "<file>#<scenario name>" -> hash.
type Frozen map[string]map[string]string

// ReadFrozen reads the recorded hashes; ok is false when the file does not exist.
func ReadFrozen(path string) (f Frozen, ok bool, err error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return Frozen{}, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, true, fmt.Errorf("%s: %w", path, err)
	}
	return f, true, nil
}

// ChangedScenarios are the scenarios recorded under version whose current hash differs (or that
// are gone), sorted.
func ChangedScenarios(recorded map[string]string, now map[string]string) []string {
	var changed []string
	for key, hash := range recorded {
		if now[key] != hash {
			changed = append(changed, key)
		}
	}
	slices.Sort(changed)
	return changed
}

var versionDir = regexp.MustCompile(`^v(\d+)$`)

// OlderVersionDirs are the names of conformance/v<N>/ folders of confDir with N below the
// protocol version current, in ascending order of N.
func OlderVersionDirs(confDir, current string) ([]string, error) {
	cur, err := strconv.Atoi(current)
	if err != nil {
		return nil, fmt.Errorf("protocol version %q is not a number", current)
	}
	entries, err := os.ReadDir(confDir)
	if err != nil {
		return nil, err
	}
	type dir struct {
		name string
		n    int
	}
	var found []dir
	for _, e := range entries {
		m := versionDir.FindStringSubmatch(e.Name())
		if m == nil || !e.IsDir() {
			continue
		}
		if n, err := strconv.Atoi(m[1]); err == nil && n < cur {
			found = append(found, dir{e.Name(), n})
		}
	}
	sort.Slice(found, func(i, j int) bool { return found[i].n < found[j].n })
	out := make([]string, len(found))
	for i, d := range found {
		out[i] = d.name
	}
	return out, nil
}
