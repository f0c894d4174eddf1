// Command echomq-worker consumes one queue with the Go consumer loop and a trivial handler: it
// answers {"by":"go","attempt":n,"payload":<the payload>}. A payload with "failOnce": true fails
// its first attempt (so it is retried after its backoff). Each handler run is printed as one line
// `ran <id> <attempt> ok|failed` on stdout. SIGINT/SIGTERM stop it gracefully.
//
//	echomq-worker -url redis://127.0.0.1:6379 -queue orders [-concurrency 8] [-lua ../../lua]
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	echomq "github.com/echomq/echomq-go"
	"github.com/echomq/echomq-go/internal/cli"
)

func main() {
	var c cli.Common
	c.Register()
	conc := flag.Int("concurrency", 8, "jobs run at once")
	lease := flag.Int64("lease", 30000, "lease ms")
	backoff := flag.String("backoff", "f:50", "default backoff (f:<ms> or e:<ms>)")
	attempts := flag.Int("attempts", 3, "default max attempts")
	keepDone := flag.Int("keep-done", 1000, "done rows kept (-1 = none)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	rdb, _, q, err := c.Open(ctx, "worker")
	if err != nil {
		cli.Fail(err)
	}
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	say := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, format+"\n", args...)
		out.Flush()
	}
	handler := func(_ context.Context, j echomq.Job) (string, error) {
		var p map[string]any
		_ = json.Unmarshal([]byte(j.Payload), &p)
		if fail, _ := p["failOnce"].(bool); fail && j.Attempt == 1 {
			say("ran %s %d failed", j.ID, j.Attempt)
			return "", errors.New("failing the first attempt on purpose")
		}
		res, _ := json.Marshal(map[string]any{"by": "go", "attempt": j.Attempt, "payload": json.RawMessage(j.Payload)})
		say("ran %s %d ok", j.ID, j.Attempt)
		return string(res), nil
	}
	w := echomq.NewWorker(rdb, q, handler, echomq.WorkerOptions{
		Concurrency: *conc, LeaseMs: *lease, Backoff: *backoff, MaxAttempts: *attempts, KeepDone: *keepDone,
		OnError: func(err error) { fmt.Fprintln(os.Stderr, "echomq-worker:", err) },
	})
	say("ready %s", q.Name)
	if err := w.Run(ctx); err != nil {
		cli.Fail(err)
	}
	_ = rdb.Close()
}
