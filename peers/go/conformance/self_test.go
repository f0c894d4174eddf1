package conformance

import (
	"strings"
	"testing"
)

// The runner's own tests: typos in a scenario are refused loudly.
func TestFormatRefusesTypos(t *testing.T) {
	has := func(n string) bool { return n == "enqueue" || n == "claim" }
	cases := map[string]string{
		`{"cal": "enqueue"}`:                                        "exactly one of",
		`{"call": "enqueue", "expct": [1]}`:                         `unknown key "expct"`,
		`{"call": "nope"}`:                                          "no script lua/nope.lua",
		`{"command": ["GET", "k"], "expect": {"$regex": "x"}}`:      `unknown key "$regex"`,
		`{"command": ["GET", "k"], "expect": true}`:                 "not a matcher",
		`{"command": ["GET", "k"], "expect": 1.5}`:                  "not a safe integer",
		`{"keys_state": {"@meta": {"type": "hash", "feilds": {}}}}`: `unknown key "feilds"`,
		`{"call": "claim", "error": "WRONGTYPE"}`:                   "must be an EMQ_<CODE>",
	}
	for step, want := range cases {
		v, err := parseJSON([]byte(step))
		if err != nil {
			t.Fatal(err)
		}
		err = checkStep(v, "step 0", has)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error containing %q", step, err, want)
		}
	}
}

func TestMatchIsStrictAboutTypes(t *testing.T) {
	s := NewScope()
	one, _ := parseJSON([]byte(`1`))
	if err := Match(one, "1", s, "", false); err == nil {
		t.Error("integer 1 matched the bulk string \"1\" in a reply")
	}
	if err := Match(one, "1", s, "", true); err != nil {
		t.Errorf("integer 1 did not match the stored string \"1\": %v", err)
	}
	m, _ := parseJSON([]byte(`{"$match": "^emq:\\{$Q\\}:"}`))
	if err := Match(m, "emq:{"+s.Q+"}:meta", s, "", false); err != nil {
		t.Errorf("a variable inside $match: %v", err)
	}
}
