package conformance

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

func strs(v any) []string {
	a, _ := v.([]any)
	out := make([]string, len(a))
	for i, x := range a {
		out[i], _ = x.(string)
	}
	return out
}

// score is a zset score as a reply: an integer when it is one, else its text.
func score(s string) any {
	if decimalRe.MatchString(s) {
		if v, err := strconv.ParseInt(s, 10, 64); err == nil && v <= maxSafe && v >= -maxSafe {
			return v
		}
	}
	return s
}

func do(ctx context.Context, rdb *redis.Client, args ...any) (any, error) {
	v, err := rdb.Do(ctx, args...).Result()
	if err == redis.Nil {
		return nil, nil
	}
	return v, err
}

// checkState checks that key is in state s.
func checkState(ctx context.Context, rdb *redis.Client, key string, s *Obj, scope *Scope) error {
	t, err := rdb.Type(ctx, key).Result()
	if err != nil {
		return err
	}
	want := s.Get("type").(string)
	if t != want {
		return &Mismatch{key, want, t, "wrong key type"}
	}
	if t == "none" {
		return nil
	}
	if r, ok := s.Get("ttl").([]any); ok {
		lo, _ := safeInt(r[0])
		hi, _ := safeInt(r[1])
		ttl, err := rdb.Do(ctx, "PTTL", key).Int64()
		if err != nil {
			return err
		}
		if ttl < lo || ttl > hi {
			return &Mismatch{key + " (PTTL)", r, ttl, "PTTL out of range"}
		}
	}
	n := s.Get("len")
	if n == nil {
		n = s.Get("length")
	}
	if n != nil {
		want, _ := safeInt(n)
		cmd := map[string]string{"list": "LLEN", "set": "SCARD", "zset": "ZCARD", "hash": "HLEN", "stream": "XLEN"}[t]
		got, err := rdb.Do(ctx, cmd, key).Int64()
		if err != nil {
			return err
		}
		if got != want {
			return &Mismatch{key + " (size)", want, got, "wrong number of elements"}
		}
	}
	switch t {
	case "string":
		if s.Has("value") {
			v, err := do(ctx, rdb, "GET", key)
			if err != nil {
				return err
			}
			return Match(s.Get("value"), v, scope, key, true)
		}
	case "list":
		if s.Has("value") {
			v, err := do(ctx, rdb, "LRANGE", key, 0, -1)
			if err != nil {
				return err
			}
			return Match(s.Get("value"), v, scope, key, true)
		}
	case "set":
		if ms, ok := s.Get("members").([]any); ok {
			v, err := do(ctx, rdb, "SMEMBERS", key)
			if err != nil {
				return err
			}
			return matchUnordered(ms, strs(v), scope, key)
		}
	case "zset":
		return checkZset(ctx, rdb, key, s, scope)
	case "hash":
		return checkHash(ctx, rdb, key, s, scope)
	}
	return nil
}

func checkZset(ctx context.Context, rdb *redis.Client, key string, s *Obj, scope *Scope) error {
	if !s.Has("members") && !s.Has("scored") {
		return nil
	}
	v, err := do(ctx, rdb, "ZRANGE", key, 0, -1, "WITHSCORES")
	if err != nil {
		return err
	}
	flat := strs(v)
	var members, scored []any
	for i := 0; i+1 < len(flat); i += 2 {
		members = append(members, flat[i])
		scored = append(scored, []any{flat[i], score(flat[i+1])})
	}
	if members == nil {
		members, scored = []any{}, []any{}
	}
	if s.Has("members") {
		return Match(s.Get("members"), members, scope, key, true)
	}
	return Match(s.Get("scored"), scored, scope, key, true)
}

func checkHash(ctx context.Context, rdb *redis.Client, key string, s *Obj, scope *Scope) error {
	want, _ := s.Get("fields").(*Obj)
	exact := false
	if want == nil {
		want, _ = s.Get("exact").(*Obj)
		exact = true
	}
	if want == nil {
		return nil
	}
	v, err := do(ctx, rdb, "HGETALL", key)
	if err != nil {
		return err
	}
	flat := strs(v)
	got := map[string]string{}
	for i := 0; i+1 < len(flat); i += 2 {
		got[flat[i]] = flat[i+1]
	}
	named := map[string]bool{}
	for _, f := range want.Keys {
		field, err := scope.Text(f)
		if err != nil {
			return err
		}
		named[field] = true
		m := want.Get(f)
		val, present := got[field]
		if m == nil {
			if present {
				return &Mismatch{key + "." + field, nil, val, "field present, expected absent"}
			}
			continue
		}
		if !present {
			return &Mismatch{key + "." + field, m, nil, "field absent"}
		}
		if err := Match(m, val, scope, key+"."+field, true); err != nil {
			return err
		}
	}
	if exact {
		var extra []string
		for f := range got {
			if !named[f] {
				extra = append(extra, f)
			}
		}
		if len(extra) > 0 {
			return &Mismatch{key, want.Keys, flat, fmt.Sprintf("unexpected fields %v", extra)}
		}
	}
	return nil
}
