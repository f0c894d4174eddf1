// Package conformance runs the language-neutral scenario files of conformance/scenarios/
// (format: conformance/README.md) against a real Valkey through the Go peer's script registry
// (EVALSHA, EVAL on NOSCRIPT) and raw commands: the same semantics as the TypeScript runner
// (test/conformance/runner.ts). Run with `go test ./conformance/` from peers/go.
package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// Obj is a JSON object that keeps its keys in file order (ids are minted in order of first use,
// so the order of a scenario's strings matters).
type Obj struct {
	Keys []string
	Vals map[string]any
}

// Has reports whether the object has key k.
func (o *Obj) Has(k string) bool { _, ok := o.Vals[k]; return ok }

// Get returns the value of key k (nil when absent).
func (o *Obj) Get(k string) any { return o.Vals[k] }

// parseJSON decodes JSON into nil, bool, string, json.Number, []any and *Obj.
func parseJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	t, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch d := t.(type) {
	case json.Delim:
		if d == '[' {
			arr := []any{}
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			_, err := dec.Token()
			return arr, err
		}
		o := &Obj{Vals: map[string]any{}}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k := kt.(string)
			if o.Has(k) {
				return nil, fmt.Errorf("duplicate key %q", k)
			}
			v, err := decodeValue(dec)
			if err != nil {
				return nil, err
			}
			o.Keys = append(o.Keys, k)
			o.Vals[k] = v
		}
		_, err := dec.Token()
		return o, err
	default:
		return t, nil
	}
}
