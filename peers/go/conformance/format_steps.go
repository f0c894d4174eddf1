package conformance

import (
	"encoding/json"
	"fmt"
	"strings"
)

// show is a short printable JSON form of a value.
func show(v any) string {
	b, err := json.Marshal(plain(v))
	s := string(b)
	if err != nil {
		s = fmt.Sprint(v)
	}
	if len(s) > 400 {
		return fmt.Sprintf("%s… (%d chars)", s[:400], len(s))
	}
	return s
}

// plain turns *Obj into ordered-less maps for printing.
func plain(v any) any {
	switch x := v.(type) {
	case *Obj:
		m := map[string]any{}
		for _, k := range x.Keys {
			m[k] = plain(x.Vals[k])
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plain(e)
		}
		return out
	}
	return v
}

func strList(v any, where string, ints bool) error {
	a, ok := v.([]any)
	if !ok {
		return fail(where, "expected an array")
	}
	for i, x := range a {
		if _, ok := x.(string); ok {
			continue
		}
		if _, ok := safeInt(x); ok && ints {
			continue
		}
		suffix := ""
		if ints {
			suffix = " or a safe integer"
		}
		return fail(fmt.Sprintf("%s[%d]", where, i), "%s must be a string%s", show(x), suffix)
	}
	return nil
}

func checkReplyExpectation(s *Obj, where string, scriptCall bool) error {
	if s.Has("expect") {
		if err := checkMatcher(s.Get("expect"), where+".expect"); err != nil {
			return err
		}
	}
	if s.Has("error") {
		e, ok := s.Get("error").(string)
		if !ok || e == "" {
			return fail(where+".error", "must be a non-empty string")
		}
		if scriptCall && !codeRe.MatchString(e) {
			return fail(where+".error", "a script's error must be an EMQ_<CODE>, got %s", show(e))
		}
	}
	if s.Has("expect") && s.Has("error") {
		return fail(where, `give "expect" or "error", not both`)
	}
	return nil
}

var stepKinds = []string{"call", "command", "sleep", "keys_state", "snapshot", "unchanged", "repeat"}

// stepKind is the one kind key of a step.
func stepKind(s *Obj) string {
	for _, k := range stepKinds {
		if s.Has(k) {
			return k
		}
	}
	return ""
}

// checkStep validates one step; scripts reports whether lua/<name>.lua exists.
func checkStep(v any, where string, scripts func(string) bool) error {
	s, ok := v.(*Obj)
	if !ok {
		return fail(where, "a step must be an object")
	}
	var kinds []string
	for _, k := range stepKinds {
		if s.Has(k) {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) != 1 {
		return fail(where, "a step has exactly one of %s (found: %s; keys: %s)", strings.Join(stepKinds, ", "), strings.Join(kinds, ", "), strings.Join(s.Keys, ", "))
	}
	kind := kinds[0]
	w := where + " (" + kind + ")"
	switch kind {
	case "call":
		if err := onlyKeys(s, []string{"call", "keys", "argv", "expect", "error", "note"}, w); err != nil {
			return err
		}
		if name, ok := s.Get("call").(string); !ok || !scripts(name) {
			return fail(w, "no script lua/%v.lua", s.Get("call"))
		}
		for _, k := range []string{"keys", "argv"} {
			if s.Has(k) {
				if err := strList(s.Get(k), w+"."+k, k == "argv"); err != nil {
					return err
				}
			}
		}
		return checkReplyExpectation(s, w, true)
	case "command":
		if err := onlyKeys(s, []string{"command", "expect", "error", "note"}, w); err != nil {
			return err
		}
		if err := strList(s.Get("command"), w+".command", true); err != nil {
			return err
		}
		if len(s.Get("command").([]any)) == 0 {
			return fail(w, "empty command")
		}
		return checkReplyExpectation(s, w, false)
	case "sleep":
		if err := onlyKeys(s, []string{"sleep", "note"}, w); err != nil {
			return err
		}
		if n, ok := safeInt(s.Get("sleep")); !ok || n < 0 || n > 60000 {
			return fail(w, "sleep must be 0..60000 ms")
		}
		return nil
	case "keys_state":
		if err := onlyKeys(s, []string{"keys_state", "note"}, w); err != nil {
			return err
		}
		ks, ok := s.Get("keys_state").(*Obj)
		if !ok || len(ks.Keys) == 0 {
			return fail(w, "expected an object of key ref -> state")
		}
		for _, k := range ks.Keys {
			if err := checkKeyState(ks.Get(k), w+"["+k+"]"); err != nil {
				return err
			}
		}
		return nil
	case "snapshot", "unchanged":
		if err := onlyKeys(s, []string{kind, "note"}, w); err != nil {
			return err
		}
		if n, ok := s.Get(kind).(string); !ok || n == "" {
			return fail(w, "expected a snapshot name")
		}
		return nil
	default:
		if err := onlyKeys(s, []string{"repeat", "steps", "note"}, w); err != nil {
			return err
		}
		if n, ok := safeInt(s.Get("repeat")); !ok || n < 1 || n > 10000 {
			return fail(w, "repeat must be 1..10000")
		}
		steps, ok := s.Get("steps").([]any)
		if !ok || len(steps) == 0 {
			return fail(w, `repeat needs a non-empty "steps" array`)
		}
		for i, st := range steps {
			if err := checkStep(st, fmt.Sprintf("%s.%d", where, i), scripts); err != nil {
				return err
			}
		}
		return nil
	}
}

// checkScenario validates one scenario.
func checkScenario(v any, where string, scripts func(string) bool) (*Obj, error) {
	s, ok := v.(*Obj)
	if !ok {
		return nil, fail(where, "a scenario must be an object")
	}
	if err := onlyKeys(s, []string{"name", "steps", "note"}, where); err != nil {
		return nil, err
	}
	if n, ok := s.Get("name").(string); !ok || strings.TrimSpace(n) == "" {
		return nil, fail(where, `a scenario needs a "name"`)
	}
	steps, ok := s.Get("steps").([]any)
	if !ok || len(steps) == 0 {
		return nil, fail(where, `a scenario needs a non-empty "steps" array`)
	}
	for i, st := range steps {
		if err := checkStep(st, fmt.Sprintf("step %d", i), scripts); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// checkFile validates the outer shape of a file and returns its scenarios.
func checkFile(v any, where string) ([]any, error) {
	f, ok := v.(*Obj)
	if !ok {
		return nil, fail(where, "a scenario file is one JSON object")
	}
	if err := onlyKeys(f, []string{"about", "scenarios"}, where); err != nil {
		return nil, err
	}
	if _, ok := f.Get("about").(string); !ok {
		return nil, fail(where, `a file needs an "about" string`)
	}
	sc, ok := f.Get("scenarios").([]any)
	if !ok || len(sc) == 0 {
		return nil, fail(where, `a file needs a non-empty "scenarios" array`)
	}
	return sc, nil
}
