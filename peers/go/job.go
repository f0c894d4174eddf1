package echomq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// maxErrorText is the error text a settle call carries at most (the script accepts 64 KiB).
const maxErrorText = 8192

// run executes one claimed job: extends its lease while the handler runs, then completes it or
// retries it. Settling is retried on failure until the lease would have expired anyway.
func (w *Worker) run(c Claimed) {
	defer w.wg.Done()
	defer func() { <-w.slots }()
	hctx, lost := context.WithCancel(context.Background())
	defer lost()
	if t := jobTimeout(c.Extras); t > 0 {
		// The job's own timeout (its extras' "t"): the handler's context ends after it.
		var stopTimer context.CancelFunc
		hctx, stopTimer = context.WithTimeout(hctx, t)
		defer stopTimer()
	}
	stop := make(chan struct{})
	var cancelled atomic.Bool
	go w.extend(hctx, c, lost, &cancelled, stop)
	job := Job{Queue: w.q.Name, ID: c.ID, Payload: c.Payload, Attempt: c.Attempt, Token: c.Token, Name: jobName(c.Extras), Flow: c.Flow}
	var result string
	var herr error
	if IsReleasedParent(c.Flow) {
		// A released flow parent: its children's outcomes are its row's r:<child> fields.
		job.ChildResults, herr = w.childResults(hctx, c.ID)
	}
	if herr == nil {
		result, herr = w.safe(hctx, job)
	}
	close(stop)
	timedOut := errors.Is(hctx.Err(), context.DeadlineExceeded)
	if hctx.Err() != nil && !cancelled.Load() && !timedOut {
		return // the lease was lost: a settle would be refused by the fence anyway
	}
	if timedOut && herr == nil {
		herr = errors.New("the handler ran past its timeout") // the attempt fails
	}
	if cancelled.Load() && herr == nil {
		// A cancel was requested while it ran: the attempt ends through retry.lua (→ cancelled).
		herr = errors.New("cancel requested")
	}
	settle := func(ctx context.Context) error {
		if herr == nil {
			_, err := w.q.Complete(ctx, w.o.KeepDone, []Done{{ID: c.ID, Token: c.Token, Result: result, Child: IsChild(c.Flow)}})
			return err
		}
		var fe *FatalError
		text := "Error: " + herr.Error()
		if len(text) > maxErrorText {
			text = text[:maxErrorText]
		}
		_, err := w.q.Retry(ctx, Held{ID: c.ID, Token: c.Token, Child: IsChild(c.Flow)}, text, errors.As(herr, &fe), w.o.MaxAttempts, w.o.Backoff, w.o.DeadCap)
		return err
	}
	until := time.Now().Add(time.Duration(w.o.LeaseMs) * time.Millisecond)
	for pause := 100 * time.Millisecond; ; pause = min(pause*2, 5*time.Second) {
		err := settle(context.Background())
		if err == nil || ErrorCode(err) != "" || time.Now().After(until) {
			w.report(err) // a refusal (EMQ_…) is not retried: it would be refused again
			return
		}
		w.report(fmt.Errorf("settle %s: %w", c.ID, err))
		time.Sleep(pause)
	}
}

// childResults reads a released parent's children from its row (peek.lua), retrying a failed
// read for a while; a read that keeps failing fails the attempt.
func (w *Worker) childResults(ctx context.Context, id string) ([]ChildResult, error) {
	pause := 100 * time.Millisecond
	for i := 0; ; i++ {
		row, err := w.q.Peek(ctx, id)
		if err == nil {
			return ChildResults(row), nil
		}
		if i == 4 || ErrorCode(err) != "" || ctx.Err() != nil {
			return nil, fmt.Errorf("reading the children's results: %w", err)
		}
		w.report(fmt.Errorf("peek %s: %w", id, err))
		sleepCtx(ctx, pause)
		pause *= 2
	}
}

// safe runs the handler, turning a panic into an error.
func (w *Worker) safe(ctx context.Context, job Job) (res string, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return w.h(ctx, job)
}

// extend renews the job's lease every lease/3; a refused extension (lease lost) cancels ctx, and
// so does a requested cancel (extend answers 2), which also sets cancelled: the lease is then no
// longer renewed, so a handler that ignores ctx is reaped (→ cancelled) when it expires.
func (w *Worker) extend(ctx context.Context, c Claimed, lost context.CancelFunc, cancelled *atomic.Bool, stop <-chan struct{}) {
	t := time.NewTicker(time.Duration(w.o.LeaseMs) * time.Millisecond / 3)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			ok, err := w.q.Extend(ctx, w.o.LeaseMs, []Held{{ID: c.ID, Token: c.Token}})
			if err != nil {
				w.report(fmt.Errorf("extend %s: %w", c.ID, err))
				continue
			}
			switch ok[0] {
			case LeaseLost:
				lost()
				return
			case CancelRequested:
				cancelled.Store(true)
				lost()
				return
			}
		}
	}
}

// jobTimeout is a claimed job's own timeout from its extras ("t", ms), or 0 for none.
func jobTimeout(extras string) time.Duration {
	if extras == "" {
		return 0
	}
	var x struct {
		T int64 `json:"t"`
	}
	if json.Unmarshal([]byte(extras), &x) != nil || x.T <= 0 {
		return 0
	}
	return time.Duration(x.T) * time.Millisecond
}

// jobName is a claimed job's name from its extras ("n"), or "" for none.
func jobName(extras string) string {
	if extras == "" {
		return ""
	}
	var x struct {
		N string `json:"n"`
	}
	if json.Unmarshal([]byte(extras), &x) != nil {
		return ""
	}
	return x.N
}
