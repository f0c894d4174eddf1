package conformance

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
)

// Mismatch is a matcher that did not match; Path says where inside the reply.
type Mismatch struct {
	Path             string
	Expected, Actual any
	Why              string
}

func (m *Mismatch) Error() string {
	p := m.Path
	if p == "" {
		p = "(reply)"
	}
	return fmt.Sprintf("at %s: %s; expected %s, actual %s", p, m.Why, show(m.Expected), show(m.Actual))
}

var decimalRe = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

func typeOf(a any, stored bool) string {
	switch x := a.(type) {
	case nil:
		return "nil"
	case []any:
		return "array"
	case int64:
		return "integer"
	case string:
		if stored && decimalRe.MatchString(x) {
			return "integer"
		}
	}
	return "string"
}

func intOf(a any, stored bool) (int64, bool) {
	switch x := a.(type) {
	case int64:
		return x, true
	case string:
		if stored && decimalRe.MatchString(x) {
			v, err := strconv.ParseInt(x, 10, 64)
			return v, err == nil && v <= maxSafe && v >= -maxSafe
		}
	}
	return 0, false
}

// Match matches a reply (int64, string, nil, []any) against m, binding `$bind` names in scope.
// stored is true for values read from keys (strings only).
func Match(m, actual any, scope *Scope, path string, stored bool) error {
	switch x := m.(type) {
	case nil:
		if actual != nil {
			return &Mismatch{path, nil, actual, "mismatch"}
		}
		return nil
	case json.Number:
		want, _ := safeInt(x)
		if got, ok := intOf(actual, stored); !ok || got != want {
			why := "not this integer reply"
			if stored {
				why = "not this integer"
			}
			return &Mismatch{path, want, actual, why}
		}
		return nil
	case string:
		want, err := scope.Text(x)
		if err != nil {
			return err
		}
		if s, ok := actual.(string); !ok || s != want {
			why := "not a string reply"
			if ok {
				why = "different bytes"
			}
			return &Mismatch{path, want, actual, why}
		}
		return nil
	case []any:
		a, ok := actual.([]any)
		if !ok {
			return &Mismatch{path, m, actual, "not an array reply"}
		}
		if len(a) != len(x) {
			return &Mismatch{path, m, actual, fmt.Sprintf("array of %d, expected %d", len(a), len(x))}
		}
		for i := range x {
			if err := Match(x[i], a[i], scope, fmt.Sprintf("%s[%d]", path, i), stored); err != nil {
				return err
			}
		}
		return nil
	case *Obj:
		return matchObject(x, actual, scope, path, stored)
	}
	return &FormatError{Msg: "not a matcher: " + show(m)}
}

func matchObject(m *Obj, actual any, scope *Scope, path string, stored bool) error {
	if t, ok := m.Get("$type").(string); ok && typeOf(actual, stored) != t {
		return &Mismatch{path, m, actual, fmt.Sprintf("type %s, expected %s", typeOf(actual, stored), t)}
	}
	if src, ok := m.Get("$match").(string); ok {
		s, isStr := actual.(string)
		if !isStr {
			return &Mismatch{path, m, actual, "not a string"}
		}
		re, err := scope.Regex(src)
		if err != nil {
			return err
		}
		if !re.MatchString(s) {
			return &Mismatch{path, re.String(), actual, "does not match the regex"}
		}
	}
	if r, ok := m.Get("$int").([]any); ok {
		lo, _ := safeInt(r[0])
		hi, _ := safeInt(r[1])
		if v, ok := intOf(actual, stored); !ok || v < lo || v > hi {
			return &Mismatch{path, m, actual, fmt.Sprintf("not an integer in [%d, %d]", lo, hi)}
		}
	}
	if m.Has("$len") {
		n, _ := safeInt(m.Get("$len"))
		if a, ok := actual.([]any); !ok || int64(len(a)) != n {
			return &Mismatch{path, m, actual, fmt.Sprintf("not an array of length %d", n)}
		}
	}
	if p, ok := m.Get("$prefix").([]any); ok {
		a, isArr := actual.([]any)
		if !isArr || len(a) < len(p) {
			return &Mismatch{path, m, actual, fmt.Sprintf("not an array of at least %d elements", len(p))}
		}
		for i := range p {
			if err := Match(p[i], a[i], scope, fmt.Sprintf("%s[%d]", path, i), stored); err != nil {
				return err
			}
		}
	}
	if name, ok := m.Get("$bind").(string); ok {
		switch v := actual.(type) {
		case int64:
			return scope.Bind(name, strconv.FormatInt(v, 10))
		case string:
			return scope.Bind(name, v)
		default:
			return &Mismatch{path, m, actual, `"$bind" takes a string or an integer`}
		}
	}
	return nil
}

// matchUnordered matches a set: each member is matched by exactly one matcher.
func matchUnordered(ms []any, actual []string, scope *Scope, path string) error {
	if len(ms) != len(actual) {
		return &Mismatch{path, ms, actual, fmt.Sprintf("%d members, expected %d", len(actual), len(ms))}
	}
	used := make([]bool, len(actual))
	pick := make([]int, len(ms))
	fits := func(m any, a string) (bool, error) {
		err := Match(m, a, scope, path, true)
		if _, ok := err.(*Mismatch); ok {
			return false, nil
		}
		return err == nil, err
	}
	var assign func(i int) (bool, error)
	assign = func(i int) (bool, error) {
		if i == len(ms) {
			return true, nil
		}
		for j := range actual {
			if used[j] {
				continue
			}
			ok, err := fits(ms[i], actual[j])
			if err != nil {
				return false, err
			}
			if !ok {
				continue
			}
			used[j], pick[i] = true, j
			if done, err := assign(i + 1); done || err != nil {
				return done, err
			}
			used[j] = false
		}
		return false, nil
	}
	ok, err := assign(0)
	if err != nil {
		return err
	}
	if !ok {
		return &Mismatch{path, ms, actual, "no one-to-one match of the members"}
	}
	for i, m := range ms {
		if err := Match(m, actual[pick[i]], scope, path, true); err != nil {
			return err
		}
	}
	return nil
}
