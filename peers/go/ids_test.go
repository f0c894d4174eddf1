package echomq

import (
	"math"
	"testing"
	"time"
)

func TestEncodeBodyBounds(t *testing.T) {
	if got := EncodeBody(math.MaxUint64); got != "LygHa16AHYF" {
		t.Fatalf("2^64-1 encodes as %s, protocol.md §1 says LygHa16AHYF", got)
	}
	if got := ComposeID("job", Epoch, 0, 0); got != "job00000000000" {
		t.Fatalf("the epoch's first id is %s", got)
	}
}

func TestMinterRefusesWithoutLeaseAndStaysMonotonic(t *testing.T) {
	m := NewMinter()
	if _, err := m.Mint("job"); err != ErrNoNode {
		t.Fatalf("minted without a node: %v", err)
	}
	m.SetNode(7, time.Now().Add(time.Minute))
	prev := ""
	for i := 0; i < 10000; i++ { // crosses the 4096 ids of one millisecond
		id, err := m.Mint("job")
		if err != nil || id <= prev {
			t.Fatalf("id %d: %q after %q (%v)", i, id, prev, err)
		}
		prev = id
	}
	m.SetNode(8, time.Now().Add(time.Minute)) // a fresh number moves past the current ms
	id, _ := m.Mint("job")
	if id <= prev {
		t.Fatalf("after a node change %s sorts before %s", id, prev)
	}
	m.SetNode(8, time.Now().Add(-time.Millisecond)) // the lease may have lapsed
	if _, err := m.Mint("job"); err != ErrNoNode {
		t.Fatalf("minted past the lease: %v", err)
	}
}
