// gate.go is a version's admission and drain gate.

package triton

import (
	"sync"
	"sync/atomic"
)

// gate counts the requests inside a model version and closes for good when
// the version retires: enter fails once close has been called, and drained
// is closed when the count reaches zero after close. It is the whole
// admission and drain protocol of a version, lock-free on the request path.
type gate struct {
	n       atomic.Int64 // requests inside, plus closedBit once closed
	once    sync.Once
	drained chan struct{}
}

const closedBit = 1 << 62

func newGate() *gate { return &gate{drained: make(chan struct{})} }

// enter admits a request; it reports false once the gate is closed.
func (g *gate) enter() bool {
	if g.n.Add(1)&closedBit != 0 {
		g.leave()
		return false
	}
	return true
}

// leave ends a request admitted by enter (or undoes a failed enter).
func (g *gate) leave() {
	if g.n.Add(-1) == closedBit {
		g.signal()
	}
}

// close stops admission. It may be called more than once.
func (g *gate) close() {
	for {
		n := g.n.Load()
		if n&closedBit != 0 {
			return
		}
		if g.n.CompareAndSwap(n, n|closedBit) {
			if n == 0 {
				g.signal()
			}
			return
		}
	}
}

// inside is the number of requests inside.
func (g *gate) inside() int64 { return g.n.Load() &^ closedBit }

// isClosed reports whether close has been called.
func (g *gate) isClosed() bool { return g.n.Load()&closedBit != 0 }

func (g *gate) signal() { g.once.Do(func() { close(g.drained) }) }
