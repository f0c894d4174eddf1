package echomq

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/redis/go-redis/v9"
)

// Queue is one queue of the wire: each method is one script call (docs/protocol.md §5).
type Queue struct {
	Name    string
	Keys    Keys
	rdb     redis.Scripter
	scripts *Scripts
}

// NewQueue binds queue name to a connection and the loaded scripts.
func NewQueue(rdb redis.Scripter, scripts *Scripts, name string) (*Queue, error) {
	k, err := QueueKeys(name)
	if err != nil {
		return nil, err
	}
	return &Queue{Name: name, Keys: k, rdb: rdb, scripts: scripts}, nil
}

// NewJob is one job to enqueue. Payload is JSON text (opaque to the scripts).
type NewJob struct {
	ID          string // a branded job id (mint it with Minter.Mint("job"))
	Payload     string
	DelayMs     int64  // 0 = none; when both are given, the delay wins
	RunAtMs     int64  // epoch ms on the server clock, 0 = none
	MaxAttempts int    // 0 = the consumer's default
	Backoff     string // "" = the consumer's default, "f:<ms>" fixed, "e:<ms>" exponential
	Name        string // "" = none, else the job's name (1..128 bytes, no control characters): its extras' "n"
	// Ref is the job's business id ("" = none; 1..200 bytes, no control characters, not of the
	// branded form): while a job holds it, enqueueing it again adds nothing (docs/queue.md).
	Ref string
}

// DefaultMaxPayload is the payload limit passed to enqueue (the scripts take it per call); the
// TypeScript runtime's default is the same 512 KiB.
const DefaultMaxPayload = 512 * 1024

// Enqueue adds jobs (1..1000) in one call; added[i] is false when a job with that id existed,
// or a job held its business id (Ref).
func (q *Queue) Enqueue(ctx context.Context, maxPayload int, jobs []NewJob) ([]bool, error) {
	ids, err := q.EnqueueIDs(ctx, maxPayload, jobs)
	if err != nil {
		return nil, err
	}
	added := make([]bool, len(ids))
	for i, id := range ids {
		added[i] = id == jobs[i].ID
	}
	return added, nil
}

// EnqueueIDs adds jobs (1..1000) in one call and answers each job's id: its own when added, the
// id of the job holding its business id (Ref) when held, "" when a job with its id existed.
func (q *Queue) EnqueueIDs(ctx context.Context, maxPayload int, jobs []NewJob) ([]string, error) {
	args := []any{ProtocolVersion, maxPayload, len(jobs), ""}
	for _, j := range jobs {
		maxA := ""
		if j.MaxAttempts > 0 {
			maxA = strconv.Itoa(j.MaxAttempts)
		}
		args = append(args, j.ID, j.Payload, j.DelayMs, j.RunAtMs, maxA, j.Backoff)
	}
	if named := slices.ContainsFunc(jobs, func(j NewJob) bool { return j.Name != "" }); named {
		// The extras form: one lane per job ("" = priority 0), then one extras text per job.
		for range jobs {
			args = append(args, "")
		}
		for _, j := range jobs {
			x := ""
			if j.Name != "" {
				b, err := json.Marshal(map[string]string{"n": j.Name})
				if err != nil {
					return nil, err
				}
				x = string(b)
			}
			args = append(args, x)
		}
	}
	k := q.Keys
	keys := []string{k.Meta, k.Pending, k.Scheduled, k.Wake, k.Data, k.Opts, k.Events}
	if slices.ContainsFunc(jobs, func(j NewJob) bool { return j.Ref != "" }) {
		// Business ids: the refs key last, and one business id per job last ("" = none).
		keys = append(keys, k.Refs)
		for _, j := range jobs {
			args = append(args, j.Ref)
		}
	}
	v, err := q.scripts.Run(ctx, q.rdb, "enqueue", keys, args...)
	if err != nil {
		return nil, err
	}
	a, ok := v.([]any)
	if !ok || len(a) != len(jobs) {
		return nil, fmt.Errorf("echomq: enqueue replied %v, expected %d entries", v, len(jobs))
	}
	ids := make([]string, len(jobs))
	for i, x := range a {
		switch r := x.(type) {
		case int64:
			if r == 1 {
				ids[i] = jobs[i].ID
			}
		case string:
			ids[i] = r
		default:
			return nil, fmt.Errorf("echomq: enqueue replied %T at %d, expected an integer or an id", x, i)
		}
	}
	return ids, nil
}

// Claimed is one job handed out by Claim.
type Claimed struct {
	ID      string
	Token   int64 // the fencing token (an integer reply; sent back as its decimal text)
	Attempt int64 // attempts started, this one included
	Payload string
	Extras  string // "" for a plain job, else a JSON object: "t" its own timeout in ms, "tp" a traceparent
	Flow    string // "" a plain job, "c" a flow child, "p" a flow parent its children released, "pc" both
}

// claimWidth is the fields per job this peer reads from claim's reply; a reply declares its own
// width (>= this), and the fields beyond these are skipped (docs/protocol.md §9).
const claimWidth = 6

// Claim promotes up to promote due scheduled jobs and claims up to n pending jobs with a lease
// of leaseMs. wait is -1 when jobs remain pending, -2 when none is scheduled, else the ms until
// the next scheduled job is due. The queue's rate limit and lane policy are the stored ones
// (policy.lua writes them; claim.lua reads meta `rate` and `gpol`): a claim sends no limits. It
// sends `fair` (claim's optional default-fair argument): a queue with lanes and no stored policy
// is dealt exact equal shares, as by the TypeScript runtime (docs/protocol.md, claim), and
// `stamp` = 1: every claim of the queue records the attempt's start in the row's `started`
// (attempt history, docs/protocol.md §3).
func (q *Queue) Claim(ctx context.Context, n int, leaseMs int64, promote int) (wait int64, jobs []Claimed, err error) {
	k := q.Keys
	v, err := q.scripts.Run(ctx, q.rdb, "claim", []string{k.Meta, k.Pending, k.Scheduled, k.Active, k.Wake, k.Data, k.Opts, k.RowPrefix, k.Events},
		ProtocolVersion, n, leaseMs, promote, "fair", "1")
	if err != nil {
		return 0, nil, err
	}
	return parseClaim(v)
}

// parseClaim reads claim's reply { wait, width, <width fields per job>... }: per job id, token,
// attempt, payload, extras, flow, then any fields a later version appends (skipped).
func parseClaim(v any) (wait int64, jobs []Claimed, err error) {
	a, ok := v.([]any)
	if !ok || len(a) < 2 {
		return 0, nil, fmt.Errorf("echomq: claim replied %v", v)
	}
	wait, ok1 := a[0].(int64)
	width, ok2 := a[1].(int64)
	if !ok1 || !ok2 || width < claimWidth || (int64(len(a))-2)%width != 0 {
		return 0, nil, fmt.Errorf("echomq: claim replied %v (expected wait, a width >= %d, then width fields per job)", v, claimWidth)
	}
	w := int(width)
	for i := 2; i < len(a); i += w {
		id, _ := a[i].(string)
		tok, _ := a[i+1].(int64)
		att, _ := a[i+2].(int64)
		p, _ := a[i+3].(string)
		x, _ := a[i+4].(string)
		f, _ := a[i+5].(string)
		jobs = append(jobs, Claimed{ID: id, Token: tok, Attempt: att, Payload: p, Extras: x, Flow: f})
	}
	return wait, jobs, nil
}

// Done is one completion: the job, its token, and its JSON result ("" for none). Child marks a
// flow child (claim's flow flag holds "c"): its completion writes its parent's hand-off, so the
// call carries the queue's outbox keys.
type Done struct {
	ID     string
	Token  int64
	Result string
	Child  bool
}

// Complete completes jobs (1..1000), keeping keepDone done rows; ok[i] is false when refused
// (stale token or no longer active).
func (q *Queue) Complete(ctx context.Context, keepDone int, done []Done) ([]bool, error) {
	k := q.Keys
	keys := []string{k.Meta, k.Active, k.Done, k.Data, k.RowPrefix, k.Events}
	args := []any{ProtocolVersion, keepDone, len(done)}
	for _, d := range done {
		keys = append(keys, k.Row(d.ID))
		args = append(args, d.ID, strconv.FormatInt(d.Token, 10), d.Result)
	}
	if anyChild(done, func(d Done) bool { return d.Child }) {
		keys = append(keys, k.Outbox, k.OutDue) // a flow child's hand-off
	}
	v, err := q.scripts.Run(ctx, q.rdb, "complete", keys, args...)
	if err != nil {
		return nil, err
	}
	return flags(v, len(done), "complete")
}

// anyChild reports whether a settle batch holds a flow child (the call then needs the outbox keys).
func anyChild[T any](xs []T, child func(T) bool) bool {
	for _, x := range xs {
		if child(x) {
			return true
		}
	}
	return false
}

// IsChild reports whether claim's flow flag marks a flow child ("c" or "pc").
func IsChild(flow string) bool { return strings.Contains(flow, "c") }

// IsReleasedParent reports whether claim's flow flag marks a released flow parent ("p" or "pc").
func IsReleasedParent(flow string) bool { return strings.Contains(flow, "p") }

// RetryOutcome is what retry.lua did: 0 refused, 1 scheduled again at At, 2 buried at At, 3
// cancelled at At (a cancel was requested while it ran).
type RetryOutcome struct {
	Kind int64
	At   int64
}

// AttemptWorker names this process in the attempt history records its retries write (retry's optional
// worker argument, docs/protocol.md §3): `<host name>:<pid>`, control characters dropped, at
// most 128 bytes, as the TypeScript runtime names its own.
var AttemptWorker = workerName()

func workerName() string {
	host, _ := os.Hostname()
	w := strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, fmt.Sprintf("%s:%d", host, os.Getpid()))
	for len(w) > 128 {
		_, size := lastRune(w)
		w = w[:len(w)-size]
	}
	return w
}

// lastRune is the last rune of s and its size in bytes (1 for a stray byte).
func lastRune(s string) (rune, int) {
	for i := len(s) - 1; i >= 0 && i >= len(s)-4; i-- {
		if s[i] < 0x80 || s[i] >= 0xC0 {
			return rune(s[i]), len(s) - i
		}
	}
	return rune(s[len(s)-1]), 1
}

// Retry schedules the job after its backoff or buries it (last attempt, or fatal). h.Child marks
// a flow child (claim's flow flag holds "c"): a bury or cancel writes its parent's hand-off, so
// the call carries the queue's outbox keys.
func (q *Queue) Retry(ctx context.Context, h Held, errText string, fatal bool, defMax int, defBackoff string, deadCap int) (RetryOutcome, error) {
	k := q.Keys
	f := "0"
	if fatal {
		f = "1"
	}
	keys := []string{k.Meta, k.Active, k.Scheduled, k.Dead, k.Wake, k.Data, k.RowPrefix, k.Row(h.ID), k.Events, k.Cancelled}
	if h.Child {
		keys = append(keys, k.Outbox, k.OutDue)
	}
	v, err := q.scripts.Run(ctx, q.rdb, "retry", keys,
		ProtocolVersion, h.ID, strconv.FormatInt(h.Token, 10), errText, f, defMax, defBackoff, deadCap, AttemptWorker, "")
	if err != nil {
		return RetryOutcome{}, err
	}
	a, _ := v.([]any)
	if len(a) == 0 {
		return RetryOutcome{}, fmt.Errorf("echomq: retry replied %v", v)
	}
	out := RetryOutcome{}
	out.Kind, _ = a[0].(int64)
	if len(a) > 1 {
		out.At, _ = a[1].(int64)
	}
	return out, nil
}

// Held is a job held under a token (for Extend, Retry and Release). Child marks a flow child
// (claim's flow flag holds "c"): Retry and Release then pass the queue's outbox keys, which the
// scripts require when they end a flow child (a bury, or a cancel of a flagged job).
type Held struct {
	ID    string
	Token int64
	Child bool
}

// Extend answers of extend.lua, per job.
const (
	LeaseLost       = 0 // the lease was lost: the holder must stop, its outcome would be refused
	Extended        = 1 // the lease runs leaseMs from now
	CancelRequested = 2 // extended, and a cancel was requested: stop the handler, end through Retry
)

// Extend sets the leases of held jobs to leaseMs from now; state[i] is LeaseLost, Extended or
// CancelRequested.
func (q *Queue) Extend(ctx context.Context, leaseMs int64, held []Held) ([]int64, error) {
	k := q.Keys
	keys := []string{k.Meta, k.Active, k.RowPrefix}
	args := []any{ProtocolVersion, leaseMs, len(held)}
	for _, h := range held {
		keys = append(keys, k.Row(h.ID))
		args = append(args, h.ID, strconv.FormatInt(h.Token, 10))
	}
	v, err := q.scripts.Run(ctx, q.rdb, "extend", keys, args...)
	if err != nil {
		return nil, err
	}
	a, ok := v.([]any)
	if !ok || len(a) != len(held) {
		return nil, fmt.Errorf("echomq: extend replied %v, expected %d integers", v, len(held))
	}
	out := make([]int64, len(a))
	for i, x := range a {
		f, ok := x.(int64)
		if !ok || f < LeaseLost || f > CancelRequested {
			return nil, fmt.Errorf("echomq: extend replied %v at %d, expected 0, 1 or 2", x, i)
		}
		out[i] = f
	}
	return out, nil
}

// Release hands held jobs back to the front of pending, giving their attempt back.
func (q *Queue) Release(ctx context.Context, held []Held) ([]bool, error) {
	k := q.Keys
	keys := []string{k.Meta, k.Active, k.Pending, k.Wake, k.RowPrefix, k.Events, k.Cancelled, k.Data}
	args := []any{ProtocolVersion, len(held)}
	for _, h := range held {
		keys = append(keys, k.Row(h.ID))
		args = append(args, h.ID, strconv.FormatInt(h.Token, 10))
	}
	if anyChild(held, func(h Held) bool { return h.Child }) {
		keys = append(keys, k.Outbox, k.OutDue) // a flagged flow child ends cancelled: its hand-off
	}
	v, err := q.scripts.Run(ctx, q.rdb, "release", keys, args...)
	if err != nil {
		return nil, err
	}
	return flags(v, len(held), "release")
}

// Reap moves up to limit expired leases back to pending (or to the morgue when spent; a job
// flagged by cancel ends cancelled, counted in neither). It always passes the outbox keys: it
// cannot know whether an expired job is a flow child.
func (q *Queue) Reap(ctx context.Context, limit, defMax, deadCap int) (requeued, buried int64, err error) {
	k := q.Keys
	v, err := q.scripts.Run(ctx, q.rdb, "reap", []string{k.Meta, k.Active, k.Pending, k.Dead, k.Wake, k.Data, k.RowPrefix, k.Events, k.Cancelled, k.Outbox, k.OutDue},
		ProtocolVersion, limit, defMax, deadCap)
	if err != nil {
		return 0, 0, err
	}
	a, _ := v.([]any)
	if len(a) < 3 { // requeued, buried, cancelled, then an id and attempt per reaped job
		return 0, 0, fmt.Errorf("echomq: reap replied %v", v)
	}
	requeued, _ = a[0].(int64)
	buried, _ = a[1].(int64)
	return requeued, buried, nil
}

// Peek reads one job atomically: its row's fields plus `payload` (nil when there is no such job).
func (q *Queue) Peek(ctx context.Context, id string) (map[string]string, error) {
	k := q.Keys
	v, err := q.scripts.Run(ctx, q.rdb, "peek", []string{k.Meta, k.Scheduled, k.Data, k.Opts, k.RowPrefix, k.Row(id)}, ProtocolVersion, id)
	if err != nil {
		return nil, err
	}
	a, _ := v.([]any)
	if len(a) == 0 {
		return nil, nil
	}
	out := make(map[string]string, len(a)/2)
	for i := 0; i+1 < len(a); i += 2 {
		f, _ := a[i].(string)
		val, _ := a[i+1].(string)
		out[f] = val
	}
	return out, nil
}

// flags reads an array of n integer 0/1 replies.
func flags(v any, n int, script string) ([]bool, error) {
	a, ok := v.([]any)
	if !ok || len(a) != n {
		return nil, fmt.Errorf("echomq: %s replied %v, expected %d integers", script, v, n)
	}
	out := make([]bool, n)
	for i, x := range a {
		f, ok := x.(int64)
		if !ok {
			return nil, fmt.Errorf("echomq: %s replied %T at %d, expected an integer", script, x, i)
		}
		out[i] = f == 1
	}
	return out, nil
}
