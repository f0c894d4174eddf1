package conformance

import (
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	echomq "github.com/echomq/echomq-go"
)

var (
	tokenRe   = regexp.MustCompile(`\$(\$|[A-Za-z_][A-Za-z0-9_]*)`)
	mintedRe  = regexp.MustCompile(`^(job|evt|ver)_[A-Za-z0-9_]+$`)
	queueKeys = []string{"meta", "pending", "scheduled", "active", "done", "dead", "cancelled", "wake", "data", "opts", "events", "outbox", "outdue", "schedules", "ticks"}
	busKeys   = []string{"bus:meta", "bus:log", "bus:dead", "bus:archive", "bus:signal"}
	cacheKeys = []string{"cache:log", "cache:signal"}
	// nodeKeys are the cluster-wide node-lease keys (docs/protocol.md §1).
	nodeKeys = map[string]string{"node-seq": echomq.NodeSeqKey, "nodes": echomq.NodesKey, "procs": echomq.ProcsKey}
)

// One minter for the run, on node 0 (README: minted ids use node 0 and the runner's clock).
var (
	mintMu sync.Mutex
	minter = func() *echomq.Minter { m := echomq.NewMinter(); m.SetNode(0, time.Now().Add(24*time.Hour)); return m }()
)

func fresh(prefix string) string {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// Scope is one scenario's names and variables.
type Scope struct {
	Q, T, NS string
	vars     map[string]string
}

// NewScope picks fresh names for $Q, $T and $NS.
func NewScope() *Scope {
	s := &Scope{Q: fresh("cq"), T: fresh("ct"), NS: fresh("cn"), vars: map[string]string{}}
	s.vars["Q"], s.vars["T"], s.vars["NS"] = s.Q, s.T, s.NS
	return s
}

// Bind sets $name (README "$bind").
func (s *Scope) Bind(name, value string) error {
	if name == "Q" || name == "T" || name == "NS" || mintedRe.MatchString(name) {
		return &FormatError{Msg: `"$bind": "` + name + `" would shadow a runner variable`}
	}
	s.vars[name] = value
	return nil
}

func (s *Scope) value(name string) (string, error) {
	if v, ok := s.vars[name]; ok {
		return v, nil
	}
	if mintedRe.MatchString(name) {
		mintMu.Lock()
		id, err := minter.Mint(name[:3])
		mintMu.Unlock()
		if err != nil {
			return "", err
		}
		s.vars[name] = id
		return id, nil
	}
	return "", &FormatError{Msg: "unknown variable $" + name + " (not bound by an earlier \"$bind\", not a minted $job_/$evt_/$ver_ name)"}
}

// subst replaces variables, passing each value through escape.
func (s *Scope) subst(str string, escape func(string) string) (string, error) {
	var firstErr error
	out := tokenRe.ReplaceAllStringFunc(str, func(tok string) string {
		name := tok[1:]
		if name == "$" {
			return "$"
		}
		v, err := s.value(name)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		return escape(v)
	})
	return out, firstErr
}

func same(v string) string { return v }

// Text rewrites one string: a key reference, `@@…`, or text with variables.
func (s *Scope) Text(str string) (string, error) {
	if strings.HasPrefix(str, "@@") {
		return s.subst(str[1:], same)
	}
	if strings.HasPrefix(str, "@") {
		return s.key(str[1:])
	}
	return s.subst(str, same)
}

// Regex compiles a `$match` regex with its variables substituted as literal text.
func (s *Scope) Regex(str string) (*regexp.Regexp, error) {
	src, err := s.subst(str, regexp.QuoteMeta)
	if err != nil {
		return nil, err
	}
	return regexp.Compile(src)
}

func (s *Scope) key(ref string) (string, error) {
	q, t, ns := "emq:{"+s.Q+"}:", "emq:{"+s.T+"}:", "emq:{"+s.NS+"}:"
	rest := func(prefix string) (string, error) { return s.subst(strings.TrimPrefix(ref, prefix), same) }
	var tail string
	var err error
	switch {
	case slices.Contains(queueKeys, ref):
		return q + ref, nil
	case strings.HasPrefix(ref, "job:"):
		tail, err = rest("job:")
		return q + "job:" + tail, err
	case slices.Contains(busKeys, ref):
		return t + ref, nil
	case strings.HasPrefix(ref, "bus:seg:"):
		tail, err = rest("bus:seg:")
		return t + "bus:seg:" + tail, err
	case slices.Contains(cacheKeys, ref):
		return ns + ref, nil
	case strings.HasPrefix(ref, "cache:tag:"):
		tail, err = rest("cache:tag:")
		return ns + "cache:tag:" + tail, err
	case strings.HasPrefix(ref, "cache:mark:"):
		tail, err = rest("cache:mark:")
		return ns + "cache:mark:" + tail, err
	case strings.HasPrefix(ref, "cache:entry:"):
		tail, err = rest("cache:entry:")
		return "emq:{c:" + s.NS + ":" + tail + "}:entry", err
	case strings.HasPrefix(ref, "cache:lease:"):
		tail, err = rest("cache:lease:")
		return "emq:{c:" + s.NS + ":" + tail + "}:lease", err
	}
	if k, ok := nodeKeys[ref]; ok {
		return k, nil
	}
	return "", &FormatError{Msg: "unknown key reference @" + ref + " (write @@… for a literal string starting with @)"}
}

// mentionsNodeKeys is true when any string of v is a node-lease key reference.
func mentionsNodeKeys(v any) bool {
	switch x := v.(type) {
	case string:
		for k := range nodeKeys {
			if x == "@"+k {
				return true
			}
		}
	case []any:
		return slices.ContainsFunc(x, mentionsNodeKeys)
	case *Obj:
		for _, k := range x.Keys {
			if mentionsNodeKeys(k) || mentionsNodeKeys(x.Vals[k]) {
				return true
			}
		}
	}
	return false
}
