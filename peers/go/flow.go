package echomq

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Flows (docs/protocol.md §10): the outbox entry formats, the planner of a flow-add call, and one
// method per flow script. The relay that moves entries between queues is relay.go.

// FlowTree is one node of a flow, as a creation entry carries it (`c <queue> <json>`): the JSON
// member names are part of the wire. P is the job's payload JSON text (carried as a JSON string);
// A and B are the node's own attempt limit and backoff (0 / "" = none, omitted from the JSON);
// Pol is its failure policy towards its parent (fail, ignore, continue, release), Key its key among its
// siblings; Kids its children ([] for a leaf, never null). Dl and At are a leaf's delay (ms from
// its creation, server clock) and run-at (epoch ms), Pr and Ln its priority (1..9) and fair lane;
// 0 / "" = none, omitted from the JSON.
type FlowTree struct {
	Q    string     `json:"q"`
	ID   string     `json:"id"`
	P    string     `json:"p"`
	A    int        `json:"a,omitempty"`
	B    string     `json:"b,omitempty"`
	Dl   int64      `json:"dl,omitempty"`
	At   int64      `json:"at,omitempty"`
	Pr   int        `json:"pr,omitempty"`
	Ln   string     `json:"ln,omitempty"`
	Pol  string     `json:"pol"`
	Key  string     `json:"key"`
	Kids []FlowTree `json:"kids"`
}

// CreateEntry is the JSON of a creation entry: the subtree and its root's parent, `<queue> <id>`.
type CreateEntry struct {
	Up   string   `json:"up"`
	Tree FlowTree `json:"tree"`
}

// FlowNode is one node of a flow-add call (a job of the call's queue).
type FlowNode struct {
	ID          string
	Payload     string
	Parent      string // "" or "<queue> <id>"
	MaxAttempts int    // 0 = none
	Backoff     string // "" = none
	Run         string // "" = ready now; else "d:<ms>" / "t:<epoch ms>", "p:<1..9>" / "g:<lane>" (a leaf only)
}

// runOf is a node's run time and lane as flow-add's run-times form takes them ("" = none).
func runOf(t FlowTree) string {
	var parts []string
	if t.Dl > 0 {
		parts = append(parts, "d:"+strconv.FormatInt(t.Dl, 10))
	} else if t.At > 0 {
		parts = append(parts, "t:"+strconv.FormatInt(t.At, 10))
	}
	if t.Pr > 0 {
		parts = append(parts, "p:"+strconv.Itoa(t.Pr))
	} else if t.Ln != "" {
		parts = append(parts, "g:"+t.Ln)
	}
	return strings.Join(parts, " ")
}

// FlowEdge is one child edge of a flow-add call: Entry is the creation entry text of a child in
// another queue ("c <queue> <json>"), "" for a child created by the same call.
type FlowEdge struct {
	ParentID, ChildID, ChildQueue, Policy, Key, Entry string
}

// FlowPlan is the nodes and edges of one flow-add call on one queue; Crosses counts the children
// in other queues (creation entries the call writes to the queue's outbox).
type FlowPlan struct {
	Nodes   []FlowNode
	Edges   []FlowEdge
	Crosses int
}

// FlowRoot is a subtree rooted in the planned queue, with its parent reference ("" for a flow's
// root, else `<queue> <id>` as a creation entry's "up" gives it).
type FlowRoot struct {
	Tree FlowTree
	Up   string
}

// PlanQueue plans the flow-add call on queue for subtrees rooted there (docs/protocol.md §10,
// "The relay's duties"; the TypeScript planQueue): the nodes reachable through children in the
// same queue, depth first, the root's parent being its Up and every further node's parent
// `<queue> <its parent's id>`; an edge per child, carrying for a child in another queue the
// creation entry that queue's flow-add will be relayed.
func PlanQueue(queue string, roots []FlowRoot) (FlowPlan, error) {
	var plan FlowPlan
	var visit func(t FlowTree, up string) error
	visit = func(t FlowTree, up string) error {
		plan.Nodes = append(plan.Nodes, FlowNode{ID: t.ID, Payload: t.P, Parent: up, MaxAttempts: t.A, Backoff: t.B, Run: runOf(t)})
		ref := queue + " " + t.ID
		for _, k := range t.Kids {
			entry := ""
			if k.Q != queue {
				text, err := CreateEntryText(k.Q, CreateEntry{Up: ref, Tree: k})
				if err != nil {
					return err
				}
				entry = text
				plan.Crosses++
			}
			plan.Edges = append(plan.Edges, FlowEdge{ParentID: t.ID, ChildID: k.ID, ChildQueue: k.Q, Policy: k.Pol, Key: k.Key, Entry: entry})
			if k.Q == queue {
				if err := visit(k, ref); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, r := range roots {
		if err := visit(r.Tree, r.Up); err != nil {
			return FlowPlan{}, err
		}
	}
	return plan, nil
}

// CreateEntryText renders a creation entry, `c <queue> <json>` (JSON as JSON.stringify writes
// it: no HTML escaping, kids [] for a leaf).
func CreateEntryText(queue string, e CreateEntry) (string, error) {
	normalizeKids(&e.Tree)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		return "", err
	}
	return "c " + queue + " " + strings.TrimSuffix(b.String(), "\n"), nil
}

func normalizeKids(t *FlowTree) {
	if t.Kids == nil {
		t.Kids = []FlowTree{}
	}
	for i := range t.Kids {
		normalizeKids(&t.Kids[i])
	}
}

// Delivery is a finished child's outcome bound for its parent (a `d:` entry; one flow-deliver
// delivery). Outcome is done, failed or cancelled; Text the result JSON or the error text.
type Delivery struct {
	ParentID, ChildID, Outcome, Text string
}

// OutboxEntry is one outbox entry as outbox-take returns it: its id (`c:`, `d:` or `x:` + a job
// id) and its text.
type OutboxEntry struct {
	ID, Text string
}

// ParseCreate reads a creation entry `c <child queue> <json>`.
func ParseCreate(text string) (queue string, e CreateEntry, err error) {
	rest, ok := strings.CutPrefix(text, "c ")
	if !ok {
		return "", e, fmt.Errorf("echomq: not a creation entry: %.80q", text)
	}
	queue, js, ok := strings.Cut(rest, " ")
	if !ok || !queueName.MatchString(queue) {
		return "", e, fmt.Errorf("echomq: malformed creation entry: %.80q", text)
	}
	if err := json.Unmarshal([]byte(js), &e); err != nil {
		return "", e, fmt.Errorf("echomq: creation entry JSON: %w", err)
	}
	if e.Tree.ID == "" || e.Tree.Q == "" {
		return "", e, fmt.Errorf("echomq: creation entry without a tree: %.80q", text)
	}
	normalizeKids(&e.Tree)
	return queue, e, nil
}

// ParseDeliver reads a delivery entry `d <parent queue> <parent id> <job id> <outcome> <text>`:
// the text runs to the end of the entry and may be empty or hold any bytes.
func ParseDeliver(text string) (queue string, d Delivery, err error) {
	f := strings.SplitN(text, " ", 6)
	if len(f) != 6 || f[0] != "d" || !queueName.MatchString(f[1]) || f[2] == "" || f[3] == "" {
		return "", d, fmt.Errorf("echomq: malformed delivery entry: %.80q", text)
	}
	switch f[4] {
	case "done", "failed", "cancelled":
	default:
		return "", d, fmt.Errorf("echomq: delivery entry with outcome %q", f[4])
	}
	return f[1], Delivery{ParentID: f[2], ChildID: f[3], Outcome: f[4], Text: f[5]}, nil
}

// ParseCancel reads a cancel entry `x <queue> <job id>`.
func ParseCancel(text string) (queue, id string, err error) {
	f := strings.Split(text, " ")
	if len(f) != 3 || f[0] != "x" || !queueName.MatchString(f[1]) || f[2] == "" {
		return "", "", fmt.Errorf("echomq: malformed cancel entry: %.80q", text)
	}
	return f[1], f[2], nil
}

// ChildResult is one child's outcome as its released parent's row records it: `k:<id>` =
// `<queue> <policy> <key>`, `r:<id>` = `<done|failed|cancelled> <text>`.
type ChildResult struct {
	ID, Queue, Policy, Key string
	Outcome                string // "" while the outcome has not arrived
	Text                   string // the result JSON text (done) or the error text
}

// ChildResults reads a flow parent's children from its row's fields (as Peek returns them),
// sorted by key; a child whose outcome has not arrived has Outcome "".
func ChildResults(row map[string]string) []ChildResult {
	var out []ChildResult
	for f, v := range row {
		id, ok := strings.CutPrefix(f, "k:")
		if !ok {
			continue
		}
		parts := strings.SplitN(v, " ", 3)
		for len(parts) < 3 {
			parts = append(parts, "")
		}
		c := ChildResult{ID: id, Queue: parts[0], Policy: parts[1], Key: parts[2]}
		if r, ok := row["r:"+id]; ok {
			c.Outcome, c.Text, _ = strings.Cut(r, " ")
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Key != out[j].Key {
			return out[i].Key < out[j].Key
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// DefaultOutboxBound is the outbox bound passed to flow-add (the TypeScript runtime's).
const DefaultOutboxBound = 100000

// FlowAdd runs flow-add on this queue for a plan (1..1000 nodes, 0..1000 edges); created[i] is
// false when node i's tree existed already (a replay).
func (q *Queue) FlowAdd(ctx context.Context, maxPayload, outboxBound int, plan FlowPlan) ([]bool, error) {
	k := q.Keys
	args := []any{ProtocolVersion, maxPayload, outboxBound, len(plan.Nodes), len(plan.Edges)}
	for _, n := range plan.Nodes {
		maxA := ""
		if n.MaxAttempts > 0 {
			maxA = strconv.Itoa(n.MaxAttempts)
		}
		args = append(args, n.ID, n.Payload, n.Parent, maxA, n.Backoff)
	}
	for _, e := range plan.Edges {
		args = append(args, e.ParentID, e.ChildID, e.ChildQueue, e.Policy, e.Key, e.Entry)
	}
	// The run-times form (docs/protocol.md §10): no lease (""), then one run time per node.
	for _, n := range plan.Nodes {
		if n.Run != "" {
			args = append(args, "")
			for _, m := range plan.Nodes {
				args = append(args, m.Run)
			}
			break
		}
	}
	v, err := q.scripts.Run(ctx, q.rdb, "flow-add", []string{k.Meta, k.Pending, k.Wake, k.Data, k.Opts, k.RowPrefix, k.Events, k.Outbox, k.OutDue}, args...)
	if err != nil {
		return nil, err
	}
	return flags(v, len(plan.Nodes), "flow-add")
}

// What flow-deliver did, per delivery.
const (
	DeliverMissing  = -1 // no such parent, or the child is not one of its children
	DeliverRepeat   = 0  // already delivered: nothing written
	DeliverRecorded = 1  // recorded (the parent waits for more, or no longer waits)
	DeliverReleased = 2  // recorded, and the parent released to pending
	DeliverBuried   = 3  // recorded, and the parent buried (policy fail)
)

// FlowDeliver delivers children's outcomes (1..1000) to parents of this queue in one call,
// applied in order as one call each; one DeliverX code per delivery.
func (q *Queue) FlowDeliver(ctx context.Context, deadCap int, ds []Delivery) ([]int64, error) {
	if len(ds) == 0 {
		return nil, nil
	}
	k := q.Keys
	args := []any{ProtocolVersion, ds[0].ParentID, ds[0].ChildID, ds[0].Outcome, ds[0].Text, deadCap}
	for _, d := range ds[1:] {
		args = append(args, d.ParentID, d.ChildID, d.Outcome, d.Text)
	}
	v, err := q.scripts.Run(ctx, q.rdb, "flow-deliver", []string{k.Meta, k.Pending, k.Wake, k.Dead, k.Data, k.RowPrefix, k.Row(ds[0].ParentID), k.Events, k.Outbox, k.OutDue}, args...)
	if err != nil {
		return nil, err
	}
	switch r := v.(type) {
	case int64:
		if len(ds) == 1 {
			return []int64{r}, nil
		}
	case []any:
		if len(r) == len(ds) {
			out := make([]int64, len(r))
			for i, x := range r {
				n, ok := x.(int64)
				if !ok {
					return nil, fmt.Errorf("echomq: flow-deliver replied %T at %d", x, i)
				}
				out[i] = n
			}
			return out, nil
		}
	}
	return nil, fmt.Errorf("echomq: flow-deliver replied %v for %d deliveries", v, len(ds))
}

// Cancel answers of cancel.lua.
const (
	CancelMissing  = -1 // no such job
	CancelFinished = 0  // already finished
	CancelDone     = 1  // cancelled (also a waiting flow parent)
	CancelFlagged  = 2  // active: flagged, its holder ends it cancelled
)

// Cancel cancels a job (cancel.lua); keep is the cancelled retention (1..1000000). The outbox
// keys are always passed: a flow child or a waiting parent writes hand-offs.
func (q *Queue) Cancel(ctx context.Context, id string, keep int) (int64, error) {
	k := q.Keys
	v, err := q.scripts.Run(ctx, q.rdb, "cancel", []string{k.Meta, k.Pending, k.Scheduled, k.Cancelled, k.Data, k.Opts, k.RowPrefix, k.Row(id), k.Events, k.Outbox, k.OutDue},
		ProtocolVersion, id, keep)
	if err != nil {
		return 0, err
	}
	n, ok := v.(int64)
	if !ok {
		return 0, fmt.Errorf("echomq: cancel replied %v", v)
	}
	return n, nil
}

// OutboxTake takes up to n (1..1000) due entries of this queue's outbox under a relay lease.
func (q *Queue) OutboxTake(ctx context.Context, n int, leaseMs int64) ([]OutboxEntry, error) {
	k := q.Keys
	v, err := q.scripts.Run(ctx, q.rdb, "outbox-take", []string{k.Meta, k.Outbox, k.OutDue}, ProtocolVersion, n, leaseMs)
	if err != nil {
		return nil, err
	}
	a, ok := v.([]any)
	if !ok || len(a)%2 != 0 {
		return nil, fmt.Errorf("echomq: outbox-take replied %v", v)
	}
	out := make([]OutboxEntry, 0, len(a)/2)
	for i := 0; i < len(a); i += 2 {
		id, _ := a[i].(string)
		text, _ := a[i+1].(string)
		out = append(out, OutboxEntry{ID: id, Text: text})
	}
	return out, nil
}

// OutboxAck removes relayed entries (1..1000 ids) from this queue's outbox; answers how many
// were still there.
func (q *Queue) OutboxAck(ctx context.Context, ids []string) (int64, error) {
	k := q.Keys
	args := []any{ProtocolVersion, len(ids)}
	for _, id := range ids {
		args = append(args, id)
	}
	v, err := q.scripts.Run(ctx, q.rdb, "outbox-ack", []string{k.Meta, k.Outbox, k.OutDue}, args...)
	if err != nil {
		return 0, err
	}
	n, ok := v.(int64)
	if !ok {
		return 0, fmt.Errorf("echomq: outbox-ack replied %v", v)
	}
	return n, nil
}
