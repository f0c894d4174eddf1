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
