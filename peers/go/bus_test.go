package echomq

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// Branded event ids match the TypeScript eventIdOf (src/bus/event-id.ts).
func TestEventID(t *testing.T) {
	for s, want := range map[string]string{
		"1735689600000-0":       "evt00000000000",
		"1760000000123-5":       "evt07X06fsZxlF",
		"1760000000123-4194303": "evt07X06fsrYtD",
		"1999999999999-77":      "evt1JtOGQZo7S9",
	} {
		if got, err := EventID(s); err != nil || got != want {
			t.Errorf("EventID(%s) = %s %v, want %s", s, got, err, want)
		}
	}
	for _, bad := range []string{"", "1", "x-1", "1735689599999-0", "1760000000123-4194304", "1-2-3"} {
		if _, err := EventID(bad); err == nil {
			t.Errorf("EventID(%q) accepted", bad)
		}
	}
}

// A group member reads what publish.lua appended: every event acknowledged once it succeeded, a
// failed one re-delivered after the ack timeout, a poison one dead-lettered by dead-letter.lua
// after the delivery limit (acked: nothing left pending).
func TestGroupReader(t *testing.T) {
	rdb, scripts := testClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	topic := randomName("bus")
	var payloads []string
	for i := range 20 {
		payloads = append(payloads, fmt.Sprintf(`{"i":%d,"failOnce":%t,"poison":%t}`, i, i%7 == 1, i == 13))
	}
	ids, err := Publish(ctx, rdb, scripts, topic, DefaultMaxPayload, payloads...)
	if err != nil || len(ids) != 20 {
		t.Fatalf("publish: %v %v", ids, err)
	}
	var mu sync.Mutex
	runs := map[string][]int64{}
	var dead []string
	var errs []error
	h := func(_ context.Context, e Event) error {
		mu.Lock()
		runs[e.StreamID] = append(runs[e.StreamID], e.Deliveries)
		mu.Unlock()
		if strings.Contains(e.Payload, `"poison":true`) || (strings.Contains(e.Payload, `"failOnce":true`) && e.Deliveries == 1) {
			return errors.New("no")
		}
		return nil
	}
	g, err := NewGroupReader(rdb, scripts, topic, h, GroupOptions{
		Group: "g1", Consumer: "go-1", Concurrency: 4, MaxDeliveries: 3, AckTimeout: 300 * time.Millisecond, Block: 200 * time.Millisecond,
		OnError:        func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() },
		OnDeadLettered: func(id string, n int64) { mu.Lock(); dead = append(dead, fmt.Sprintf("%s %d", id, n)); mu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = g.Run(runCtx); close(done) }()
	defer func() { stop(); <-done }()
	eventually(t, 10*time.Second, "the poison event to be dead-lettered", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(dead) == 1
	})
	mu.Lock()
	if dead[0] != ids[13]+" 3" {
		t.Errorf("dead-lettered %v, want %s after 3 deliveries", dead, ids[13])
	}
	for i, id := range ids {
		want := "[1]"
		switch {
		case i == 13:
			want = "[1 2 3]"
		case i%7 == 1:
			want = "[1 2]"
		}
		if got := fmt.Sprint(runs[id]); got != want {
			t.Errorf("event %d ran %s, want %s", i, got, want)
		}
	}
	for _, err := range errs {
		t.Errorf("reported: %v", err)
	}
	mu.Unlock()
	k, _ := BusKeys(topic)
	p, err := rdb.XPending(ctx, k.Log, "g1").Result()
	if err != nil || p.Count != 0 {
		t.Errorf("pending after the run: %+v %v", p, err)
	}
	d, err := rdb.XRange(ctx, k.Dead, "-", "+").Result()
	evt, _ := EventID(ids[13])
	if err != nil || len(d) != 1 || d[0].Values["id"] != evt || d[0].Values["group"] != "g1" || d[0].Values["consumer"] != "go-1" || d[0].Values["error"] != "Error: no" || d[0].Values["deliveries"] != "3" {
		t.Errorf("dead letters: %+v %v", d, err)
	}
}
