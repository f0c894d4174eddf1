package echomq

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// The Bus (docs/bus.md): a topic's retained event log, read by consumer groups. This file holds
// the topic's keys, publish.lua, branded event ids, and a consumer-group reader.

// TopicKeys are the keys of one Bus topic (docs/bus.md, "Keys"): all carry the topic as their
// hash tag.
type TopicKeys struct {
	Meta, Log, Dead, Archive, Signal string
}

// BusKeys returns the keys of topic t, or an error when the name breaks the grammar.
func BusKeys(t string) (TopicKeys, error) {
	if !queueName.MatchString(t) {
		return TopicKeys{}, &Error{Code: "EMQ_BAD_NAME", Message: fmt.Sprintf("topic name %q must match %s", t, queueName)}
	}
	p := "emq:{" + t + "}:bus:"
	return TopicKeys{Meta: p + "meta", Log: p + "log", Dead: p + "dead", Archive: p + "archive", Signal: p + "signal"}, nil
}

// EventID is the branded id of a stream entry id `<ms>-<seq>`: `evt` + base62 of
// (ms − epoch) · 2^22 + seq (docs/bus.md, "Entries and event ids").
func EventID(streamID string) (string, error) {
	msText, seqText, ok := strings.Cut(streamID, "-")
	ms, err1 := strconv.ParseInt(msText, 10, 64)
	seq, err2 := strconv.ParseUint(seqText, 10, 64)
	if !ok || err1 != nil || err2 != nil || ms < Epoch || seq >= 1<<22 {
		return "", &Error{Code: "EMQ_BAD_ID", Message: fmt.Sprintf("stream id %q has no branded form", streamID)}
	}
	return "evt" + EncodeBody(uint64(ms-Epoch)<<22|seq), nil
}

// Publish appends payloads (1..1000 JSON texts) to topic's log in one publish.lua call; answers
// their stream ids, in order (EventID brands them).
func Publish(ctx context.Context, rdb redis.Scripter, scripts *Scripts, topic string, maxPayload int, payloads ...string) ([]string, error) {
	k, err := BusKeys(topic)
	if err != nil {
		return nil, err
	}
	args := []any{ProtocolVersion, maxPayload, len(payloads)}
	for _, p := range payloads {
		args = append(args, p)
	}
	v, err := scripts.Run(ctx, rdb, "publish", []string{k.Meta, k.Log}, args...)
	if err != nil {
		return nil, err
	}
	a, ok := v.([]any)
	if !ok || len(a) != len(payloads) {
		return nil, fmt.Errorf("echomq: publish replied %v", v)
	}
	out := make([]string, len(a))
	for i, x := range a {
		out[i], _ = x.(string)
	}
	return out, nil
}

// Event is one entry of a topic's log as a group handler receives it.
type Event struct {
	ID          string // the branded event id (evt…)
	StreamID    string // `<ms>-<seq>`
	Topic       string
	Payload     string // JSON text
	Traceparent string // the producer's W3C traceparent (field `tp`), "" when none
	At          int64  // the append instant (ms, server clock): the stream id's ms
	Deliveries  int64  // the server's delivery count, this delivery included
}

// EventHandler handles one event: nil acknowledges it, an error leaves it pending (re-delivered
// after the ack timeout, dead-lettered once its deliveries reach the limit).
type EventHandler func(ctx context.Context, e Event) error

// GroupOptions tune a GroupReader. Zero values take the TypeScript GroupConsumer's defaults.
type GroupOptions struct {
	Group         string        // the consumer group (a name of the key grammar); required
	Consumer      string        // this member's name ("" = <hostname>-<pid>-<8 hex digits>, as TypeScript)
	Concurrency   int           // handlers at once, and the most entries this member holds pending (1)
	MaxDeliveries int64         // deliveries before an entry is dead-lettered (5)
	AckTimeout    time.Duration // an entry idle this long without an ack is re-delivered (30s)
	From          string        // where a new group starts: "start" (0, the default) or "now" ($)
	Block         time.Duration // longest XREADGROUP BLOCK (5s)
	DeadCap       int           // dead-letter log cap (10000)
	OnError       func(error)   // failed calls (the loop backs off and resumes); nil = ignore
	// OnDeadLettered is told of each entry this member moved to the dead-letter log.
	OnDeadLettered func(streamID string, deliveries int64)
}

var nameChars = regexp.MustCompile(`[^A-Za-z0-9_.-]`)

func (o *GroupOptions) defaults() {
	if o.Consumer == "" {
		host, _ := os.Hostname()
		host = nameChars.ReplaceAllString(host, "_")
		if host == "" {
			host = "host"
		}
		suffix := fmt.Sprintf("%d-%08x", os.Getpid(), rand.Uint32())
		if len(host) > 100-len(suffix)-1 {
			host = host[:100-len(suffix)-1]
		}
		o.Consumer = host + "-" + suffix
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 1
	}
	if o.MaxDeliveries <= 0 {
		o.MaxDeliveries = 5
	}
	if o.AckTimeout <= 0 {
		o.AckTimeout = 30 * time.Second
	}
	if o.From == "" {
		o.From = "start"
	}
	if o.Block <= 0 {
		o.Block = 5 * time.Second
	}
	if o.DeadCap <= 0 {
		o.DeadCap = 10000
	}
}

// GroupReader reads a topic's log as one member of a consumer group (docs/bus.md, "Consumer
// groups"): XREADGROUP of new entries for its free slots on a blocking connection of its own,
// XACK after the handler succeeded; every min(ack timeout/3, 5 s) it heartbeats its running
// entries (XCLAIM … JUSTID, which moves no delivery count) and reclaims entries idle past the ack
// timeout (XPENDING … IDLE, then XCLAIM of one entry at a time, run alone). An entry whose
// delivery count reached MaxDeliveries is moved to the dead-letter log by dead-letter.lua
// (atomically appended and acknowledged), at once when the failing delivery was the last one.
type GroupReader struct {
	rdb     *redis.Client
	block   *redis.Client
	scripts *Scripts
	topic   string
	k       TopicKeys
	h       EventHandler
	o       GroupOptions

	mu      sync.Mutex
	lastErr map[string]string // stream id -> the last error text a handler gave it here
}

// NewGroupReader builds a reader of topic for group o.Group; rdb's options are cloned for the
// blocking connection.
func NewGroupReader(rdb *redis.Client, scripts *Scripts, topic string, h EventHandler, o GroupOptions) (*GroupReader, error) {
	k, err := BusKeys(topic)
	if err != nil {
		return nil, err
	}
	o.defaults()
	for _, n := range []string{o.Group, o.Consumer} {
		if !queueName.MatchString(n) {
			return nil, &Error{Code: "EMQ_BAD_NAME", Message: fmt.Sprintf("group or consumer name %q must match %s", n, queueName)}
		}
	}
	if o.From != "start" && o.From != "now" {
		return nil, &Error{Code: "EMQ_BAD_OPTION", Message: `From must be "start" or "now"`}
	}
	bo := *rdb.Options()
	bo.PoolSize, bo.MinIdleConns = 1, 0
	bo.ReadTimeout = o.Block + 3*time.Second
	if bo.ClientName != "" {
		bo.ClientName += ":bus"
	}
	return &GroupReader{rdb: rdb, block: redis.NewClient(&bo), scripts: scripts, topic: topic, k: k, h: h, o: o, lastErr: map[string]string{}}, nil
}

// Consumer is this member's name in the group.
func (g *GroupReader) Consumer() string { return g.o.Consumer }

func (g *GroupReader) report(err error) {
	if err != nil && g.o.OnError != nil {
		g.o.OnError(err)
	}
}

// CreateGroup creates the group (XGROUP CREATE … MKSTREAM); an existing group keeps its position.
func (g *GroupReader) CreateGroup(ctx context.Context) error {
	start := "0"
	if g.o.From == "now" {
		start = "$"
	}
	err := g.rdb.XGroupCreateMkStream(ctx, g.k.Log, g.o.Group, start).Err()
	if err != nil && strings.HasPrefix(err.Error(), "BUSYGROUP") {
		return nil
	}
	return err
}

// Run reads until ctx ends, then lets running handlers finish (their acks are sent) and returns.
// Entries a closed read was delivered at that instant stay pending and are reclaimed by a live
// member after the ack timeout.
func (g *GroupReader) Run(ctx context.Context) error {
	stopBlock := context.AfterFunc(ctx, func() { _ = g.block.Close() })
	defer stopBlock()
	tick := min(g.o.AckTimeout/3, 5*time.Second)
	fail := 100 * time.Millisecond
	backoff := func(err error) {
		if ctx.Err() != nil {
			return
		}
		g.report(err)
		sleepCtx(ctx, fail)
		fail = min(fail*2, 5*time.Second)
	}
	if err := g.CreateGroup(ctx); err != nil {
		backoff(fmt.Errorf("create group: %w", err))
	}
	var nextReclaim time.Time
	for ctx.Err() == nil {
		if time.Now().After(nextReclaim) {
			if err := g.reclaim(ctx); err != nil {
				backoff(fmt.Errorf("reclaim: %w", err))
				continue
			}
			nextReclaim = time.Now().Add(tick)
		}
		block := max(min(g.o.Block, time.Until(nextReclaim)), time.Millisecond)
		res, err := g.block.XReadGroup(ctx, &redis.XReadGroupArgs{
			Group: g.o.Group, Consumer: g.o.Consumer, Streams: []string{g.k.Log, ">"}, Count: int64(g.o.Concurrency), Block: block,
		}).Result()
		if errors.Is(err, redis.Nil) {
			fail = 100 * time.Millisecond
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			if strings.Contains(err.Error(), "NOGROUP") {
				err = errors.Join(err, g.CreateGroup(ctx)) // the log or the group was deleted: recreate it
			}
			backoff(fmt.Errorf("read: %w", err))
			continue
		}
		fail = 100 * time.Millisecond
		var batch []Event
		for _, s := range res {
			for _, m := range s.Messages {
				batch = append(batch, g.event(m, 1))
			}
		}
		g.runBatch(context.WithoutCancel(ctx), batch, tick)
	}
	return nil
}

func (g *GroupReader) event(m redis.XMessage, deliveries int64) Event {
	e := Event{StreamID: m.ID, Topic: g.topic, Deliveries: deliveries}
	e.ID, _ = EventID(m.ID)
	e.Payload, _ = m.Values["p"].(string)
	e.Traceparent, _ = m.Values["tp"].(string)
	ms, _, _ := strings.Cut(m.ID, "-")
	e.At, _ = strconv.ParseInt(ms, 10, 64)
	return e
}

// runBatch runs the handlers of a batch at once, heartbeating their entries while they run, then
// acknowledges those that succeeded in one XACK and dead-letters the failed ones at the limit.
func (g *GroupReader) runBatch(ctx context.Context, batch []Event, tick time.Duration) {
	if len(batch) == 0 {
		return
	}
	ids := make([]string, len(batch))
	for i, e := range batch {
		ids[i] = e.StreamID
	}
	stop := make(chan struct{})
	go func() { // heartbeat: a running handler keeps its entries however long it runs
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				err := g.rdb.XClaimJustID(ctx, &redis.XClaimArgs{Stream: g.k.Log, Group: g.o.Group, Consumer: g.o.Consumer, MinIdle: 0, Messages: ids}).Err()
				if err != nil {
					g.report(fmt.Errorf("heartbeat: %w", err))
				}
			}
		}
	}()
	errs := make([]error, len(batch))
	var wg sync.WaitGroup
	for i, e := range batch {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = g.safe(ctx, e) }()
	}
	wg.Wait()
	close(stop)
	var acks []string
	for i, e := range batch {
		if errs[i] == nil {
			acks = append(acks, e.StreamID)
			continue
		}
		g.failed(ctx, e, errs[i])
	}
	if len(acks) > 0 {
		if err := g.rdb.XAck(ctx, g.k.Log, g.o.Group, acks...).Err(); err != nil {
			g.report(fmt.Errorf("ack: %w", err)) // re-delivered after the ack timeout: at least once
		}
		g.mu.Lock()
		for _, id := range acks {
			delete(g.lastErr, id)
		}
		g.mu.Unlock()
	}
}

// safe runs the handler, turning a panic into an error.
func (g *GroupReader) safe(ctx context.Context, e Event) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return g.h(ctx, e)
}

// failed records a failed delivery; the last allowed one is dead-lettered at once.
func (g *GroupReader) failed(ctx context.Context, e Event, herr error) {
	text := "Error: " + herr.Error()
	if len(text) > maxErrorText {
		text = text[:maxErrorText]
	}
	g.mu.Lock()
	g.lastErr[e.StreamID] = text
	g.mu.Unlock()
	if e.Deliveries >= g.o.MaxDeliveries {
		g.bury(ctx, e.StreamID, 0)
	}
}

// bury moves one pending entry idle at least minIdle ms to the dead-letter log (dead-letter.lua).
func (g *GroupReader) bury(ctx context.Context, streamID string, minIdle int64) {
	evt, err := EventID(streamID)
	if err != nil {
		g.report(err)
		return
	}
	g.mu.Lock()
	text := g.lastErr[streamID]
	g.mu.Unlock()
	v, err := g.scripts.Run(ctx, g.rdb, "dead-letter", []string{g.k.Meta, g.k.Log, g.k.Dead},
		ProtocolVersion, g.o.Group, g.o.Consumer, streamID, evt, text, minIdle, g.o.DeadCap)
	if err != nil {
		g.report(fmt.Errorf("dead-letter %s: %w", streamID, err))
		return
	}
	a, _ := v.([]any)
	if len(a) != 2 {
		g.report(fmt.Errorf("echomq: dead-letter replied %v", v))
		return
	}
	status, _ := a[0].(int64)
	n, _ := a[1].(int64)
	g.mu.Lock()
	delete(g.lastErr, streamID)
	g.mu.Unlock()
	if status == 1 && g.o.OnDeadLettered != nil {
		g.o.OnDeadLettered(streamID, n)
	}
}

// reclaim handles entries idle past the ack timeout (at most 100 per pass): those whose delivery
// count reached the limit are dead-lettered, the others claimed one at a time and run alone.
func (g *GroupReader) reclaim(ctx context.Context) error {
	idle := g.o.AckTimeout
	start := "-"
	for done := 0; done < 100 && ctx.Err() == nil; {
		rows, err := g.rdb.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: g.k.Log, Group: g.o.Group, Idle: idle, Start: start, End: "+", Count: 10}).Result()
		if err != nil {
			if strings.Contains(err.Error(), "NOGROUP") {
				return errors.Join(err, g.CreateGroup(ctx))
			}
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		for _, r := range rows {
			done++
			if r.RetryCount >= g.o.MaxDeliveries {
				g.bury(ctx, r.ID, idle.Milliseconds())
				continue
			}
			// XCLAIM re-checks the idle time, so two members never both take the entry.
			msgs, err := g.rdb.XClaim(ctx, &redis.XClaimArgs{Stream: g.k.Log, Group: g.o.Group, Consumer: g.o.Consumer, MinIdle: idle, Messages: []string{r.ID}}).Result()
			if err != nil {
				return err
			}
			for _, m := range msgs {
				g.runBatch(context.WithoutCancel(ctx), []Event{g.event(m, r.RetryCount+1)}, min(idle/3, 5*time.Second))
			}
		}
		start = "(" + rows[len(rows)-1].ID
	}
	return nil
}
