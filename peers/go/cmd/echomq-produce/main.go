// Command echomq-produce enqueues n jobs on a queue with ids minted on a leased node number, then
// (with -wait) waits until every one is done and prints each as one JSON line
// {"id":…,"status":…,"attempts":…,"result":…} read back with peek.lua. Every k-th job (-fail-every)
// carries "failOnce": true, for consumers that fail such a job's first attempt.
//
//	echomq-produce -url redis://127.0.0.1:6379 -queue orders -n 2000 -wait 60s
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"time"

	echomq "github.com/echomq/echomq-go"
	"github.com/echomq/echomq-go/internal/cli"
)

func main() {
	var c cli.Common
	c.Register()
	n := flag.Int("n", 100, "jobs to enqueue")
	failEvery := flag.Int("fail-every", 0, "mark every k-th job failOnce (0 = none)")
	wait := flag.Duration("wait", 0, "wait this long for every job to be done and print them (0 = print the ids only)")
	flag.Parse()
	ctx := context.Background()
	rdb, scripts, q, err := c.Open(ctx, "producer")
	if err != nil {
		cli.Fail(err)
	}
	minter := echomq.NewMinter()
	lease, err := echomq.AcquireNode(ctx, rdb, scripts, minter, echomq.DefaultNodeLease)
	if err != nil {
		cli.Fail(err)
	}
	ids := make([]string, 0, *n)
	for start := 0; start < *n; start += 1000 {
		batch := []echomq.NewJob{}
		for i := start; i < min(start+1000, *n); i++ {
			id, err := minter.Mint("job")
			if err != nil {
				cli.Fail(err)
			}
			p, _ := json.Marshal(map[string]any{"i": i, "from": "go", "failOnce": *failEvery > 0 && i%*failEvery == 0})
			batch = append(batch, echomq.NewJob{ID: id, Payload: string(p)})
			ids = append(ids, id)
		}
		added, err := q.Enqueue(ctx, echomq.DefaultMaxPayload, batch)
		if err != nil {
			cli.Fail(err)
		}
		for i, a := range added {
			if !a {
				cli.Fail(fmt.Errorf("freshly minted id %s already existed", batch[i].ID))
			}
		}
	}
	_ = lease.Release(ctx) // every id is minted
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	if *wait == 0 {
		for _, id := range ids {
			fmt.Fprintln(out, id)
		}
		return
	}
	deadline := time.Now().Add(*wait)
	for _, id := range ids {
		for {
			row, err := q.Peek(ctx, id)
			if err != nil {
				cli.Fail(err)
			}
			if row["status"] == "done" {
				line, _ := json.Marshal(map[string]string{"id": id, "status": row["status"], "attempts": row["attempts"], "result": row["result"]})
				fmt.Fprintln(out, string(line))
				break
			}
			if time.Now().After(deadline) {
				out.Flush()
				cli.Fail(fmt.Errorf("job %s is %q after %s", id, row["status"], *wait))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
