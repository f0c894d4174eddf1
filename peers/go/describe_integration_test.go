package echomq

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// A Go process describes itself with its renewals (node.lua's describing form): the entry in
// {emq}:procs is "<owner> <heartbeat ms> <info JSON>" under its number; a release deletes it.
func TestNodeLeaseDescribesTheProcess(t *testing.T) {
	rdb, scripts := testClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	q := randomName("godescribe")
	lease, err := AcquireNode(ctx, rdb, scripts, NewMinter(), DefaultNodeLease)
	if err != nil {
		t.Fatal(err)
	}
	lease.Describe = func() string {
		return DescribeProcess("go-test", time.Now(), []ProcessQueue{{Name: q, Concurrency: 3, Active: 1}})
	}
	if err := lease.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	field := fmt.Sprint(lease.Node())
	v, err := rdb.HGet(ctx, ProcsKey, field).Result()
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.SplitN(v, " ", 3)
	var info struct {
		Runtime string         `json:"runtime"`
		Queues  []ProcessQueue `json:"queues"`
	}
	if len(parts) != 3 || parts[0] != lease.Owner() || json.Unmarshal([]byte(parts[2]), &info) != nil {
		t.Fatalf("entry %q", v)
	}
	if info.Runtime != "go" || len(info.Queues) != 1 || info.Queues[0].Name != q || info.Queues[0].Concurrency != 3 {
		t.Fatalf("info %+v", info)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.HExists(ctx, ProcsKey, field).Result(); n {
		t.Fatal("the release left the description")
	}
}
