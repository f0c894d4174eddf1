package conformance

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

func (r *Runner) args(list any, scope *Scope) ([]string, error) {
	a, _ := list.([]any)
	out := make([]string, 0, len(a))
	for _, x := range a {
		if s, ok := x.(string); ok {
			v, err := scope.Text(s)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
			continue
		}
		n, _ := safeInt(x)
		out = append(out, fmt.Sprint(n))
	}
	return out, nil
}

func anys(s []string) []any {
	out := make([]any, len(s))
	for i, x := range s {
		out[i] = x
	}
	return out
}

// send runs a call or command step and matches its reply or error.
func (r *Runner) send(ctx context.Context, s *Obj, scope *Scope) error {
	var reply any
	var err error
	var sent string
	if name, ok := s.Get("call").(string); ok {
		keys, e1 := r.args(s.Get("keys"), scope)
		argv, e2 := r.args(s.Get("argv"), scope)
		if err := errors.Join(e1, e2); err != nil {
			return err
		}
		sent = fmt.Sprintf("%s(keys %s, argv %s)", name, show(keys), show(argv))
		sc := r.Scripts.Get(name)
		reply, err = r.RDB.EvalSha(ctx, sc.SHA, keys, anys(argv)...).Result()
		if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
			reply, err = r.RDB.Eval(ctx, sc.Src, keys, anys(argv)...).Result()
		}
	} else {
		cmd, e := r.args(s.Get("command"), scope)
		if e != nil {
			return e
		}
		sent = show(cmd)
		reply, err = r.RDB.Do(ctx, anys(cmd)...).Result()
	}
	if errors.Is(err, redis.Nil) {
		reply, err = nil, nil
	}
	want, wantErr := s.Get("error").(string)
	if err != nil {
		var re redis.Error
		if !errors.As(err, &re) {
			return err // a connection failure, not a reply
		}
		text := re.Error()
		if wantErr && (text == want || strings.HasPrefix(text, want+" ")) {
			return nil
		}
		exp := "a reply"
		if wantErr {
			exp = "error " + want
		} else if s.Has("expect") {
			exp = show(s.Get("expect"))
		}
		return fmt.Errorf("sent %s\n  expected %s, actual error reply %s", sent, exp, show(text))
	}
	if wantErr {
		return fmt.Errorf("sent %s\n  expected error %s, actual reply %s", sent, want, show(reply))
	}
	if !s.Has("expect") {
		return nil
	}
	if err := Match(s.Get("expect"), reply, scope, "", false); err != nil {
		var mm *Mismatch
		if errors.As(err, &mm) {
			return fmt.Errorf("sent %s\n  %v\n  whole reply: %s", sent, mm, show(reply))
		}
		return err
	}
	return nil
}
