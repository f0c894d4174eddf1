package echomq

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/redis/go-redis/v9"
)

// NodeLease holds one node number (0..1023) through node.lua, so ids minted by this process
// never collide with another live process's. It renews every lease/3; the minter refuses to
// mint once the lease may have lapsed (see Minter), and a lost number is replaced by a fresh one.
type NodeLease struct {
	rdb     redis.Scripter
	scripts *Scripts
	minter  *Minter
	owner   string
	lease   time.Duration
	node    int
	// Describe, when set, is sent with every claim and renewal (node.lua's describing form,
	// docs/protocol.md §1 "Process descriptions"): the process's description, JSON.
	Describe func() string
}

// ProcessQueue is a queue consumer in a process description.
type ProcessQueue struct {
	Name        string `json:"name"`
	Concurrency int    `json:"concurrency"`
	Active      int    `json:"active"`
}

// DescribeProcess is a description of this Go process (docs/protocol.md §1): host, pid,
// runtime "go", version, started, and the queues it consumes.
func DescribeProcess(version string, started time.Time, queues []ProcessQueue) string {
	host, _ := os.Hostname()
	if queues == nil {
		queues = []ProcessQueue{}
	}
	b, _ := json.Marshal(map[string]any{"host": host, "pid": os.Getpid(), "runtime": "go", "version": version, "started": started.UnixMilli(), "queues": queues})
	return string(b)
}

// nodeCall runs node.lua in the two-key form, or the describing form when describe is set.
func (l *NodeLease) nodeCall(ctx context.Context, lease int64, arg string, info func() string) (any, error) {
	if info == nil {
		return l.scripts.Run(ctx, l.rdb, "node", []string{NodeSeqKey, NodesKey}, ProtocolVersion, l.owner, lease, arg)
	}
	return l.scripts.Run(ctx, l.rdb, "node", []string{NodeSeqKey, NodesKey, ProcsKey}, ProtocolVersion, l.owner, lease, arg, info())
}

// DefaultNodeLease is the node lease the TypeScript runtime uses too (docs/protocol.md §1).
const DefaultNodeLease = 60 * time.Second

// margin keeps minting inside the lease even if the two clocks run at slightly different rates.
const margin = time.Second

// AcquireNode claims a free node number for minter and returns the lease.
func AcquireNode(ctx context.Context, rdb redis.Scripter, scripts *Scripts, minter *Minter, lease time.Duration) (*NodeLease, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	l := &NodeLease{rdb: rdb, scripts: scripts, minter: minter, owner: "go-" + hex.EncodeToString(b[:]), lease: lease, node: -1}
	if err := l.Renew(ctx); err != nil {
		return nil, err
	}
	return l, nil
}

// Node is the number held.
func (l *NodeLease) Node() int { return l.node }

// Owner is this process's random owner token.
func (l *NodeLease) Owner() string { return l.owner }

// call runs node.lua once: want = -1 claims any free number.
func (l *NodeLease) call(ctx context.Context, want int) (int, time.Time, error) {
	sent := time.Now()
	arg := ""
	if want >= 0 {
		arg = fmt.Sprint(want)
	}
	v, err := l.nodeCall(ctx, l.lease.Milliseconds(), arg, l.Describe)
	if err != nil {
		return -1, sent, err
	}
	n, ok := v.(int64)
	if !ok {
		return -1, sent, fmt.Errorf("echomq: node.lua replied %T %v, expected an integer", v, v)
	}
	return int(n), sent, nil
}

// Renew renews the number held (or claims one); when the number was taken by another owner,
// it claims a fresh one. Minting resumes only after a successful reply.
func (l *NodeLease) Renew(ctx context.Context) error {
	n, sent, err := l.call(ctx, l.node)
	if err != nil {
		return err
	}
	if n < 0 && l.node >= 0 { // lost: another process holds our number now
		n, sent, err = l.call(ctx, -1)
		if err != nil {
			return err
		}
	}
	if n < 0 {
		return fmt.Errorf("echomq: every node number (0..1023) is leased")
	}
	l.node = n
	l.minter.SetNode(n, sent.Add(l.lease-margin))
	return nil
}

// Release gives the number back (lease "0"); node.lua ends the lease one second later, so the
// next holder's ids never share a millisecond with ours. Minting stops at once.
func (l *NodeLease) Release(ctx context.Context) error {
	if l.node < 0 {
		return nil
	}
	l.minter.SetNode(l.node, time.Time{})
	var none func() string
	if l.Describe != nil {
		none = func() string { return "" } // a release deletes the description
	}
	_, err := l.nodeCall(ctx, 0, fmt.Sprint(l.node), none)
	return err
}

// Keep renews the lease every lease/3 until ctx ends; failures are retried at the next tick (the
// minter stops minting by itself when the lease may have lapsed).
func (l *NodeLease) Keep(ctx context.Context, onError func(error)) {
	t := time.NewTicker(l.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := l.Renew(ctx); err != nil && onError != nil {
				onError(err)
			}
		}
	}
}
