package echomq

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// RelayClient is what a relay needs of a connection: script calls and sharded subscriptions
// (*redis.Client and *redis.ClusterClient both qualify).
type RelayClient interface {
	redis.Scripter
	SSubscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// RelayOptions tune a Relay. Zero values take the defaults named below (the TypeScript relay's).
type RelayOptions struct {
	LeaseMs       int64         // relay lease of a taken entry (5000): a crashed relay's entries are due again after it
	Sweep         time.Duration // how often every watched outbox is swept for missed signals and lapsed leases (1s)
	Take          int           // entries per outbox-take call (1000)
	OutboxBound   int           // the outbox bound passed to flow-add (100000)
	MaxPayload    int           // the payload limit passed to flow-add (512 KiB)
	DeadCap       int           // the morgue cap passed to flow-deliver (10000)
	KeepCancelled int           // the cancelled retention passed to cancel (1000)
	// NoFollow keeps the relay on the queues it was told to watch: by default a queue that a
	// relayed target wrote entries to (a creation with children in further queues, a parent
	// buried or cancelled) is watched from then on, as the TypeScript relay does.
	NoFollow bool
	OnError  func(error)                               // failed calls and entries (retried after their lease); nil = ignore
	OnAcked  func(queue string, entries []OutboxEntry) // entries relayed and acknowledged; nil = ignore
}

func (o *RelayOptions) defaults() {
	if o.LeaseMs == 0 {
		o.LeaseMs = 5000
	}
	if o.Sweep == 0 {
		o.Sweep = time.Second
	}
	if o.Take == 0 {
		o.Take = 1000
	}
	if o.OutboxBound == 0 {
		o.OutboxBound = DefaultOutboxBound
	}
	if o.MaxPayload == 0 {
		o.MaxPayload = DefaultMaxPayload
	}
	if o.DeadCap == 0 {
		o.DeadCap = 10000
	}
	if o.KeepCancelled == 0 {
		o.KeepCancelled = 1000
	}
}

// Relay moves flow hand-offs between queues (docs/protocol.md §10, "The relay's duties"). For
// each watched queue it subscribes to the sharded channel `emq:{<q>}:outbox` (a message: relay
// now) and sweeps every second for missed messages and lapsed leases. A round is outbox-take (up
// to Take due entries, each leased for LeaseMs), then each entry's target — `c:` → flow-add on
// the child queue with the subtree planned by PlanQueue, `d:` → flow-deliver on the parent queue
// (the deliveries bound for one queue in one batched call), `x:` → cancel — then outbox-ack of
// the entries whose target answered without an error. An entry whose target failed is not
// acknowledged: it is due again when its lease lapses, and any live relay takes it. A malformed
// entry (another runtime's bug, which no relay could ever run) is reported and acknowledged, as
// the TypeScript relay does. Any number of processes may relay the same queues.
type Relay struct {
	c       RelayClient
	scripts *Scripts
	o       RelayOptions

	mu      sync.Mutex
	queues  map[string]*Queue        // every queue seen (watched or a target)
	watched map[string]chan struct{} // watched queue -> its kick channel
	ctx     context.Context          // set while Run runs
	wg      sync.WaitGroup
}

// NewRelay builds a relay on c for the given queues (more may be added with Watch).
func NewRelay(c RelayClient, scripts *Scripts, queues []string, o RelayOptions) (*Relay, error) {
	o.defaults()
	r := &Relay{c: c, scripts: scripts, o: o, queues: map[string]*Queue{}, watched: map[string]chan struct{}{}}
	for _, q := range queues {
		if err := r.Watch(q); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (r *Relay) report(err error) {
	if err != nil && r.o.OnError != nil {
		r.o.OnError(err)
	}
}

func (r *Relay) queue(name string) (*Queue, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if q := r.queues[name]; q != nil {
		return q, nil
	}
	q, err := NewQueue(r.c, r.scripts, name)
	if err != nil {
		return nil, err
	}
	r.queues[name] = q
	return q, nil
}

// Watch relays queue's outbox from now on (idempotent: a queue already watched is drained now).
func (r *Relay) Watch(name string) error {
	q, err := r.queue(name)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if kick, ok := r.watched[name]; ok {
		select {
		case kick <- struct{}{}:
		default:
		}
		return nil
	}
	kick := make(chan struct{}, 1)
	kick <- struct{}{} // drain once at start
	r.watched[name] = kick
	if r.ctx != nil {
		r.start(r.ctx, q, kick)
	}
	return nil
}

// Watched lists the queues this relay watches.
func (r *Relay) Watched() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.watched))
	for q := range r.watched {
		out = append(out, q)
	}
	return out
}

// Run relays until ctx ends, then waits for the rounds in flight (their entries stay leased, or
// are acknowledged) and returns.
func (r *Relay) Run(ctx context.Context) error {
	r.mu.Lock()
	if r.ctx != nil {
		r.mu.Unlock()
		return fmt.Errorf("echomq: the relay runs already")
	}
	r.ctx = ctx
	for name, kick := range r.watched {
		r.start(ctx, r.queues[name], kick)
	}
	r.mu.Unlock()
	<-ctx.Done()
	r.wg.Wait()
	return nil
}

// start runs one watched queue's loop (r.mu held).
func (r *Relay) start(ctx context.Context, q *Queue, kick chan struct{}) {
	r.wg.Add(2)
	sub := r.c.SSubscribe(ctx, q.Keys.Outbox)
	go func() { // a message on the outbox channel: relay now
		defer r.wg.Done()
		defer sub.Close()
		msgs := sub.Channel()
		for {
			select {
			case <-ctx.Done():
				return
			case _, ok := <-msgs:
				if !ok {
					return
				}
				select {
				case kick <- struct{}{}:
				default:
				}
			}
		}
	}()
	go func() {
		defer r.wg.Done()
		t := time.NewTicker(r.o.Sweep)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case <-kick:
			}
			r.drain(ctx, q)
		}
	}()
}

// drain runs rounds on q until its outbox has no due entry left (or a call fails: the next
// signal or sweep goes on).
func (r *Relay) drain(ctx context.Context, q *Queue) {
	for ctx.Err() == nil {
		n, err := r.Round(ctx, q.Name)
		if err != nil {
			if ctx.Err() == nil {
				r.report(fmt.Errorf("relay %s: %w", q.Name, err))
			}
			return
		}
		if n < r.o.Take {
			return
		}
	}
}

// Round is one relay round on queue's outbox: take, run the targets, acknowledge those that
// answered without an error. It answers how many entries it took.
func (r *Relay) Round(ctx context.Context, name string) (int, error) {
	q, err := r.queue(name)
	if err != nil {
		return 0, err
	}
	entries, err := q.OutboxTake(ctx, r.o.Take, r.o.LeaseMs)
	if err != nil || len(entries) == 0 {
		return 0, err
	}
	ok := r.RelayEntries(ctx, entries)
	var acked []OutboxEntry
	for i, e := range entries {
		if ok[i] {
			acked = append(acked, e)
		}
	}
	for i := 0; i < len(acked); i += 1000 {
		part := acked[i:min(i+1000, len(acked))]
		ids := make([]string, len(part))
		for j, e := range part {
			ids[j] = e.ID
		}
		if _, err := q.OutboxAck(ctx, ids); err != nil {
			// The targets ran: relaying the entries again after their lease changes nothing.
			return len(entries), fmt.Errorf("outbox-ack: %w", err)
		}
		if r.o.OnAcked != nil {
			r.o.OnAcked(name, part)
		}
	}
	return len(entries), nil
}

// RelayEntries runs the targets of taken entries: the deliveries first (one batched flow-deliver
// per parent queue), then the creations (one flow-add per child queue), then the cancels. ok[i]
// tells whether entry i may be acknowledged: its target answered without an error (or the entry
// is malformed and can never be relayed).
func (r *Relay) RelayEntries(ctx context.Context, entries []OutboxEntry) []bool {
	ok := make([]bool, len(entries))
	type group[T any] struct {
		at    []int
		items []T
	}
	var dOrder, cOrder []string
	delivers := map[string]*group[Delivery]{}
	creates := map[string]*group[CreateEntry]{}
	var cancels []int
	for i, e := range entries {
		var err error
		switch {
		case len(e.Text) >= 2 && e.Text[:2] == "d ":
			var tq string
			var d Delivery
			if tq, d, err = ParseDeliver(e.Text); err == nil {
				g := delivers[tq]
				if g == nil {
					g = &group[Delivery]{}
					delivers[tq] = g
					dOrder = append(dOrder, tq)
				}
				g.at, g.items = append(g.at, i), append(g.items, d)
			}
		case len(e.Text) >= 2 && e.Text[:2] == "c ":
			var tq string
			var c CreateEntry
			if tq, c, err = ParseCreate(e.Text); err == nil {
				g := creates[tq]
				if g == nil {
					g = &group[CreateEntry]{}
					creates[tq] = g
					cOrder = append(cOrder, tq)
				}
				g.at, g.items = append(g.at, i), append(g.items, c)
			}
		case len(e.Text) >= 2 && e.Text[:2] == "x ":
			if _, _, err = ParseCancel(e.Text); err == nil {
				cancels = append(cancels, i)
			}
		default:
			err = fmt.Errorf("unknown entry kind")
		}
		if err != nil {
			r.report(fmt.Errorf("relay: dropping malformed outbox entry %s (%v): %.80q", e.ID, err, e.Text))
			ok[i] = true
		}
	}
	for _, tq := range dOrder { // a released parent is latency-critical
		g := delivers[tq]
		for i, good := range r.deliver(ctx, tq, g.items) {
			ok[g.at[i]] = good
		}
	}
	for _, tq := range cOrder {
		g := creates[tq]
		for i, good := range r.create(ctx, tq, g.items) {
			ok[g.at[i]] = good
		}
	}
	for _, i := range cancels {
		tq, id, _ := ParseCancel(entries[i].Text)
		q, err := r.queue(tq)
		if err == nil {
			var n int64
			if n, err = q.Cancel(ctx, id, r.o.KeepCancelled); err == nil {
				ok[i] = true
				if n == CancelDone {
					r.follow(tq) // a cancelled child or waiting parent wrote hand-offs
				}
			}
		}
		if err != nil {
			r.report(fmt.Errorf("relay: entry %s not relayed (%w); retried after its lease", entries[i].ID, err))
		}
	}
	return ok
}

// deliver runs flow-deliver on queue tq for ds, 1000 per call; a refused call of several is
// retried one delivery per call, so one bad delivery fails alone.
func (r *Relay) deliver(ctx context.Context, tq string, ds []Delivery) []bool {
	ok := make([]bool, len(ds))
	q, err := r.queue(tq)
	if err != nil {
		r.report(fmt.Errorf("relay: deliveries to %s: %w", tq, err))
		return ok
	}
	buried := false
	run := func(from, to int) error {
		got, err := q.FlowDeliver(ctx, r.o.DeadCap, ds[from:to])
		if err != nil {
			return err
		}
		for i, n := range got {
			ok[from+i] = true
			if n == DeliverBuried {
				buried = true
			}
		}
		return nil
	}
	for i := 0; i < len(ds); i += 1000 {
		j := min(i+1000, len(ds))
		if err := run(i, j); err != nil {
			if j-i == 1 {
				r.report(fmt.Errorf("relay: delivery of %s to %s %s not relayed (%w); retried after its lease", ds[i].ChildID, tq, ds[i].ParentID, err))
				continue
			}
			for k := i; k < j; k++ {
				if err := run(k, k+1); err != nil {
					r.report(fmt.Errorf("relay: delivery of %s to %s %s not relayed (%w); retried after its lease", ds[k].ChildID, tq, ds[k].ParentID, err))
				}
			}
		}
	}
	if buried {
		r.follow(tq) // a buried parent wrote cancels for its children, maybe a report to its parent
	}
	return ok
}

// collisions answers the creations flow-add skipped whose child id holds ANOTHER job (its row does
// not name the entry's parent: not a replay) with a failed delivery, EMQ_ID_COLLISION, to the
// parent, so it never waits forever (docs/protocol.md §10, "The relay's duties").
func (r *Relay) collisions(ctx context.Context, q *Queue, plan FlowPlan, made []bool, roots []CreateEntry) {
	at := make(map[string]int, len(plan.Nodes))
	for i, n := range plan.Nodes {
		at[n.ID] = i
	}
	for _, e := range roots {
		i, found := at[e.Tree.ID]
		if !found || i >= len(made) || made[i] {
			continue
		}
		row, err := q.Peek(ctx, e.Tree.ID)
		if err != nil || row["parent"] == e.Up {
			continue
		}
		pq, pid, ok := strings.Cut(e.Up, " ")
		if !ok {
			continue
		}
		parent, err := r.queue(pq)
		if err != nil {
			r.report(err)
			continue
		}
		text := "EMQ_ID_COLLISION: a job with the id " + e.Tree.ID + " exists already in " + q.Name + "; the child was not created"
		if _, err := parent.FlowDeliver(ctx, r.o.DeadCap, []Delivery{{ParentID: pid, ChildID: e.Tree.ID, Outcome: "failed", Text: text}}); err != nil {
			r.report(fmt.Errorf("relay: reporting the collision of %s to %s: %w", e.Tree.ID, e.Up, err))
			continue
		}
		r.report(fmt.Errorf("relay: child %s of %s not created (%s); reported to its parent as failed", e.Tree.ID, e.Up, text))
		r.follow(pq)
	}
}

// create runs flow-add on queue tq for relayed subtrees: as many per call as fit 1000 nodes and
// 1000 edges; a refused call of several is retried one subtree per call.
func (r *Relay) create(ctx context.Context, tq string, roots []CreateEntry) []bool {
	ok := make([]bool, len(roots))
	q, err := r.queue(tq)
	if err != nil {
		r.report(fmt.Errorf("relay: creations in %s: %w", tq, err))
		return ok
	}
	crosses := 0
	add := func(from, to int) error {
		rs := make([]FlowRoot, 0, to-from)
		for _, e := range roots[from:to] {
			rs = append(rs, FlowRoot{Tree: e.Tree, Up: e.Up})
		}
		plan, err := PlanQueue(tq, rs)
		if err != nil {
			return err
		}
		made, err := q.FlowAdd(ctx, r.o.MaxPayload, r.o.OutboxBound, plan)
		if err != nil {
			return err
		}
		r.collisions(ctx, q, plan, made, roots[from:to])
		crosses += plan.Crosses
		for i := from; i < to; i++ {
			ok[i] = true
		}
		return nil
	}
	size := func(i int) int {
		p, err := PlanQueue(tq, []FlowRoot{{Tree: roots[i].Tree, Up: roots[i].Up}})
		if err != nil {
			return 1
		}
		return max(len(p.Nodes), len(p.Edges))
	}
	for i := 0; i < len(roots); {
		j, n := i, 0
		for ; j < len(roots); j++ {
			s := size(j)
			if j > i && n+s > 1000 {
				break
			}
			n += s
		}
		if err := add(i, j); err != nil {
			if j-i == 1 {
				r.report(fmt.Errorf("relay: creation of %s in %s not relayed (%w); retried after its lease", roots[i].Tree.ID, tq, err))
			} else {
				for k := i; k < j; k++ {
					if err := add(k, k+1); err != nil {
						r.report(fmt.Errorf("relay: creation of %s in %s not relayed (%w); retried after its lease", roots[k].Tree.ID, tq, err))
					}
				}
			}
		}
		i = j
	}
	if crosses > 0 {
		r.follow(tq) // the creations wrote further creation entries in tq's outbox
	}
	return ok
}

// follow watches a queue that a target just wrote entries to (unless NoFollow).
func (r *Relay) follow(name string) {
	if r.o.NoFollow {
		return
	}
	if err := r.Watch(name); err != nil {
		r.report(err)
	}
}
