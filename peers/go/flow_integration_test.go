package echomq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// testClient connects to ECHOMQ_TEST_URL (RESP2) with the repository's scripts, or skips.
func testClient(t *testing.T) (*redis.Client, *Scripts) {
	t.Helper()
	url := os.Getenv("ECHOMQ_TEST_URL")
	if url == "" {
		t.Skip("ECHOMQ_TEST_URL is unset: no Valkey to run against")
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	opt.Protocol = 2
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	scripts, err := LoadScripts(luaDir())
	if err != nil {
		t.Fatal(err)
	}
	return rdb, scripts
}

func randomName(prefix string) string { return fmt.Sprintf("%s-%d", prefix, rand.Int63()) }

// eventually polls cond every 20 ms until it holds or d passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// A flow over three queues, run only by Go: the producer's flow-add writes the root's queue and
// creation entries; the relay creates the subtrees (one of them a parent with a child in a third
// queue), delivers the children's outcomes (a done, an ignored failure buried by retry, a
// same-queue leaf) and releases the parents bottom-up; a released parent's handler sees its
// children's results, a child that is also a parent is claimed "pc" and settles with the outbox
// keys. Every outbox ends empty. Then a cancelled waiting parent's cancel entry is relayed.
func TestFlowRelayEndToEnd(t *testing.T) {
	rdb, scripts := testClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	minter := NewMinter()
	lease, err := AcquireNode(ctx, rdb, scripts, minter, DefaultNodeLease)
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release(context.Background())
	mint := func() string {
		id, err := minter.Mint("job")
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	A, B, C := randomName("fa"), randomName("fb"), randomName("fc")
	qa, _ := NewQueue(rdb, scripts, A)
	tree := FlowTree{Q: A, ID: mint(), P: `{"name":"root"}`, Pol: "fail", Key: "0", Kids: []FlowTree{
		{Q: B, ID: mint(), P: `{"name":"mid"}`, Pol: "fail", Key: "mid", Kids: []FlowTree{
			{Q: C, ID: mint(), P: `{"name":"leaf-c"}`, Pol: "fail", Key: "0"},
		}},
		{Q: B, ID: mint(), P: `{"name":"bad","fail":true}`, Pol: "ignore", Key: "bad"},
		{Q: A, ID: mint(), P: `{"name":"leaf-a"}`, Pol: "fail", Key: "same"},
	}}
	plan, err := PlanQueue(A, []FlowRoot{{Tree: tree}})
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Nodes) != 2 || plan.Crosses != 2 {
		t.Fatalf("plan of the root's queue: %+v", plan)
	}
	made, err := qa.FlowAdd(ctx, DefaultMaxPayload, DefaultOutboxBound, plan)
	if err != nil || len(made) != 2 || !made[0] || !made[1] {
		t.Fatalf("flow-add: %v %v", made, err)
	}

	var mu sync.Mutex
	seen := map[string]Job{}
	handler := func(_ context.Context, j Job) (string, error) {
		var p struct {
			Name string `json:"name"`
			Fail bool   `json:"fail"`
		}
		_ = json.Unmarshal([]byte(j.Payload), &p)
		mu.Lock()
		seen[p.Name] = j
		mu.Unlock()
		if p.Fail {
			return "", Fatal(errors.New("bad child"))
		}
		names := []string{p.Name}
		for _, c := range j.ChildResults {
			names = append(names, c.Key+"="+c.Outcome)
		}
		b, _ := json.Marshal(names)
		return string(b), nil
	}
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var errs []error
	onErr := func(err error) { mu.Lock(); errs = append(errs, err); mu.Unlock() }
	for _, name := range []string{A, B, C} {
		q, _ := NewQueue(rdb, scripts, name)
		w := NewWorker(rdb, q, handler, WorkerOptions{Concurrency: 4, MaxIdle: 500 * time.Millisecond, OnError: onErr})
		wg.Add(1)
		go func() { defer wg.Done(); _ = w.Run(runCtx) }()
	}
	relay, err := NewRelay(rdb, scripts, []string{A, B, C}, RelayOptions{OnError: onErr})
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(1)
	go func() { defer wg.Done(); _ = relay.Run(runCtx) }()
	defer func() { stop(); wg.Wait() }()

	eventually(t, 15*time.Second, "the root to finish", func() bool {
		row, _ := qa.Peek(ctx, tree.ID)
		return row["status"] == "done"
	})
	row, _ := qa.Peek(ctx, tree.ID)
	if row["result"] != `["root","bad=failed","mid=done","same=done"]` {
		t.Errorf("root result %q", row["result"])
	}
	mu.Lock()
	if f := seen["mid"].Flow; f != "pc" {
		t.Errorf("the mid node (a child and a released parent) was claimed %q", f)
	}
	if f := seen["root"].Flow; f != "p" {
		t.Errorf("the root was claimed %q", f)
	}
	if f := seen["leaf-c"].Flow; f != "c" {
		t.Errorf("a leaf was claimed %q", f)
	}
	rc := seen["root"].ChildResults
	if len(rc) != 3 || rc[0].Key != "bad" || rc[0].Text != "Error: bad child" || rc[1].Text != `["mid","0=done"]` || rc[2].Queue != A {
		t.Errorf("the root's children: %+v", rc)
	}
	mu.Unlock()
	for _, q := range []string{A, B, C} {
		eventually(t, 5*time.Second, "the outbox of "+q+" to drain", func() bool {
			n, _ := rdb.HLen(ctx, "emq:{"+q+"}:outbox").Result()
			return n == 0
		})
	}

	// A waiting parent cancelled: its cancel entry for the child still out is relayed.
	D := randomName("fd") // no consumer: the child stays pending
	if err := relay.Watch(D); err != nil {
		t.Fatal(err)
	}
	p2 := FlowTree{Q: A, ID: mint(), P: `{"name":"p2"}`, Pol: "fail", Key: "0", Kids: []FlowTree{{Q: D, ID: mint(), P: "{}", Pol: "fail", Key: "0"}}}
	plan2, _ := PlanQueue(A, []FlowRoot{{Tree: p2}})
	if _, err := qa.FlowAdd(ctx, DefaultMaxPayload, DefaultOutboxBound, plan2); err != nil {
		t.Fatal(err)
	}
	qd, _ := NewQueue(rdb, scripts, D)
	eventually(t, 5*time.Second, "the child in D to be created", func() bool {
		r, _ := qd.Peek(ctx, p2.Kids[0].ID)
		return r["status"] == "pending"
	})
	if n, err := qa.Cancel(ctx, p2.ID, 1000); err != nil || n != CancelDone {
		t.Fatalf("cancel of the waiting parent: %v %v", n, err)
	}
	eventually(t, 5*time.Second, "the child in D to be cancelled by the relay", func() bool {
		r, _ := qd.Peek(ctx, p2.Kids[0].ID)
		return r["status"] == "cancelled"
	})
	mu.Lock()
	defer mu.Unlock()
	for _, err := range errs {
		t.Errorf("reported: %v", err)
	}
}

// Settles of plain jobs send no outbox keys, settles of flow children do (complete refuses a
// child's completion without them: EMQ_BAD_ARG).
func TestChildSettleNeedsOutboxKeys(t *testing.T) {
	rdb, scripts := testClient(t)
	ctx := context.Background()
	minter := NewMinter()
	lease, err := AcquireNode(ctx, rdb, scripts, minter, DefaultNodeLease)
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release(ctx)
	A, B := randomName("sa"), randomName("sb")
	pid, _ := minter.Mint("job")
	cid, _ := minter.Mint("job")
	qa, _ := NewQueue(rdb, scripts, A)
	qb, _ := NewQueue(rdb, scripts, B)
	plan, _ := PlanQueue(B, []FlowRoot{{Tree: FlowTree{Q: B, ID: cid, P: "{}", Pol: "fail", Key: "0"}, Up: A + " " + pid}})
	if _, err := qb.FlowAdd(ctx, DefaultMaxPayload, DefaultOutboxBound, plan); err != nil {
		t.Fatal(err)
	}
	_, jobs, err := qb.Claim(ctx, 1, 30000, 0)
	if err != nil || len(jobs) != 1 || jobs[0].Flow != "c" {
		t.Fatalf("claim: %+v %v", jobs, err)
	}
	j := jobs[0]
	if _, err := qb.Complete(ctx, 1000, []Done{{ID: j.ID, Token: j.Token, Result: "1"}}); ErrorCode(err) != "EMQ_BAD_ARG" {
		t.Fatalf("a child's completion without the outbox keys: %v", err)
	}
	ok, err := qb.Complete(ctx, 1000, []Done{{ID: j.ID, Token: j.Token, Result: "1", Child: true}})
	if err != nil || !ok[0] {
		t.Fatalf("complete: %v %v", ok, err)
	}
	text, _ := rdb.HGet(ctx, "emq:{"+B+"}:outbox", "d:"+cid).Result()
	if want := "d " + A + " " + pid + " " + cid + " done 1"; text != want {
		t.Fatalf("hand-off %q, want %q", text, want)
	}
	_ = qa
}

// A relayed creation whose child id holds another job (taken after the producer checked) is
// reported to the parent as the child's failure (EMQ_ID_COLLISION): the parent is buried under
// `fail` instead of waiting forever (docs/protocol.md §10, "The relay's duties").
func TestRelayReportsIDCollision(t *testing.T) {
	rdb, scripts := testClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	minter := NewMinter()
	lease, err := AcquireNode(ctx, rdb, scripts, minter, DefaultNodeLease)
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release(context.Background())
	mint := func() string {
		id, err := minter.Mint("job")
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	A, B := randomName("ca"), randomName("cb")
	qa, _ := NewQueue(rdb, scripts, A)
	qb, _ := NewQueue(rdb, scripts, B)
	taken := mint()
	if _, err := qb.Enqueue(ctx, DefaultMaxPayload, []NewJob{{ID: taken, Payload: `{"other":true}`}}); err != nil {
		t.Fatal(err)
	}
	tree := FlowTree{Q: A, ID: mint(), P: `{}`, Pol: "fail", Key: "0", Kids: []FlowTree{{Q: B, ID: taken, P: `{}`, Pol: "fail", Key: "0"}}}
	plan, err := PlanQueue(A, []FlowRoot{{Tree: tree}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := qa.FlowAdd(ctx, DefaultMaxPayload, DefaultOutboxBound, plan); err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	relay, err := NewRelay(rdb, scripts, []string{A, B}, RelayOptions{OnError: func(error) {}})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = relay.Run(runCtx) }()
	eventually(t, 10*time.Second, "the parent to be buried", func() bool {
		row, _ := qa.Peek(ctx, tree.ID)
		return row["status"] == "dead"
	})
	row, _ := qa.Peek(ctx, tree.ID)
	if !strings.Contains(row["error"], "EMQ_ID_COLLISION") {
		t.Errorf("parent error %q", row["error"])
	}
	other, _ := qb.Peek(ctx, taken)
	if other["payload"] != `{"other":true}` || other["parent"] != "" {
		t.Errorf("the other job changed: %v", other)
	}
}
