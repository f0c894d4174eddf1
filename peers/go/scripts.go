// Package echomq is a Go peer of the EchoMQ wire (docs/protocol.md in the repository): it sends
// the bytes of the lua/ scripts as they are (EVALSHA, EVAL on NOSCRIPT), mints branded ids on a
// leased node number, and runs the consumer loop (claim -> work -> complete, or retry).
package echomq

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ProtocolVersion is the wire version every script checks in ARGV[1].
const ProtocolVersion = "2"

// Script is one lua/ file: its exact bytes and their SHA1.
type Script struct {
	Name string
	Src  string
	SHA  string
}

// Scripts is the registry of the protocol's scripts, loaded from a directory of *.lua files.
type Scripts struct {
	byName map[string]*Script
}

// LoadScripts reads every *.lua file of dir (the repository's lua/ folder).
func LoadScripts(dir string) (*Scripts, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.lua"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("echomq: no *.lua scripts in %s", dir)
	}
	s := &Scripts{byName: map[string]*Script{}}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		sum := sha1.Sum(b)
		name := strings.TrimSuffix(filepath.Base(f), ".lua")
		s.byName[name] = &Script{Name: name, Src: string(b), SHA: hex.EncodeToString(sum[:])}
	}
	return s, nil
}

// Has reports whether a script of that name was loaded.
func (s *Scripts) Has(name string) bool { _, ok := s.byName[name]; return ok }

// Get returns one script, or nil.
func (s *Scripts) Get(name string) *Script { return s.byName[name] }

// Run calls a script by EVALSHA and, when the server answers NOSCRIPT (restart, failover,
// SCRIPT FLUSH), sends the same bytes with EVAL. A NOSCRIPT reply means the script did not run,
// so nothing runs twice. A top-level nil reply is returned as (nil, nil); an error reply is
// returned as an *Error when it carries an EMQ_ code.
func (s *Scripts) Run(ctx context.Context, rdb redis.Scripter, name string, keys []string, args ...any) (any, error) {
	sc := s.byName[name]
	if sc == nil {
		return nil, fmt.Errorf("echomq: no script %q", name)
	}
	v, err := rdb.EvalSha(ctx, sc.SHA, keys, args...).Result()
	if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		v, err = rdb.Eval(ctx, sc.Src, keys, args...).Result()
	}
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, wrapError(err)
	}
	return v, nil
}
