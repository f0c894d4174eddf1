package echomq

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Job is what a handler receives.
type Job struct {
	Queue   string
	ID      string
	Payload string // JSON text, as the producer wrote it
	Attempt int64  // 1 on the first run
	Token   int64
	// Name is the job's name (its extras' "n"), "" for a job enqueued without one.
	Name string
	// Flow is claim's flow flag: "" a plain job, "c" a flow child (its row names a parent: its
	// settle owes the parent a hand-off through the outbox), "p" a flow parent released by its
	// children (their results are its row's r:<child> fields), "pc" both.
	Flow string
	// ChildResults are a released flow parent's children (Flow holds "p"), read from its row
	// before the handler runs, sorted by key: each child's queue, policy, key, and its outcome
	// (done, failed, cancelled) with the result JSON or error text.
	ChildResults []ChildResult
}

// Handler runs one job and returns its result as JSON text ("" for none). An error schedules a
// retry after the backoff, or buries the job after its last attempt; Fatal(err) buries at once.
// ctx is cancelled when the job's lease is lost (another consumer may run it now).
type Handler func(ctx context.Context, job Job) (string, error)

// WorkerOptions tune the consumer loop. Zero values take the defaults named below.
type WorkerOptions struct {
	Concurrency     int           // jobs run at once (1)
	LeaseMs         int64         // lease of each claim, extended every lease/3 while running (30000)
	MaxAttempts     int           // default attempt limit for jobs without their own (3)
	Backoff         string        // default backoff for jobs without their own ("e:1000")
	KeepDone        int           // done rows kept (1000; -1 = keep none)
	DeadCap         int           // morgue cap (10000)
	PromoteLimit    int           // scheduled jobs promoted per claim (1000)
	ReapLimit       int           // expired leases reaped per call (100)
	MaxIdle         time.Duration // longest BLPOP on the wake list (5s)
	ShutdownTimeout time.Duration // how long Run waits for running handlers after ctx ends (10s)
	OnError         func(error)   // failed calls (the loop retries them); nil = ignore
}

func (o *WorkerOptions) defaults() {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.Concurrency, 1)
	def(&o.MaxAttempts, 3)
	def(&o.KeepDone, 1000)
	def(&o.DeadCap, 10000)
	def(&o.PromoteLimit, 1000)
	def(&o.ReapLimit, 100)
	if o.KeepDone < 0 {
		o.KeepDone = 0
	}
	if o.LeaseMs == 0 {
		o.LeaseMs = 30000
	}
	if o.Backoff == "" {
		o.Backoff = "e:1000"
	}
	if o.MaxIdle == 0 {
		o.MaxIdle = 5 * time.Second
	}
	if o.ShutdownTimeout == 0 {
		o.ShutdownTimeout = 10 * time.Second
	}
}

// Worker is the seeds' consumer loop for one queue: claim up to the free slots, run, complete or
// retry; block on the queue's wake list when idle (never busy-poll); reap expired leases every
// min(lease/3, 5 s); back off from 100 ms to 5 s after a failed call and always resume.
type Worker struct {
	q     *Queue
	block *redis.Client // a connection of its own for BLPOP, so a block never stalls other calls
	h     Handler
	o     WorkerOptions
	slots chan struct{}
	wg    sync.WaitGroup
}

// NewWorker builds a worker on q; rdb's options are cloned for the blocking connection.
func NewWorker(rdb *redis.Client, q *Queue, h Handler, o WorkerOptions) *Worker {
	o.defaults()
	bo := *rdb.Options()
	bo.PoolSize, bo.MinIdleConns = 1, 0
	bo.ReadTimeout = o.MaxIdle + 3*time.Second
	if bo.ClientName != "" {
		bo.ClientName += ":block"
	}
	return &Worker{q: q, block: redis.NewClient(&bo), h: h, o: o, slots: make(chan struct{}, o.Concurrency)}
}

func (w *Worker) report(err error) {
	if err != nil && w.o.OnError != nil {
		w.o.OnError(err)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// Run consumes until ctx ends, then waits up to ShutdownTimeout for running handlers (their
// completions are still sent) and returns. Jobs still running after that are left to their lease.
func (w *Worker) Run(ctx context.Context) error {
	reapCtx, stopReap := context.WithCancel(ctx)
	go w.reaper(reapCtx)
	defer stopReap()
	stopBlock := context.AfterFunc(ctx, func() { _ = w.block.Close() }) // interrupts a BLPOP at once
	defer stopBlock()
	fail := 100 * time.Millisecond
	for ctx.Err() == nil {
		free := cap(w.slots) - len(w.slots)
		if free == 0 {
			select { // every slot busy: wait for one, do not claim
			case w.slots <- struct{}{}:
				<-w.slots
			case <-ctx.Done():
			}
			continue
		}
		wait, jobs, err := w.q.Claim(ctx, free, w.o.LeaseMs, w.o.PromoteLimit)
		if err != nil {
			if ctx.Err() == nil {
				w.report(fmt.Errorf("claim: %w", err))
				sleepCtx(ctx, fail)
				fail = min(fail*2, 5*time.Second)
			}
			continue
		}
		fail = 100 * time.Millisecond
		for _, j := range jobs {
			w.slots <- struct{}{}
			w.wg.Add(1)
			go w.run(j)
		}
		if wait == -1 || len(jobs) == free {
			continue // more is pending, or every slot took a job: claim again when one frees
		}
		w.idle(ctx, wait)
	}
	return w.drain()
}

// idle blocks on the wake list for min(ms until the next scheduled job, MaxIdle).
func (w *Worker) idle(ctx context.Context, wait int64) {
	d := w.o.MaxIdle
	if wait >= 0 && time.Duration(wait)*time.Millisecond < d {
		d = time.Duration(wait) * time.Millisecond
	}
	if d <= 0 {
		return // a scheduled job is due now: claim promotes it
	}
	secs := strconv.FormatFloat(d.Seconds(), 'f', 3, 64)
	err := w.block.Do(ctx, "BLPOP", w.q.Keys.Wake, secs).Err()
	if err != nil && !errors.Is(err, redis.Nil) && ctx.Err() == nil {
		w.report(fmt.Errorf("blpop: %w", err))
		sleepCtx(ctx, 100*time.Millisecond)
	}
}

func (w *Worker) drain() error {
	done := make(chan struct{})
	go func() { w.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-time.After(w.o.ShutdownTimeout):
		return fmt.Errorf("echomq: %d handlers still running after %s; their leases will expire", len(w.slots), w.o.ShutdownTimeout)
	}
}

func (w *Worker) reaper(ctx context.Context) {
	every := min(time.Duration(w.o.LeaseMs)*time.Millisecond/3, 5*time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, _, err := w.q.Reap(ctx, w.o.ReapLimit, w.o.MaxAttempts, w.o.DeadCap); err != nil && ctx.Err() == nil {
				w.report(fmt.Errorf("reap: %w", err))
			}
		}
	}
}
