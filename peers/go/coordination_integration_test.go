package echomq

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// coordClient is a Coordinator on the test Valkey, and a function that registers a lease or
// semaphore name's key for deletion at the end of the test.
func coordClient(t *testing.T) (*redis.Client, *Coordinator, func(key string, err error) string) {
	t.Helper()
	rdb, scripts := testClient(t)
	c, err := NewCoordinator(rdb, scripts)
	if err != nil {
		t.Fatal(err)
	}
	track := func(key string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rdb.Del(context.Background(), key) })
		return key
	}
	return rdb, c, track
}

// serverMs is the server clock in ms.
func serverMs(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	now, err := rdb.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return now.UnixMilli()
}

// A lease: one owner at a time; the holder's repeat acquire keeps its token; renew extends it;
// a release lets another owner in at once with a larger token; the old token is refused from
// then on (renew and release change nothing and answer the current holder).
func TestLeaseAcquireRenewRelease(t *testing.T) {
	rdb, c, track := coordClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	name := randomName("golease")
	key := track(LeaseKey(name))
	ttl := 5 * time.Second

	before := serverMs(t, rdb)
	a, ok, err := c.AcquireLease(ctx, name, "go-a", ttl)
	if err != nil || !ok {
		t.Fatalf("acquire: %v %v %v", a, ok, err)
	}
	// The first token is at least the server clock in ms × 1000 (the floor that keeps tokens
	// increasing across a restart without persistence), and below 2^53.
	if a.Owner != "go-a" || a.Token < before*1000 || a.Token >= 1<<53 {
		t.Fatalf("first token %d for a server clock of %d ms", a.Token, before)
	}
	if exp := a.ExpiresAt.UnixMilli(); exp < before+ttl.Milliseconds() || exp > serverMs(t, rdb)+ttl.Milliseconds() {
		t.Fatalf("expiry %d, server clock %d, ttl %v", exp, before, ttl)
	}

	b, ok, err := c.AcquireLease(ctx, name, "go-b", ttl)
	if err != nil || ok || b.Owner != "go-a" || b.Token != a.Token || !b.ExpiresAt.Equal(a.ExpiresAt) {
		t.Fatalf("acquire by another owner while held: %+v %v %v", b, ok, err)
	}
	time.Sleep(5 * time.Millisecond)
	again, ok, err := c.AcquireLease(ctx, name, "go-a", ttl)
	if err != nil || !ok || again.Token != a.Token || !again.ExpiresAt.After(a.ExpiresAt) {
		t.Fatalf("re-entrant acquire: %+v %v %v (first %+v)", again, ok, err, a)
	}
	renewed, ok, err := c.RenewLease(ctx, a, ttl)
	if err != nil || !ok || renewed.Token != a.Token || renewed.Owner != "go-a" {
		t.Fatalf("renew: %+v %v %v", renewed, ok, err)
	}
	if _, ok, err := c.RenewLease(ctx, Lease{Name: name, Owner: "go-b", Token: a.Token}, ttl); err != nil || ok {
		t.Fatalf("renew by another owner with the holder's token: %v %v", ok, err)
	}
	if _, ok, err := c.RenewLease(ctx, Lease{Name: name, Owner: "go-a", Token: a.Token - 1}, ttl); err != nil || ok {
		t.Fatalf("renew with an older token: %v %v", ok, err)
	}
	r, held, err := c.ReadLease(ctx, name)
	if err != nil || !held || r.Owner != "go-a" || r.Token != a.Token || !r.ExpiresAt.Equal(renewed.ExpiresAt) {
		t.Fatalf("read: %+v %v %v", r, held, err)
	}

	if ok, err := c.ReleaseLease(ctx, a); err != nil || !ok {
		t.Fatalf("release: %v %v", ok, err)
	}
	r, held, err = c.ReadLease(ctx, name)
	if err != nil || held || r.Owner != "" || !r.ExpiresAt.IsZero() || r.Token != a.Token {
		t.Fatalf("read after the release: %+v %v %v", r, held, err)
	}
	if ok, err := c.ReleaseLease(ctx, a); err != nil || ok {
		t.Fatalf("a second release: %v %v", ok, err)
	}
	b, ok, err = c.AcquireLease(ctx, name, "go-b", ttl)
	if err != nil || !ok || b.Token <= a.Token {
		t.Fatalf("acquire after the release: %+v %v %v (released token %d)", b, ok, err, a.Token)
	}
	stale, ok, err := c.RenewLease(ctx, a, ttl)
	if err != nil || ok || stale.Owner != "go-b" || stale.Token != b.Token {
		t.Fatalf("renew of the superseded lease: %+v %v %v", stale, ok, err)
	}
	if ok, err := c.ReleaseLease(ctx, a); err != nil || ok {
		t.Fatalf("release of the superseded lease: %v %v", ok, err)
	}
	if r, held, _ := c.ReadLease(ctx, name); !held || r.Owner != "go-b" || r.Token != b.Token {
		t.Fatalf("the superseded holder's calls changed the lease: %+v", r)
	}
	// The hash has no TTL: the fence outlives every holder.
	if ttl, err := rdb.TTL(ctx, key).Result(); err != nil || ttl != -1 {
		t.Fatalf("the lease key's TTL is %v (%v), want none", ttl, err)
	}
}

// Tokens only grow: over alternating owners, after expiries, and after the hash is lost (a
// restart without persistence) as long as the server clock moves forward.
func TestLeaseTokensAreMonotonic(t *testing.T) {
	rdb, c, track := coordClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	name := randomName("gofence")
	key := track(LeaseKey(name))
	ttl := 100 * time.Millisecond

	var last int64
	next := func(owner string, via string) Lease {
		t.Helper()
		l, ok, err := c.AcquireLease(ctx, name, owner, ttl)
		if err != nil || !ok {
			t.Fatalf("%s: acquire by %s: %+v %v %v", via, owner, l, ok, err)
		}
		if l.Token <= last {
			t.Fatalf("%s: token %d after %d", via, l.Token, last)
		}
		last = l.Token
		return l
	}
	owners := []string{"go-a", "go-b", "go-c"}
	for i := 0; i < 60; i++ {
		l := next(owners[i%3], "after a release")
		if ok, err := c.ReleaseLease(ctx, l); err != nil || !ok {
			t.Fatalf("release %d: %v %v", i, ok, err)
		}
	}
	// Expiry: the holder stops renewing; after the ttl another owner takes it with a larger token.
	ttl = 500 * time.Millisecond // long enough that the next call still finds it held on a busy machine
	held := next("go-a", "first")
	if _, ok, _ := c.AcquireLease(ctx, name, "go-b", ttl); ok {
		t.Fatal("acquired while held")
	}
	time.Sleep(ttl + 50*time.Millisecond)
	next("go-b", "after an expiry")
	if _, ok, err := c.RenewLease(ctx, held, ttl); err != nil || ok {
		t.Fatalf("the expired, superseded holder renewed: %v %v", ok, err)
	}
	// A lost hash: the time floor keeps the next token above the last.
	time.Sleep(2 * time.Millisecond)
	if err := rdb.Del(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	next("go-c", "after the hash was deleted")
}

// A holder whose lease passed its expiry with no other acquire may renew it (no newer token
// exists); once another owner acquired, it may not.
func TestLeaseRenewAfterExpiry(t *testing.T) {
	_, c, track := coordClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	name := randomName("golate")
	track(LeaseKey(name))
	ttl := 100 * time.Millisecond
	a, ok, err := c.AcquireLease(ctx, name, "go-a", ttl)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	time.Sleep(ttl + 50*time.Millisecond)
	if _, held, _ := c.ReadLease(ctx, name); held {
		t.Fatal("read: held after the expiry")
	}
	if r, ok, err := c.RenewLease(ctx, a, time.Second); err != nil || !ok || r.Token != a.Token {
		t.Fatalf("renew after the expiry, nobody else in between: %+v %v %v", r, ok, err)
	}
	if _, held, _ := c.ReadLease(ctx, name); !held {
		t.Fatal("read: not held after the late renewal")
	}
}

// KeepLease holds a short lease across many ttls; when the lease is taken from it (here released
// with its token by another connection) it returns ErrLeaseLost within a renewal period.
func TestKeepLease(t *testing.T) {
	_, c, track := coordClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	name := randomName("gokeep")
	track(LeaseKey(name))
	ttl := 600 * time.Millisecond
	a, ok, err := c.AcquireLease(ctx, name, "go-keeper", ttl)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	done := make(chan error, 1)
	go func() { done <- c.KeepLease(ctx, a, ttl, func(err error) { t.Log("renew:", err) }) }()
	time.Sleep(4 * ttl)
	if _, ok, _ := c.AcquireLease(ctx, name, "go-other", ttl); ok {
		t.Fatal("another owner acquired a kept lease")
	}
	if ok, err := c.ReleaseLease(ctx, a); !ok || err != nil {
		t.Fatal("release", ok, err)
	}
	lost := time.Now()
	select {
	case err := <-done:
		if !IsLeaseLost(err) {
			t.Fatalf("KeepLease returned %v", err)
		}
		if d := time.Since(lost); d > ttl/3+200*time.Millisecond {
			t.Fatalf("the loss was noticed after %v", d)
		}
	case <-time.After(2 * ttl):
		t.Fatal("KeepLease did not notice the loss")
	}
	// A cancelled context ends it with the context's error.
	b, _, _ := c.AcquireLease(ctx, name, "go-keeper", ttl)
	kctx, kcancel := context.WithCancel(ctx)
	go func() { time.Sleep(50 * time.Millisecond); kcancel() }()
	if err := c.KeepLease(kctx, b, ttl, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("KeepLease after cancel: %v", err)
	}
}

// A semaphore of limit 2: two holders in, the third refused with the earliest expiry; a holder's
// repeat extends its permit; a release frees a slot; expired permits are counted out and their
// renewal refused.
func TestSemaphorePermits(t *testing.T) {
	rdb, c, track := coordClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	name := randomName("gosem")
	key := track(SemaphoreKey(name))
	ttl := 5 * time.Second

	p1, ok, err := c.AcquirePermit(ctx, name, "h.1", 2, ttl)
	if err != nil || !ok || p1.Count != 1 || p1.Holder != "h.1" {
		t.Fatalf("first permit: %+v %v %v", p1, ok, err)
	}
	time.Sleep(5 * time.Millisecond)
	p2, ok, err := c.AcquirePermit(ctx, name, "h.2", 2, ttl)
	if err != nil || !ok || p2.Count != 2 {
		t.Fatalf("second permit: %+v %v %v", p2, ok, err)
	}
	p3, ok, err := c.AcquirePermit(ctx, name, "h.3", 2, ttl)
	if err != nil || ok || p3.Count != 2 || !p3.ExpiresAt.Equal(p1.ExpiresAt) {
		t.Fatalf("third permit over the limit: %+v %v %v (earliest %v)", p3, ok, err, p1.ExpiresAt)
	}
	again, ok, err := c.AcquirePermit(ctx, name, "h.1", 2, ttl)
	if err != nil || !ok || again.Count != 2 || !again.ExpiresAt.After(p1.ExpiresAt) {
		t.Fatalf("repeat by a holder: %+v %v %v", again, ok, err)
	}
	if r, ok, err := c.RenewPermit(ctx, name, "h.2", ttl); err != nil || !ok || r.Count != 2 {
		t.Fatalf("renew: %+v %v %v", r, ok, err)
	}
	if n, err := c.ReadPermits(ctx, name); err != nil || n != 2 {
		t.Fatalf("read: %d %v", n, err)
	}
	if ok, err := c.ReleasePermit(ctx, name, "h.1"); err != nil || !ok {
		t.Fatalf("release: %v %v", ok, err)
	}
	if ok, err := c.ReleasePermit(ctx, name, "h.1"); err != nil || ok {
		t.Fatalf("a second release: %v %v", ok, err)
	}
	if p3, ok, err = c.AcquirePermit(ctx, name, "h.3", 2, ttl); err != nil || !ok || p3.Count != 2 {
		t.Fatalf("third permit after a release: %+v %v %v", p3, ok, err)
	}
	if _, ok, err := c.RenewPermit(ctx, name, "h.1", ttl); err != nil || ok {
		t.Fatalf("renew of a released permit: %v %v", ok, err)
	}

	// Expiry: short permits lapse and are counted out; a lapsed holder's renewal is refused.
	short := 500 * time.Millisecond
	other := randomName("gosem")
	track(SemaphoreKey(other))
	for _, h := range []string{"x.1", "x.2"} {
		if _, ok, err := c.AcquirePermit(ctx, other, h, 2, short); err != nil || !ok {
			t.Fatal(h, ok, err)
		}
	}
	if _, ok, _ := c.AcquirePermit(ctx, other, "x.3", 2, short); ok {
		t.Fatal("over the limit")
	}
	time.Sleep(short + 50*time.Millisecond)
	if n, _ := c.ReadPermits(ctx, other); n != 0 {
		t.Fatalf("live permits after the expiry: %d", n)
	}
	if _, ok, err := c.RenewPermit(ctx, other, "x.1", short); err != nil || ok {
		t.Fatalf("renew of a lapsed permit: %v %v", ok, err)
	}
	if p, ok, err := c.AcquirePermit(ctx, other, "x.3", 2, short); err != nil || !ok || p.Count != 1 {
		t.Fatalf("acquire after the expiry (the lapsed ones counted out): %+v %v %v", p, ok, err)
	}
	// A semaphore key has no TTL either.
	if d, _ := rdb.TTL(ctx, key).Result(); d != -1 {
		t.Fatalf("the semaphore key's TTL is %v", d)
	}
}

// The scripts' own refusals: a key of another type is EMQ_WRONGTYPE, an old version EMQ_VERSION,
// a key outside the grammar EMQ_BAD_ARG; nothing is written.
func TestCoordinationScriptRefusals(t *testing.T) {
	rdb, c, track := coordClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	name := randomName("gowrong")
	lk := track(LeaseKey(name))
	sk := track(SemaphoreKey(name))
	rdb.Set(ctx, lk, "x", 0)
	rdb.Set(ctx, sk, "x", 0)
	if _, _, err := c.AcquireLease(ctx, name, "go-a", time.Second); ErrorCode(err) != "EMQ_WRONGTYPE" {
		t.Fatalf("lease over a string: %v", err)
	}
	if _, _, err := c.AcquirePermit(ctx, name, "h", 1, time.Second); ErrorCode(err) != "EMQ_WRONGTYPE" {
		t.Fatalf("semaphore over a string: %v", err)
	}
	fresh := randomName("gowrong")
	fk := track(LeaseKey(fresh))
	if _, err := c.scripts.Run(ctx, rdb, "lease", []string{fk}, "1", "acquire", "go-a", "", 1000); ErrorCode(err) != "EMQ_VERSION" {
		t.Fatalf("version 1: %v", err)
	}
	if _, err := c.scripts.Run(ctx, rdb, "lease", []string{"emq:{" + fresh + "}:lease"}, ProtocolVersion, "acquire", "go-a", "", 1000); ErrorCode(err) != "EMQ_BAD_ARG" {
		t.Fatalf("a key outside the grammar: %v", err)
	}
	if _, err := c.scripts.Run(ctx, rdb, "lease", []string{fk}, ProtocolVersion, "acquire", "go-a", "", 99); ErrorCode(err) != "EMQ_BAD_ARG" {
		t.Fatalf("a ttl of 99 ms: %v", err)
	}
	if n, _ := rdb.Exists(ctx, fk, "emq:{"+fresh+"}:lease").Result(); n != 0 {
		t.Fatalf("a refused call wrote %d keys", n)
	}
}

// tsStep runs the TypeScript CoordinationService (the repository's build, dist/) in a node
// process against the same Valkey: `lease` tries the lease once and prints `HELD <token>` or
// `NULL`, then `READ <held> <owner> <token>`, and releases what it took; `permit` tries one permit
// of limit 1 and prints `PERMIT` or `NULL`. Skipped without node or a build.
func tsStep(t *testing.T, op, name string) []string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH")
	}
	dist, _ := filepath.Abs(filepath.Join("..", "..", "dist", "src"))
	if _, err := os.Stat(filepath.Join(dist, "coordination", "index.js")); err != nil {
		t.Skip("no TypeScript build (dist/src/coordination): run `npx tsc -p tsconfig.build.json`")
	}
	script := `
const [dist, url, op, name] = process.argv.slice(1);
const { EchoMqConnection } = await import(dist + '/core/connection/index.js');
const { CoordinationService } = await import(dist + '/coordination/index.js');
const conn = new EchoMqConnection({ url });
await conn.open();
const svc = new CoordinationService(conn, { owner: 'ts-holder' });
const out = [];
if (op === 'lease') {
  const l = await svc.tryAcquire(name, { ttlMs: 5000, autoRenew: false });
  out.push(l ? 'HELD ' + l.token : 'NULL');
  const r = await svc.read(name);
  out.push('READ ' + r.held + ' ' + r.owner + ' ' + r.token);
} else {
  const p = await svc.semaphore(name, { limit: 1, ttlMs: 5000, autoRenew: false });
  out.push(p ? 'PERMIT' : 'NULL');
}
await svc.close();
await conn.close();
process.stdout.write(out.join('\n') + '\n', () => process.exit(0));
`
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, node, "--input-type=module", "-e", script, "file://"+filepath.ToSlash(dist), os.Getenv("ECHOMQ_TEST_URL"), op, name).CombinedOutput()
	if err != nil {
		t.Fatalf("node %s: %v\n%s", op, err, out)
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}

// A Go holder and a TypeScript CoordinationService on one name: a lease held from Go blocks the
// TypeScript acquire, which reads Go's owner and token; once Go releases, TypeScript acquires
// with a larger token, and Go reads that token back (released by TypeScript's close). A Go permit
// of a semaphore of limit 1 blocks TypeScript's.
func TestLeaseInteropWithTypeScript(t *testing.T) {
	_, c, track := coordClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	name := randomName("gointerop")
	track(LeaseKey(name))
	track(SemaphoreKey(name))

	g, ok, err := c.AcquireLease(ctx, name, "go-holder", 10*time.Second)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	got := tsStep(t, "lease", name)
	if want := []string{"NULL", fmt.Sprintf("READ true go-holder %d", g.Token)}; !slices.Equal(got, want) {
		t.Fatalf("TypeScript while Go holds: %q, want %q", got, want)
	}
	if ok, err := c.ReleaseLease(ctx, g); err != nil || !ok {
		t.Fatal(ok, err)
	}
	got = tsStep(t, "lease", name)
	var tsToken int64
	if len(got) != 2 || !strings.HasPrefix(got[0], "HELD ") {
		t.Fatalf("TypeScript after Go released: %q", got)
	}
	if tsToken, err = strconv.ParseInt(strings.TrimPrefix(got[0], "HELD "), 10, 64); err != nil || tsToken <= g.Token {
		t.Fatalf("TypeScript's token %q after Go's %d", got[0], g.Token)
	}
	if want := fmt.Sprintf("READ true ts-holder %d", tsToken); got[1] != want {
		t.Fatalf("TypeScript's read %q, want %q", got[1], want)
	}
	r, held, err := c.ReadLease(ctx, name)
	if err != nil || held || r.Owner != "" || r.Token != tsToken {
		t.Fatalf("Go's read after TypeScript closed: %+v %v %v (TypeScript's token %d)", r, held, err, tsToken)
	}
	next, ok, err := c.AcquireLease(ctx, name, "go-holder", time.Second)
	if err != nil || !ok || next.Token <= tsToken {
		t.Fatalf("Go after TypeScript: %+v %v %v", next, ok, err)
	}

	if _, ok, err := c.AcquirePermit(ctx, name, "go-permit", 1, 10*time.Second); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if got := tsStep(t, "permit", name); !slices.Equal(got, []string{"NULL"}) {
		t.Fatalf("TypeScript's permit while Go holds the only one: %q", got)
	}
	if ok, err := c.ReleasePermit(ctx, name, "go-permit"); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if got := tsStep(t, "permit", name); !slices.Equal(got, []string{"PERMIT"}) {
		t.Fatalf("TypeScript's permit once Go released: %q", got)
	}
}

// KeepLease's local deadline: when no renewal succeeds (here the server is unreachable), it
// returns ErrLeaseLost once the acquire's send instant + ttl has passed (a renewal still hanging
// then is abandoned), not later.
func TestKeepLeaseDeadlineWithoutRenewals(t *testing.T) {
	_, c, track := coordClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	name := randomName("golapse")
	track(LeaseKey(name))
	ttl := 300 * time.Millisecond
	l, ok, err := c.AcquireLease(ctx, name, "go-cut", ttl)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	acquired := time.Now()
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", Protocol: 2, MaxRetries: -1, DialTimeout: 50 * time.Millisecond})
	defer dead.Close()
	cut := &Coordinator{rdb: dead, scripts: c.scripts}
	failures := 0
	err = cut.KeepLease(ctx, l, ttl, func(error) { failures++ })
	if !IsLeaseLost(err) {
		t.Fatalf("KeepLease: %v", err)
	}
	if d := time.Since(acquired); d > ttl+200*time.Millisecond {
		t.Fatalf("the lapse was noticed after %v", d)
	}
	t.Logf("%d failed renewals reported before the deadline", failures)
}
