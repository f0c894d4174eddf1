package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Snapshot maps each key to the canonical JSON of {type, expireAt, content}.
type Snapshot map[string]string

func scanAll(ctx context.Context, rdb *redis.Client, pattern string) ([]string, error) {
	var out []string
	iter := rdb.Scan(ctx, 0, pattern, 1000).Iterator()
	for iter.Next(ctx) {
		out = append(out, iter.Val())
	}
	return out, iter.Err()
}

func content(ctx context.Context, rdb *redis.Client, key, t string) (any, error) {
	switch t {
	case "string":
		return do(ctx, rdb, "GET", key)
	case "list":
		return do(ctx, rdb, "LRANGE", key, 0, -1)
	case "set":
		v, err := do(ctx, rdb, "SMEMBERS", key)
		m := strs(v)
		slices.Sort(m)
		return m, err
	case "zset":
		return do(ctx, rdb, "ZRANGE", key, 0, -1, "WITHSCORES")
	case "hash":
		v, err := do(ctx, rdb, "HGETALL", key)
		flat := strs(v)
		var pairs [][]string
		for i := 0; i+1 < len(flat); i += 2 {
			pairs = append(pairs, []string{flat[i], flat[i+1]})
		}
		slices.SortFunc(pairs, func(a, b []string) int { return strings.Compare(a[0], b[0]) })
		return pairs, err
	case "stream":
		entries, err := do(ctx, rdb, "XRANGE", key, "-", "+")
		if err != nil {
			return nil, err
		}
		gs, err := do(ctx, rdb, "XINFO", "GROUPS", key)
		if err != nil {
			return nil, err
		}
		var groups [][]any
		for _, g := range gs.([]any) {
			kv, _ := g.([]any)
			m := map[string]any{}
			for i := 0; i+1 < len(kv); i += 2 {
				m[fmt.Sprint(kv[i])] = kv[i+1]
			}
			groups = append(groups, []any{m["name"], m["consumers"], m["pending"], m["last-delivered-id"]})
		}
		return map[string]any{"entries": entries, "groups": groups}, nil
	}
	return nil, nil
}

// takeSnapshot records every key of the scenario (and the node-lease keys when withNodes).
func takeSnapshot(ctx context.Context, rdb *redis.Client, scope *Scope, withNodes bool) (Snapshot, error) {
	keys := map[string]bool{}
	patterns := []string{"emq:{" + scope.Q + "}:*", "emq:{" + scope.T + "}:*", "emq:{" + scope.NS + "}:*", "emq:{c:" + scope.NS + ":*"}
	for _, p := range patterns {
		ks, err := scanAll(ctx, rdb, p)
		if err != nil {
			return nil, err
		}
		for _, k := range ks {
			keys[k] = true
		}
	}
	if withNodes {
		for _, k := range nodeKeys {
			keys[k] = true
		}
	}
	snap := Snapshot{}
	for k := range keys {
		t, err := rdb.Type(ctx, k).Result()
		if err != nil {
			return nil, err
		}
		if t == "none" {
			continue
		}
		exp, err := do(ctx, rdb, "PEXPIRETIME", k)
		if err != nil {
			return nil, err
		}
		c, err := content(ctx, rdb, k, t)
		if err != nil {
			return nil, err
		}
		b, _ := json.Marshal(map[string]any{"type": t, "expireAt": exp, "content": c})
		snap[k] = string(b)
	}
	return snap, nil
}

// diffSnapshots lists the keys created, deleted or changed ("" when equal).
func diffSnapshots(before, after Snapshot) string {
	var lines []string
	for _, k := range sortedKeys(before) {
		now, ok := after[k]
		switch {
		case !ok:
			lines = append(lines, fmt.Sprintf("  deleted %s (was %s)", k, clip(before[k])))
		case now != before[k]:
			lines = append(lines, fmt.Sprintf("  changed %s: before %s, after %s", k, clip(before[k]), clip(now)))
		}
	}
	for _, k := range sortedKeys(after) {
		if _, ok := before[k]; !ok {
			lines = append(lines, fmt.Sprintf("  created %s: %s", k, clip(after[k])))
		}
	}
	return strings.Join(lines, "\n")
}

func sortedKeys(s Snapshot) []string {
	ks := make([]string, 0, len(s))
	for k := range s {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func clip(s string) string {
	if len(s) > 400 {
		return fmt.Sprintf("%s… (%d chars)", s[:400], len(s))
	}
	return s
}
