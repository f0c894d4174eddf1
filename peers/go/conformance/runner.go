package conformance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	echomq "github.com/echomq/echomq-go"
	"github.com/redis/go-redis/v9"
)

// Loaded is one scenario of a file, validated, or the reason it is malformed.
type Loaded struct {
	Name     string
	Scenario *Obj
	Err      error
}

// File is one scenario file, or the reason it cannot be read.
type File struct {
	Name      string
	Scenarios []Loaded
	Err       error
}

// SelectedFiles are the file names chosen by ECHOMQ_CONFORMANCE (comma-separated names
// without .json; unset or empty = every file of dir).
func SelectedFiles(dir, env string) ([]string, error) {
	var wanted []string
	for _, w := range strings.Split(env, ",") {
		if w = strings.TrimSpace(w); w != "" {
			if !strings.HasSuffix(w, ".json") {
				w += ".json"
			}
			wanted = append(wanted, w)
		}
	}
	if len(wanted) > 0 {
		return wanted, nil
	}
	all, err := filepath.Glob(filepath.Join(dir, "*.json"))
	for i := range all {
		all[i] = filepath.Base(all[i])
	}
	slices.Sort(all)
	return all, err
}

// LoadFiles reads and validates the files; malformed ones carry their error.
func LoadFiles(dir string, files []string, scripts *echomq.Scripts) []File {
	out := make([]File, 0, len(files))
	for _, name := range files {
		f := File{Name: name}
		b, err := os.ReadFile(filepath.Join(dir, name))
		var v any
		if err == nil {
			v, err = parseJSON(b)
		}
		var raw []any
		if err == nil {
			raw, err = checkFile(v, name)
		}
		if err != nil {
			f.Err = fmt.Errorf("%s: %w", name, err)
			out = append(out, f)
			continue
		}
		seen := map[string]bool{}
		for i, s := range raw {
			n := fmt.Sprintf("#%d", i)
			if o, ok := s.(*Obj); ok {
				if str, ok := o.Get("name").(string); ok {
					n = str
				}
			}
			if seen[n] {
				n = fmt.Sprintf("%s (#%d)", n, i)
			}
			seen[n] = true
			sc, err := checkScenario(s, fmt.Sprintf("scenario %d %q", i, n), scripts.Has)
			f.Scenarios = append(f.Scenarios, Loaded{Name: n, Scenario: sc, Err: err})
		}
		out = append(out, f)
	}
	return out
}

// Runner runs scenarios against one connection (RESP2, as the README's replies assume).
type Runner struct {
	RDB     *redis.Client
	Scripts *echomq.Scripts
}

type runCtx struct {
	scope     *Scope
	snapshots map[string]Snapshot
	withNodes bool
}

// stepErr carries the index of the failing step.
type stepErr struct {
	where string
	err   error
}

func (e *stepErr) Error() string { return e.err.Error() }

// Run runs one scenario; the error names the file, scenario and step.
func (r *Runner) Run(ctx context.Context, file string, sc *Obj) error {
	rc := &runCtx{scope: NewScope(), snapshots: map[string]Snapshot{}, withNodes: mentionsNodeKeys(sc.Get("steps"))}
	err := r.steps(ctx, sc.Get("steps").([]any), rc, "")
	if err == nil {
		return nil
	}
	where := "?"
	var se *stepErr
	if errors.As(err, &se) {
		where = se.where
	}
	return fmt.Errorf("%s › %q › step %s: %v\n  ($Q=%s, $T=%s, $NS=%s)", file, sc.Get("name"), where, err, rc.scope.Q, rc.scope.T, rc.scope.NS)
}

func (r *Runner) steps(ctx context.Context, steps []any, rc *runCtx, prefix string) error {
	for i, st := range steps {
		s := st.(*Obj)
		if err := r.step(ctx, s, rc, fmt.Sprintf("%s%d", prefix, i)); err != nil {
			var se *stepErr
			if errors.As(err, &se) {
				return err
			}
			return &stepErr{where: fmt.Sprintf("%s%d %s", prefix, i, describe(s)), err: err}
		}
	}
	return nil
}

func describe(s *Obj) string {
	switch k := stepKind(s); k {
	case "call":
		return "(call " + s.Get("call").(string) + ")"
	case "command":
		return fmt.Sprintf("(command %v)", s.Get("command").([]any)[0])
	default:
		return "(" + k + ")"
	}
}

func (r *Runner) step(ctx context.Context, s *Obj, rc *runCtx, where string) error {
	switch stepKind(s) {
	case "repeat":
		n, _ := safeInt(s.Get("repeat"))
		for k := int64(1); k <= n; k++ {
			if err := r.steps(ctx, s.Get("steps").([]any), rc, fmt.Sprintf("%s.(iteration %d).", where, k)); err != nil {
				return err
			}
		}
		return nil
	case "sleep":
		n, _ := safeInt(s.Get("sleep"))
		time.Sleep(time.Duration(n) * time.Millisecond)
		return nil
	case "keys_state":
		ks := s.Get("keys_state").(*Obj)
		for _, ref := range ks.Keys {
			key, err := rc.scope.Text(ref)
			if err != nil {
				return err
			}
			if err := checkState(ctx, r.RDB, key, ks.Get(ref).(*Obj), rc.scope); err != nil {
				return err
			}
		}
		return nil
	case "snapshot":
		snap, err := takeSnapshot(ctx, r.RDB, rc.scope, rc.withNodes)
		rc.snapshots[s.Get("snapshot").(string)] = snap
		return err
	case "unchanged":
		name := s.Get("unchanged").(string)
		before, ok := rc.snapshots[name]
		if !ok {
			return &FormatError{Msg: fmt.Sprintf("no snapshot %q was taken before this step", name)}
		}
		after, err := takeSnapshot(ctx, r.RDB, rc.scope, rc.withNodes)
		if err != nil {
			return err
		}
		if d := diffSnapshots(before, after); d != "" {
			return fmt.Errorf("keys changed since snapshot %q:\n%s", name, d)
		}
		return nil
	default:
		return r.send(ctx, s, rc.scope)
	}
}
