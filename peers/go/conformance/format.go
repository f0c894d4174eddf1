package conformance

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// FormatError is a scenario or file that breaks the format.
type FormatError struct{ Msg string }

func (e *FormatError) Error() string { return e.Msg }

func fail(where, format string, args ...any) error {
	return &FormatError{Msg: where + ": " + fmt.Sprintf(format, args...)}
}

var nameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
var codeRe = regexp.MustCompile(`^EMQ_[A-Z_]+$`)

const maxSafe = 1<<53 - 1

// safeInt returns the integer of a JSON number within ±2^53.
func safeInt(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := n.Int64()
	if err != nil || i > maxSafe || i < -maxSafe {
		return 0, false
	}
	return i, true
}

func onlyKeys(o *Obj, allowed []string, where string) error {
	for _, k := range o.Keys {
		if !slices.Contains(allowed, k) {
			return fail(where, "unknown key %q (allowed: %s)", k, strings.Join(allowed, ", "))
		}
	}
	return nil
}

func intPair(v any, where string) error {
	a, ok := v.([]any)
	if ok && len(a) == 2 {
		lo, ok1 := safeInt(a[0])
		hi, ok2 := safeInt(a[1])
		if ok1 && ok2 && lo <= hi {
			return nil
		}
	}
	return fail(where, "expected [min, max] with integers min <= max, got %s", show(v))
}

// checkMatcher validates a matcher (README "Reply matchers").
func checkMatcher(m any, where string) error {
	switch x := m.(type) {
	case nil, string:
		return nil
	case json.Number:
		if _, ok := safeInt(x); !ok {
			return fail(where, "%s is not a safe integer (use {\"$match\": …} on a string or {\"$int\": [min, max]})", x)
		}
		return nil
	case []any:
		for i, e := range x {
			if err := checkMatcher(e, fmt.Sprintf("%s[%d]", where, i)); err != nil {
				return err
			}
		}
		return nil
	case *Obj:
		if len(x.Keys) == 0 {
			return fail(where, "an empty object is not a matcher (use {\"$any\": true})")
		}
		if err := onlyKeys(x, []string{"$any", "$type", "$match", "$int", "$bind", "$len", "$prefix"}, where); err != nil {
			return err
		}
		if x.Has("$any") && x.Get("$any") != true {
			return fail(where, `"$any" must be true`)
		}
		if x.Has("$type") && !slices.Contains([]any{"integer", "string", "array", "nil"}, x.Get("$type")) {
			return fail(where, `"$type" must be integer, string, array or nil, got %s`, show(x.Get("$type")))
		}
		if x.Has("$match") {
			s, ok := x.Get("$match").(string)
			if !ok {
				return fail(where, `"$match" must be a string`)
			}
			if _, err := regexp.Compile(s); err != nil {
				return fail(where, `"$match" is not a valid regex: %v`, err)
			}
		}
		if x.Has("$int") {
			if err := intPair(x.Get("$int"), where+".$int"); err != nil {
				return err
			}
		}
		if x.Has("$bind") {
			if s, ok := x.Get("$bind").(string); !ok || !nameRe.MatchString(s) {
				return fail(where, `"$bind" must be a name %s`, nameRe)
			}
		}
		if x.Has("$len") {
			if n, ok := safeInt(x.Get("$len")); !ok || n < 0 {
				return fail(where, `"$len" must be an integer >= 0`)
			}
		}
		if x.Has("$prefix") {
			a, ok := x.Get("$prefix").([]any)
			if !ok {
				return fail(where, `"$prefix" must be an array of matchers`)
			}
			return checkMatcher(a, where+".$prefix")
		}
		return nil
	default:
		return fail(where, "%s is not a matcher (booleans are not replies)", show(m))
	}
}

var stateKeys = map[string][]string{
	"none":   {"type"},
	"string": {"type", "value", "ttl"},
	"list":   {"type", "value", "len", "ttl"},
	"set":    {"type", "members", "len", "ttl"},
	"zset":   {"type", "members", "scored", "len", "ttl"},
	"hash":   {"type", "fields", "exact", "len", "ttl"},
	"stream": {"type", "length", "len", "ttl"},
}

func matcherList(v any, where string) error {
	if _, ok := v.([]any); !ok {
		return fail(where, "expected an array of matchers")
	}
	return checkMatcher(v, where)
}

// checkKeyState validates a key state (README "Key state expectations").
func checkKeyState(v any, where string) error {
	s, ok := v.(*Obj)
	if !ok {
		return fail(where, `a key state must be an object with "type"`)
	}
	t, _ := s.Get("type").(string)
	allowed, ok := stateKeys[t]
	if !ok {
		return fail(where, "unknown key type %s (none, string, list, set, zset, hash, stream)", show(s.Get("type")))
	}
	if err := onlyKeys(s, allowed, where); err != nil {
		return err
	}
	var errs []error
	if s.Has("value") {
		if t == "list" {
			errs = append(errs, matcherList(s.Get("value"), where+".value"))
		} else {
			errs = append(errs, checkMatcher(s.Get("value"), where+".value"))
		}
	}
	if s.Has("members") {
		errs = append(errs, matcherList(s.Get("members"), where+".members"))
	}
	if s.Has("scored") {
		pairs, ok := s.Get("scored").([]any)
		if !ok {
			return fail(where+".scored", "expected an array of [member, score] pairs")
		}
		for i, p := range pairs {
			if a, ok := p.([]any); !ok || len(a) != 2 {
				return fail(fmt.Sprintf("%s.scored[%d]", where, i), "expected [member, score]")
			}
			errs = append(errs, checkMatcher(p, fmt.Sprintf("%s.scored[%d]", where, i)))
		}
	}
	if s.Has("members") && s.Has("scored") {
		return fail(where, `give "members" or "scored", not both`)
	}
	for _, k := range []string{"fields", "exact"} {
		if !s.Has(k) {
			continue
		}
		f, ok := s.Get(k).(*Obj)
		if !ok {
			return fail(where+"."+k, "expected an object of field -> matcher")
		}
		for _, name := range f.Keys {
			if f.Get(name) == nil && k == "exact" {
				return fail(where+".exact."+name, `null (absent) is not allowed in "exact"; leave the field out`)
			}
			errs = append(errs, checkMatcher(f.Get(name), where+"."+k+"."+name))
		}
	}
	if s.Has("fields") && s.Has("exact") {
		return fail(where, `give "fields" or "exact", not both`)
	}
	for _, k := range []string{"len", "length"} {
		if s.Has(k) {
			if n, ok := safeInt(s.Get(k)); !ok || n < 0 {
				return fail(where+"."+k, "must be an integer >= 0")
			}
		}
	}
	if s.Has("ttl") {
		errs = append(errs, intPair(s.Get("ttl"), where+".ttl"))
	}
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
