// Command echomq-worker consumes one queue with the Go consumer loop and a trivial handler: it
// answers {"by":"go","attempt":n,"payload":<the payload>}, plus "flow" and "children" (each
// child's key, queue, outcome and result or error) for a released flow parent. A payload with
// "failOnce": true fails its first attempt (so it is retried after its backoff); one with
// "fatal": true fails fatally (buried at once). Each handler run is printed as one line
// `ran <id> <attempt> ok|failed` on stdout; with -events, each run is also bracketed by
// `start <id> <g>` and `end <id> <g>` lines (g: the payload's "g", or "-"), printed in the
// order the handlers start and end. -sleep-ms makes each run last that long. -relay q1,q2 runs a
// flow relay on those queues' outboxes (docs/protocol.md §10). SIGINT/SIGTERM stop it
// gracefully.
//
//	echomq-worker -url redis://127.0.0.1:6379 -queue orders [-concurrency 8] [-lua ../../lua] [-relay orders,other]
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
	"strings"
	"sync"
	"syscall"
	"time"

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
	relayQueues := flag.String("relay", "", "comma-separated queues whose flow outboxes this process relays (\"\" = none)")
	events := flag.Bool("events", false, "print start/end lines around each handler run")
	sleepMs := flag.Int("sleep-ms", 0, "how long each handler run lasts (ms)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	rdb, scripts, q, err := c.Open(ctx, "worker")
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
	handler := func(ctx context.Context, j echomq.Job) (string, error) {
		var p map[string]any
		_ = json.Unmarshal([]byte(j.Payload), &p)
		if *events {
			g, _ := p["g"].(string)
			if g == "" {
				g = "-"
			}
			say("start %s %s", j.ID, g)
			defer say("end %s %s", j.ID, g)
		}
		if *sleepMs > 0 {
			select {
			case <-time.After(time.Duration(*sleepMs) * time.Millisecond):
			case <-ctx.Done():
			}
		}
		if fail, _ := p["failOnce"].(bool); fail && j.Attempt == 1 {
			say("ran %s %d failed", j.ID, j.Attempt)
			return "", errors.New("failing the first attempt on purpose")
		}
		if fatal, _ := p["fatal"].(bool); fatal {
			say("ran %s %d failed", j.ID, j.Attempt)
			return "", echomq.Fatal(errors.New("fatal on purpose"))
		}
		out := map[string]any{"by": "go", "attempt": j.Attempt, "payload": json.RawMessage(j.Payload)}
		if j.Flow != "" {
			out["flow"] = j.Flow
		}
		if echomq.IsReleasedParent(j.Flow) {
			kids := []map[string]any{}
			for _, k := range j.ChildResults {
				kid := map[string]any{"id": k.ID, "key": k.Key, "queue": k.Queue, "outcome": k.Outcome}
				switch {
				case k.Outcome == "done" && json.Valid([]byte(k.Text)):
					kid["result"] = json.RawMessage(k.Text)
				case k.Outcome == "done":
					kid["result"] = k.Text
				default:
					kid["error"] = k.Text
				}
				kids = append(kids, kid)
			}
			out["children"] = kids
		}
		res, _ := json.Marshal(out)
		say("ran %s %d ok", j.ID, j.Attempt)
		return string(res), nil
	}
	var relayed sync.WaitGroup
	if *relayQueues != "" {
		relay, err := echomq.NewRelay(rdb, scripts, strings.Split(*relayQueues, ","), echomq.RelayOptions{
			OnError: func(err error) { fmt.Fprintln(os.Stderr, "echomq-worker relay:", err) },
		})
		if err != nil {
			cli.Fail(err)
		}
		relayed.Add(1)
		go func() { defer relayed.Done(); _ = relay.Run(ctx) }()
	}
	w := echomq.NewWorker(rdb, q, handler, echomq.WorkerOptions{
		Concurrency: *conc, LeaseMs: *lease, Backoff: *backoff, MaxAttempts: *attempts, KeepDone: *keepDone,
		OnError: func(err error) { fmt.Fprintln(os.Stderr, "echomq-worker:", err) },
	})
	say("ready %s", q.Name)
	if err := w.Run(ctx); err != nil {
		cli.Fail(err)
	}
	relayed.Wait()
	_ = rdb.Close()
}
