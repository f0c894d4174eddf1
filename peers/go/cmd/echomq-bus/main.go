// Command echomq-bus reads a Bus topic as one member of a consumer group (docs/bus.md) with a
// trivial handler. A payload with "failOnce": true fails its first delivery (re-delivered after
// the ack timeout); one with "poison": true fails every delivery (dead-lettered at the limit).
// Each delivery is printed as one line `got <evt id> <deliveries> ok|failed`, each dead letter
// this member wrote as `dead <evt id> <deliveries>`. SIGINT/SIGTERM stop it gracefully.
//
//	echomq-bus -url redis://127.0.0.1:6379 -topic orders -group billing [-concurrency 4] [-max-deliveries 5] [-ack-timeout-ms 30000]
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
	"time"

	echomq "github.com/echomq/echomq-go"
	"github.com/echomq/echomq-go/internal/cli"
)

func main() {
	var c cli.Common
	c.Register()
	topic := flag.String("topic", "", "topic name")
	group := flag.String("group", "", "consumer group")
	consumer := flag.String("consumer", "", "consumer name (default <hostname>-<pid>-<random>)")
	conc := flag.Int("concurrency", 1, "handlers at once")
	maxDeliveries := flag.Int64("max-deliveries", 5, "deliveries before an entry is dead-lettered")
	ackTimeout := flag.Int64("ack-timeout-ms", 30000, "an entry idle this long without an ack is re-delivered")
	from := flag.String("from", "start", `where a new group starts: "start" or "now"`)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	rdb, scripts, err := c.Connect(ctx, "bus")
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
	handler := func(_ context.Context, e echomq.Event) error {
		var p map[string]any
		_ = json.Unmarshal([]byte(e.Payload), &p)
		if poison, _ := p["poison"].(bool); poison {
			say("got %s %d failed", e.ID, e.Deliveries)
			return errors.New("poison")
		}
		if fail, _ := p["failOnce"].(bool); fail && e.Deliveries == 1 {
			say("got %s %d failed", e.ID, e.Deliveries)
			return errors.New("failing the first delivery on purpose")
		}
		say("got %s %d ok", e.ID, e.Deliveries)
		return nil
	}
	g, err := echomq.NewGroupReader(rdb, scripts, *topic, handler, echomq.GroupOptions{
		Group: *group, Consumer: *consumer, Concurrency: *conc, MaxDeliveries: *maxDeliveries,
		AckTimeout: time.Duration(*ackTimeout) * time.Millisecond, From: *from,
		OnError: func(err error) { fmt.Fprintln(os.Stderr, "echomq-bus:", err) },
		OnDeadLettered: func(streamID string, n int64) {
			id, _ := echomq.EventID(streamID)
			say("dead %s %d", id, n)
		},
	})
	if err != nil {
		cli.Fail(err)
	}
	if err := g.CreateGroup(ctx); err != nil {
		cli.Fail(err)
	}
	say("ready %s %s %s", *topic, *group, g.Consumer())
	if err := g.Run(ctx); err != nil {
		cli.Fail(err)
	}
	_ = rdb.Close()
}
