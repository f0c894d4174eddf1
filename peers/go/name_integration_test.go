package echomq

import (
	"context"
	"testing"
	"time"
)

// A named job enqueued by Go carries its name as extras "n" (a plain one beside it none); the
// claim returns it and the worker's Job has it as Name.
func TestEnqueueNamedJobs(t *testing.T) {
	rdb, scripts := testClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	minter := NewMinter()
	lease, err := AcquireNode(ctx, rdb, scripts, minter, DefaultNodeLease)
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release(context.Background())
	q, err := NewQueue(rdb, scripts, randomName("gonames"))
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Del(context.Background(), q.Keys.Meta, q.Keys.Pending, q.Keys.Data, q.Keys.Opts, q.Keys.Active, q.Keys.Events)
	a, _ := minter.Mint("job")
	b, _ := minter.Mint("job")
	if _, err := q.Enqueue(ctx, DefaultMaxPayload, []NewJob{{ID: a, Payload: "{}", Name: "charge <é>"}, {ID: b, Payload: "{}"}}); err != nil {
		t.Fatal(err)
	}
	_, jobs, err := q.Claim(ctx, 2, 30000, 100)
	if err != nil || len(jobs) != 2 {
		t.Fatalf("claim: %v %v", jobs, err)
	}
	if jobName(jobs[0].Extras) != "charge <é>" || jobs[1].Extras != "" {
		t.Fatalf("extras: %q %q", jobs[0].Extras, jobs[1].Extras)
	}
	c, _ := minter.Mint("job")
	if _, err := q.Enqueue(ctx, DefaultMaxPayload, []NewJob{{ID: c, Payload: "{}", Name: "a\x01b"}}); err == nil {
		t.Fatal("a name with a control character was accepted")
	}
}

// A job enqueued by Go with a business id is added once: a repeat answers the first job's id,
// the refs hash maps both ways, and a bad business id is refused.
func TestEnqueueBusinessIDs(t *testing.T) {
	rdb, scripts := testClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	minter := NewMinter()
	lease, err := AcquireNode(ctx, rdb, scripts, minter, DefaultNodeLease)
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Release(context.Background())
	q, err := NewQueue(rdb, scripts, randomName("gorefs"))
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Del(context.Background(), q.Keys.Meta, q.Keys.Pending, q.Keys.Data, q.Keys.Refs, q.Keys.Events)
	a, _ := minter.Mint("job")
	b, _ := minter.Mint("job")
	c, _ := minter.Mint("job")
	ids, err := q.EnqueueIDs(ctx, DefaultMaxPayload, []NewJob{{ID: a, Payload: "{}", Ref: "order-42"}, {ID: b, Payload: "{}"}, {ID: c, Payload: "{}", Ref: "order-42"}})
	if err != nil || ids[0] != a || ids[1] != b || ids[2] != a {
		t.Fatalf("first call: %v %v", ids, err)
	}
	d, _ := minter.Mint("job")
	added, err := q.Enqueue(ctx, DefaultMaxPayload, []NewJob{{ID: d, Payload: "{}", Ref: "order-42"}})
	if err != nil || added[0] {
		t.Fatalf("repeat: %v %v", added, err)
	}
	if got, _ := rdb.HGet(ctx, q.Keys.Refs, "order-42").Result(); got != a {
		t.Fatalf("refs: %q", got)
	}
	if got, _ := rdb.HGet(ctx, q.Keys.Refs, a).Result(); got != "order-42" {
		t.Fatalf("refs back: %q", got)
	}
	if _, err := q.Enqueue(ctx, DefaultMaxPayload, []NewJob{{ID: d, Payload: "{}", Ref: "a\x01b"}}); err == nil {
		t.Fatal("a business id with a control character was accepted")
	}
}
