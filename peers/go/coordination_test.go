package echomq

import (
	"context"
	"strings"
	"testing"
	"time"
)

// The coordination keys follow the key grammar: the name is the hash tag behind "co:".
func TestCoordinationKeys(t *testing.T) {
	if k, err := LeaseKey("orders.shard-1"); err != nil || k != "emq:{co:orders.shard-1}:lease" {
		t.Fatalf("lease key %q %v", k, err)
	}
	if k, err := SemaphoreKey("pdf_render"); err != nil || k != "emq:{co:pdf_render}:sem" {
		t.Fatalf("semaphore key %q %v", k, err)
	}
	for _, bad := range []string{"", ".", "..", "a b", "a{b}", "a:b", strings.Repeat("x", 101), "é"} {
		if _, err := LeaseKey(bad); ErrorCode(err) != "EMQ_BAD_NAME" {
			t.Errorf("LeaseKey(%q): %v", bad, err)
		}
		if _, err := SemaphoreKey(bad); ErrorCode(err) != "EMQ_BAD_NAME" {
			t.Errorf("SemaphoreKey(%q): %v", bad, err)
		}
	}
}

// Bad arguments are refused before any call: this Coordinator has no connection, so reaching the
// server would panic.
func TestCoordinationRefusesBadArgumentsWithoutACall(t *testing.T) {
	c := &Coordinator{scripts: &Scripts{byName: map[string]*Script{}}}
	ctx := context.Background()
	sec := time.Second
	cases := []struct {
		what, code string
		call       func() error
	}{
		{"bad name", "EMQ_BAD_NAME", func() error { _, _, err := c.AcquireLease(ctx, "a b", "me", sec); return err }},
		{"empty owner", "EMQ_BAD_ARG", func() error { _, _, err := c.AcquireLease(ctx, "n", "", sec); return err }},
		{"owner with a space", "EMQ_BAD_ARG", func() error { _, _, err := c.AcquireLease(ctx, "n", "a b", sec); return err }},
		{"owner of 65 bytes", "EMQ_BAD_ARG", func() error { _, _, err := c.AcquireLease(ctx, "n", strings.Repeat("o", 65), sec); return err }},
		{"owner with a control character", "EMQ_BAD_ARG", func() error { _, _, err := c.AcquireLease(ctx, "n", "a\x01", sec); return err }},
		{"ttl below 100 ms", "EMQ_BAD_ARG", func() error { _, _, err := c.AcquireLease(ctx, "n", "me", 99*time.Millisecond); return err }},
		{"ttl above 1 h", "EMQ_BAD_ARG", func() error { _, _, err := c.AcquireLease(ctx, "n", "me", time.Hour+time.Millisecond); return err }},
		{"ttl not whole ms", "EMQ_BAD_ARG", func() error { _, _, err := c.AcquireLease(ctx, "n", "me", 150*time.Millisecond+1); return err }},
		{"renew without a token", "EMQ_BAD_ARG", func() error { _, _, err := c.RenewLease(ctx, Lease{Name: "n", Owner: "me"}, sec); return err }},
		{"release without a token", "EMQ_BAD_ARG", func() error { _, err := c.ReleaseLease(ctx, Lease{Name: "n", Owner: "me"}); return err }},
		{"read of a bad name", "EMQ_BAD_NAME", func() error { _, _, err := c.ReadLease(ctx, ".."); return err }},
		{"limit 0", "EMQ_BAD_ARG", func() error { _, _, err := c.AcquirePermit(ctx, "n", "h", 0, sec); return err }},
		{"limit above 100000", "EMQ_BAD_ARG", func() error { _, _, err := c.AcquirePermit(ctx, "n", "h", MaxPermits+1, sec); return err }},
		{"permit ttl", "EMQ_BAD_ARG", func() error { _, _, err := c.RenewPermit(ctx, "n", "h", 0); return err }},
		{"bad holder", "EMQ_BAD_ARG", func() error { _, err := c.ReleasePermit(ctx, "n", ""); return err }},
		{"semaphore name", "EMQ_BAD_NAME", func() error { _, err := c.ReadPermits(ctx, "a/b"); return err }},
		{"keep with a bad ttl", "EMQ_BAD_ARG", func() error { return c.KeepLease(ctx, Lease{}, 0, nil) }},
	}
	for _, tc := range cases {
		if got := ErrorCode(tc.call()); got != tc.code {
			t.Errorf("%s: code %q, want %s", tc.what, got, tc.code)
		}
	}
	if _, err := NewCoordinator(nil, c.scripts); err == nil {
		t.Error("NewCoordinator accepted scripts without lease.lua")
	}
	if !IsLeaseLost(ErrLeaseLost) || ErrorCode(ErrLeaseLost) != "EMQ_LEASE_LOST" {
		t.Error("ErrLeaseLost")
	}
}
