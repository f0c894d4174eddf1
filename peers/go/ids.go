package echomq

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// Alphabet is the base62 alphabet of id bodies, in ASCII order (docs/protocol.md §1).
const Alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// Epoch is the snowflake epoch: 2025-01-01T00:00:00Z in ms.
const Epoch int64 = 1735689600000

// ComposeID spells the branded id of a snowflake: ns (3 lowercase letters) + 11 base62 digits
// of (ms - Epoch) << 22 | node << 12 | seq.
func ComposeID(ns string, ms int64, node, seq int) string {
	v := uint64(ms-Epoch)<<22 | uint64(node&1023)<<12 | uint64(seq&4095)
	return ns + EncodeBody(v)
}

// EncodeBody is the zero-padded 11-digit base62 form of v.
func EncodeBody(v uint64) string {
	var b [11]byte
	for i := 10; i >= 0; i-- {
		b[i] = Alphabet[v%62]
		v /= 62
	}
	return string(b[:])
}

// ErrNoNode is returned by Mint while the process does not certainly hold a node number.
var ErrNoNode = errors.New("echomq: no node lease is certainly held; refusing to mint ids")

// Minter mints monotonic ids on one node number. It refuses to mint (ErrNoNode) past the
// instant its node lease may have expired, so two processes never mint with one node number.
type Minter struct {
	mu         sync.Mutex
	node       int
	validUntil time.Time // the lease is certainly ours until then (zero = not held)
	lastMs     int64
	seq        int
	now        func() time.Time
}

// NewMinter returns a minter with no node yet (see NodeLease, or SetNode for tests).
func NewMinter() *Minter { return &Minter{node: -1, now: time.Now} }

// SetNode records that node n is held until validUntil. A change of number moves the minter
// past the current millisecond, so ids keep sorting after the earlier ones.
func (m *Minter) SetNode(n int, validUntil time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if n != m.node && m.node >= 0 {
		if ms := m.now().UnixMilli(); m.lastMs < ms+1 {
			m.lastMs = ms + 1
		} else {
			m.lastMs++
		}
		m.seq = -1
	}
	m.node, m.validUntil = n, validUntil
}

// Node returns the node number in use (-1 when none).
func (m *Minter) Node() int { m.mu.Lock(); defer m.mu.Unlock(); return m.node }

// Mint returns the next id of namespace ns ("job", "evt", "ver").
func (m *Minter) Mint(ns string) (string, error) {
	if len(ns) != 3 {
		return "", fmt.Errorf("echomq: namespace %q is not 3 letters", ns)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if m.node < 0 || !now.Before(m.validUntil) {
		return "", ErrNoNode
	}
	ms := now.UnixMilli()
	if ms <= m.lastMs { // same millisecond, or the clock stepped back: reuse the last one
		ms = m.lastMs
		m.seq++
		if m.seq > 4095 { // borrow the next millisecond
			ms++
			m.seq = 0
		}
	} else {
		m.seq = 0
	}
	m.lastMs = ms
	return ComposeID(ns, ms, m.node, m.seq), nil
}
