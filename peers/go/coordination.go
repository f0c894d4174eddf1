package echomq

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Coordination (docs/coordination.md, docs/protocol.md "Coordination"): fenced leases through
// lease.lua and counting semaphores through semaphore.lua, on the keys the TypeScript
// CoordinationService uses, so a Go holder and a TypeScript holder contend for the same names.

// ErrLeaseLost is returned by KeepLease when a renewal was refused (a newer token was issued, or
// the lease was released) or when the lease may have lapsed without a successful renewal.
var ErrLeaseLost = &Error{Code: "EMQ_LEASE_LOST", Message: "the lease was lost"}

// Limits of the coordination scripts' arguments.
const (
	MinCoordTTL   = 100 * time.Millisecond
	MaxCoordTTL   = time.Hour
	MaxPermits    = 100000
	maxOwnerBytes = 64
)

var ownerChars = regexp.MustCompile(`^[!-~]{1,64}$`) // printable ASCII, no space

// placeholder is the owner / holder argument of the reading forms, which ignore it.
const placeholder = "-"

// LeaseKey is the key of lease name: `emq:{co:<name>}:lease`, a hash without a TTL (the fence
// outlives every holder).
func LeaseKey(name string) (string, error) { return coordKey(name, "lease") }

// SemaphoreKey is the key of semaphore name: `emq:{co:<name>}:sem`, a sorted set of holder ids
// scored by their expiry on the server clock.
func SemaphoreKey(name string) (string, error) { return coordKey(name, "sem") }

func coordKey(name, kind string) (string, error) {
	what := map[string]string{"lease": "lease", "sem": "semaphore"}[kind]
	if !queueName.MatchString(name) || name == "." || name == ".." {
		return "", &Error{Code: "EMQ_BAD_NAME", Message: fmt.Sprintf("%s name %q must match %s and not be . or ..", what, name, queueName)}
	}
	return "emq:{co:" + name + "}:" + kind, nil
}

// Coordinator calls the coordination scripts on one connection.
type Coordinator struct {
	rdb     redis.Scripter
	scripts *Scripts
}

// NewCoordinator binds the coordination scripts to a connection (RESP2, as every script call).
// It fails when lease.lua or semaphore.lua was not loaded.
func NewCoordinator(rdb redis.Scripter, scripts *Scripts) (*Coordinator, error) {
	for _, s := range []string{"lease", "semaphore"} {
		if !scripts.Has(s) {
			return nil, fmt.Errorf("echomq: no script %q loaded (build lua/ with `npm run lua:build`)", s)
		}
	}
	return &Coordinator{rdb: rdb, scripts: scripts}, nil
}

// Lease is the state of a lease: the holder's owner, its fencing token and its expiry on the
// server clock. Token is strictly greater than every token issued for the name before it (and
// below 2^53); 0 means none was ever issued.
type Lease struct {
	Name      string
	Owner     string
	Token     int64
	ExpiresAt time.Time // the zero time when released (or never held)
	sent      time.Time // the local instant the call that returned it was sent
}

// Held reports whether the lease is held at instant now (its owner set and its expiry later).
func (l Lease) Held(now time.Time) bool {
	return l.Owner != "" && !l.ExpiresAt.IsZero() && l.ExpiresAt.After(now)
}

// AcquireLease takes lease name for owner for ttl. ok is true with the lease taken (a new,
// larger token) or extended (owner already held it: same token, re-entrant); false with the
// current holder's lease when another owner holds it.
func (c *Coordinator) AcquireLease(ctx context.Context, name, owner string, ttl time.Duration) (Lease, bool, error) {
	if err := checkOwner("owner", owner); err != nil {
		return Lease{}, false, err
	}
	ms, err := coordTTL(ttl)
	if err != nil {
		return Lease{}, false, err
	}
	return c.lease(ctx, name, "acquire", owner, "", ms)
}

// RenewLease extends lease l (held by l.Owner with l.Token) by ttl. It succeeds while no newer
// token was issued and the lease was not released, even after its expiry passed (nobody else
// can have held it); ok false returns the current state: the holder must stop.
func (c *Coordinator) RenewLease(ctx context.Context, l Lease, ttl time.Duration) (Lease, bool, error) {
	if err := checkHeld(l); err != nil {
		return Lease{}, false, err
	}
	ms, err := coordTTL(ttl)
	if err != nil {
		return Lease{}, false, err
	}
	return c.lease(ctx, l.Name, "renew", l.Owner, strconv.FormatInt(l.Token, 10), ms)
}

// ReleaseLease gives lease l up, so another owner may acquire it at once. ok is false when l was
// no longer the current holding (a newer token, or released already): nothing is changed then.
func (c *Coordinator) ReleaseLease(ctx context.Context, l Lease) (bool, error) {
	if err := checkHeld(l); err != nil {
		return false, err
	}
	_, ok, err := c.lease(ctx, l.Name, "release", l.Owner, strconv.FormatInt(l.Token, 10), 0)
	return ok, err
}

// ReadLease reads lease name without writing: held, and the last holder's owner, token and
// expiry (Owner "" once released; Token 0 when none was ever issued).
func (c *Coordinator) ReadLease(ctx context.Context, name string) (Lease, bool, error) {
	return c.lease(ctx, name, "read", placeholder, "", 0)
}

// lease runs lease.lua once: ARGV version, op, owner, token, ttl ms; the reply is
// {status, owner, token, exp ms}.
func (c *Coordinator) lease(ctx context.Context, name, op, owner, token string, ttlMs int64) (Lease, bool, error) {
	key, err := LeaseKey(name)
	if err != nil {
		return Lease{}, false, err
	}
	sent := time.Now()
	v, err := c.scripts.Run(ctx, c.rdb, "lease", []string{key}, ProtocolVersion, op, owner, token, ttlMs)
	if err != nil {
		return Lease{}, false, err
	}
	a, ok := v.([]any)
	if !ok || len(a) != 4 {
		return Lease{}, false, fmt.Errorf("echomq: lease.lua replied %T %v, expected an array of 4", v, v)
	}
	status, ok1 := a[0].(int64)
	holder, ok2 := a[1].(string)
	tok, ok3 := a[2].(string)
	exp, ok4 := a[3].(int64)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return Lease{}, false, fmt.Errorf("echomq: lease.lua replied %v, expected {integer, owner, token, integer}", a)
	}
	l := Lease{Name: name, Owner: holder, ExpiresAt: msTime(exp), sent: sent}
	if tok != "" {
		if l.Token, err = strconv.ParseInt(tok, 10, 64); err != nil || l.Token <= 0 {
			return Lease{}, false, fmt.Errorf("echomq: lease.lua replied token %q, expected a positive decimal integer", tok)
		}
	}
	return l, status == 1, nil
}

// KeepLease renews l (acquired with ttl) every ttl/3 until ctx ends (it returns ctx's error) or the lease is lost:
// it returns ErrLeaseLost when a renewal is refused, or when the last successful renewal's send
// instant + ttl passes without another one (a partition, a slow server): from then on another
// owner may hold the name. A failed renewal is retried at the next tick. Run the guarded work
// under a context cancelled when KeepLease returns. A renewal still in flight at the deadline is
// abandoned, so the loss is reported on time even when the server hangs.
func (c *Coordinator) KeepLease(ctx context.Context, l Lease, ttl time.Duration, onError func(error)) error {
	if _, err := coordTTL(ttl); err != nil {
		return err
	}
	// The local deadline: the send instant of the call that returned l + ttl (the server's
	// expiry is now + ttl on its clock at a later instant), else the earlier of now + ttl and
	// the server's expiry.
	deadline := l.sent.Add(ttl)
	if l.sent.IsZero() {
		deadline = time.Now().Add(ttl)
		if l.ExpiresAt.Before(deadline) {
			deadline = l.ExpiresAt
		}
	}
	t := time.NewTicker(ttl / 3)
	defer t.Stop()
	for {
		wait := time.Until(deadline)
		if wait <= 0 {
			return ErrLeaseLost
		}
		lapse := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			lapse.Stop()
			return ctx.Err()
		case <-lapse.C:
			return ErrLeaseLost
		case <-t.C:
			lapse.Stop()
			// A renewal still in flight at the deadline is abandoned: the lease may have lapsed.
			sent := time.Now()
			rctx, rcancel := context.WithDeadline(ctx, deadline)
			_, ok, err := c.RenewLease(rctx, l, ttl)
			rcancel()
			switch {
			case err != nil:
				if ctx.Err() != nil {
					return ctx.Err()
				}
				if !time.Now().Before(deadline) {
					return ErrLeaseLost
				}
				if onError != nil {
					onError(err)
				}
			case !ok:
				return ErrLeaseLost
			default:
				deadline = sent.Add(ttl)
			}
		}
	}
}

// Permit is one holder's slot of a counting semaphore. After an acquire or renewal, Count is the
// number of live permits (this one included) and ExpiresAt this permit's expiry; after a refused
// acquire, Count is the live permits and ExpiresAt the earliest of their expiries (when a slot
// frees at the latest).
type Permit struct {
	Name, Holder string
	Count        int64
	ExpiresAt    time.Time
}

// AcquirePermit takes one of limit permits of semaphore name for holder for ttl (a holder that
// has one already gets it extended). ok false: every permit is held.
func (c *Coordinator) AcquirePermit(ctx context.Context, name, holder string, limit int, ttl time.Duration) (Permit, bool, error) {
	if err := checkOwner("holder", holder); err != nil {
		return Permit{}, false, err
	}
	if limit < 1 || limit > MaxPermits {
		return Permit{}, false, &Error{Code: "EMQ_BAD_ARG", Message: fmt.Sprintf("limit %d must be in 1..%d", limit, MaxPermits)}
	}
	ms, err := coordTTL(ttl)
	if err != nil {
		return Permit{}, false, err
	}
	return c.sem(ctx, name, "acquire", holder, limit, ms)
}

// RenewPermit extends holder's permit by ttl. ok false: the permit expired or was released (an
// expired permit may already be counted out and given to another holder): the holder must stop.
func (c *Coordinator) RenewPermit(ctx context.Context, name, holder string, ttl time.Duration) (Permit, bool, error) {
	if err := checkOwner("holder", holder); err != nil {
		return Permit{}, false, err
	}
	ms, err := coordTTL(ttl)
	if err != nil {
		return Permit{}, false, err
	}
	return c.sem(ctx, name, "renew", holder, 0, ms)
}

// ReleasePermit gives holder's permit back; false when it held none.
func (c *Coordinator) ReleasePermit(ctx context.Context, name, holder string) (bool, error) {
	if err := checkOwner("holder", holder); err != nil {
		return false, err
	}
	_, ok, err := c.sem(ctx, name, "release", holder, 0, 0)
	return ok, err
}

// ReadPermits counts the live permits of semaphore name, without writing.
func (c *Coordinator) ReadPermits(ctx context.Context, name string) (int64, error) {
	p, _, err := c.sem(ctx, name, "read", placeholder, 0, 0)
	return p.Count, err
}

// sem runs semaphore.lua once: ARGV version, op, holder, limit, ttl ms; the reply is three
// integers {status, count, exp ms} ({count, 0, 0} for a read).
func (c *Coordinator) sem(ctx context.Context, name, op, holder string, limit int, ttlMs int64) (Permit, bool, error) {
	key, err := SemaphoreKey(name)
	if err != nil {
		return Permit{}, false, err
	}
	v, err := c.scripts.Run(ctx, c.rdb, "semaphore", []string{key}, ProtocolVersion, op, holder, limit, ttlMs)
	if err != nil {
		return Permit{}, false, err
	}
	a, ok := v.([]any)
	if !ok || len(a) != 3 {
		return Permit{}, false, fmt.Errorf("echomq: semaphore.lua replied %T %v, expected an array of 3", v, v)
	}
	var n [3]int64
	for i := range n {
		if n[i], ok = a[i].(int64); !ok {
			return Permit{}, false, fmt.Errorf("echomq: semaphore.lua replied %v, expected 3 integers", a)
		}
	}
	if op == "read" {
		return Permit{Name: name, Count: n[0]}, true, nil
	}
	return Permit{Name: name, Holder: holder, Count: n[1], ExpiresAt: msTime(n[2])}, n[0] == 1, nil
}

func checkOwner(what, v string) error {
	if !ownerChars.MatchString(v) {
		return &Error{Code: "EMQ_BAD_ARG", Message: fmt.Sprintf("%s %q must be 1..%d bytes of printable ASCII without spaces", what, v, maxOwnerBytes)}
	}
	return nil
}

func checkHeld(l Lease) error {
	if err := checkOwner("owner", l.Owner); err != nil {
		return err
	}
	if l.Token <= 0 {
		return &Error{Code: "EMQ_BAD_ARG", Message: fmt.Sprintf("token %d: renew and release take the token an acquire returned", l.Token)}
	}
	return nil
}

// coordTTL is ttl in whole milliseconds, refused outside 100 ms .. 1 h.
func coordTTL(ttl time.Duration) (int64, error) {
	if ttl < MinCoordTTL || ttl > MaxCoordTTL || ttl%time.Millisecond != 0 {
		return 0, &Error{Code: "EMQ_BAD_ARG", Message: fmt.Sprintf("ttl %v must be whole milliseconds in %v..%v", ttl, MinCoordTTL, MaxCoordTTL)}
	}
	return ttl.Milliseconds(), nil
}

// msTime is an epoch-ms instant of the server clock; 0 is the zero time.
func msTime(ms int64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// IsLeaseLost reports whether err is (or wraps) ErrLeaseLost.
func IsLeaseLost(err error) bool { return errors.Is(err, ErrLeaseLost) }
