package echomq

import (
	"fmt"
	"regexp"
)

var queueName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}$`)

// Keys are the keys of one queue, spelt by the key grammar (docs/protocol.md §2): every key
// carries the queue's name as its hash tag, so one queue lives in one cluster slot.
type Keys struct {
	Meta, Pending, Scheduled, Active, Done, Dead, Cancelled, Wake, Data, Opts, Events string
	RowPrefix                                                                         string // emq:{q}:job:
	// Outbox and OutDue hold the flow hand-offs the queue's transitions write (docs/flows.md);
	// the transition scripts take them after their other keys.
	Outbox, OutDue string
	// Refs maps business ids to wire ids and back (docs/queue.md, business ids): enqueue's
	// refs mode takes it last.
	Refs string
}

// QueueKeys returns the keys of queue q, or an error when the name breaks the grammar.
func QueueKeys(q string) (Keys, error) {
	if !queueName.MatchString(q) {
		return Keys{}, &Error{Code: "EMQ_BAD_NAME", Message: fmt.Sprintf("queue name %q must match %s", q, queueName)}
	}
	p := "emq:{" + q + "}:"
	return Keys{
		Meta: p + "meta", Pending: p + "pending", Scheduled: p + "scheduled", Active: p + "active",
		Done: p + "done", Dead: p + "dead", Cancelled: p + "cancelled", Wake: p + "wake",
		Data: p + "data", Opts: p + "opts", Events: p + "events", RowPrefix: p + "job:",
		Outbox: p + "outbox", OutDue: p + "outdue", Refs: p + "refs",
	}, nil
}

// Row is the key of a job's row.
func (k Keys) Row(id string) string { return k.RowPrefix + id }

// Cluster-wide keys of the node leases (docs/protocol.md §1).
const (
	NodeSeqKey = "{emq}:node-seq"
	NodesKey   = "{emq}:nodes"
	// ProcsKey holds the process descriptions of node.lua's describing form (§1).
	ProcsKey = "{emq}:procs"
)
