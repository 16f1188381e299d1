package s3test

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// Proxy is a TCP proxy on loopback in front of a server. It forwards bytes
// unchanged (S3 signatures stay valid: the Host header the client signed
// is the one the server sees), counts them, and can be told to cut every
// connection once it has passed a number of response bytes, which a
// client sees as a network drop in the middle of a download
// ([Proxy.CutAfter]), or to hold it there until healed, a download that
// hangs ([Proxy.StallAfter]).
//
// Its methods are safe for concurrent use.
type Proxy struct {
	// Addr is the host:port the proxy listens on (127.0.0.1:PORT).
	Addr string

	target string
	ln     net.Listener
	wg     sync.WaitGroup

	rule                  atomic.Pointer[rule] // nil: forward everything
	done                  chan struct{}        // closed by close
	conns, cuts, up, down atomic.Int64

	mu sync.Mutex
	// mu protects the following.
	open   map[net.Conn]struct{}
	closed bool
}

// ProxyStats counts what passed through a [Proxy] since it started.
type ProxyStats struct {
	// Conns is the number of client connections accepted.
	Conns int64
	// Cuts is the number of connections cut by [Proxy.CutAfter].
	Cuts int64
	// BytesUp is the number of bytes forwarded from clients to the server
	// (requests); BytesDown from the server to clients (responses).
	BytesUp, BytesDown int64
}

// Proxy starts a [Proxy] in front of s. It is closed in tb.Cleanup.
func (s *Server) Proxy(tb testing.TB) *Proxy {
	tb.Helper()
	return NewProxy(tb, s.Addr)
}

// NewProxy starts a [Proxy] forwarding connections to target (host:port).
// It stops in tb.Cleanup: the listener and every open connection are
// closed and its goroutines waited for.
func NewProxy(tb testing.TB, target string) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("s3test: proxy listen: %v", err)
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, ln: ln, open: map[net.Conn]struct{}{}, done: make(chan struct{})}
	p.wg.Go(p.accept)
	tb.Cleanup(p.close)
	return p
}

// URL returns the Triton-style repository URL of prefix in bucket, reached
// through the proxy: s3://127.0.0.1:PROXYPORT/bucket/prefix.
func (p *Proxy) URL(bucket, prefix string) string {
	return repoURL(p.Addr, bucket, prefix)
}

// rule is what the proxy does to a connection that has forwarded n bytes
// of response: cut it, or hold it until healed is closed.
type rule struct {
	n      int64
	stall  bool
	healed chan struct{} // stall only: closed when the rule is replaced
	hit    chan struct{} // stall only: closed when a connection first stalls
	once   sync.Once
}

// CutAfter makes the proxy close every connection, the ones open now
// included, once it has forwarded n bytes of response on it (headers
// count). n <= 0 is the same as [Proxy.Heal].
func (p *Proxy) CutAfter(n int64) {
	if n <= 0 {
		p.Heal()
		return
	}
	p.setRule(&rule{n: n})
}

// StallAfter makes the proxy stop forwarding responses on every
// connection, the ones open now included, once it has forwarded n bytes
// on it (n < 0 counts as 0), until [Proxy.Heal] (or another rule, or the
// end of the test): a transfer that hangs, without timing. The channel is
// closed when the first connection stalls.
func (p *Proxy) StallAfter(n int64) <-chan struct{} {
	r := &rule{n: max(n, 0), stall: true, healed: make(chan struct{}), hit: make(chan struct{})}
	p.setRule(r)
	return r.hit
}

// Heal lifts CutAfter and StallAfter: stalled connections go on, and
// nothing is cut any more.
func (p *Proxy) Heal() { p.setRule(nil) }

func (p *Proxy) setRule(r *rule) {
	if old := p.rule.Swap(r); old != nil && old.stall {
		close(old.healed)
	}
}

// Stats returns the proxy's counters.
func (p *Proxy) Stats() ProxyStats {
	return ProxyStats{Conns: p.conns.Load(), Cuts: p.cuts.Load(), BytesUp: p.up.Load(), BytesDown: p.down.Load()}
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return // closed (close closes the listener first)
		}
		p.conns.Add(1)
		p.wg.Go(func() { p.serve(c) })
	}
}

// serve forwards one connection until either side ends or the proxy
// closes it.
func (p *Proxy) serve(c net.Conn) {
	u, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	if !p.track(c, u) {
		c.Close()
		u.Close()
		return
	}
	defer p.untrack(c, u)
	var requests sync.WaitGroup
	requests.Go(func() {
		n, _ := io.Copy(u, c)
		p.up.Add(n)
		u.Close()
		c.Close()
	})
	p.forwardResponse(c, u)
	u.Close()
	c.Close()
	requests.Wait()
}

// forwardResponse copies the server's bytes to the client, cutting the
// connection at the limit in force.
func (p *Proxy) forwardResponse(c, u net.Conn) {
	buf := make([]byte, 32<<10)
	var sent int64
	write := func(b []byte) bool {
		w, err := c.Write(b)
		sent += int64(w)
		p.down.Add(int64(w))
		return err == nil
	}
	for {
		n, err := u.Read(buf)
		chunk := buf[:n]
		for len(chunk) > 0 {
			r := p.rule.Load()
			if r == nil || sent+int64(len(chunk)) < r.n {
				if !write(chunk) {
					return
				}
				break
			}
			// The rule applies within this chunk: forward up to it.
			head := max(r.n-sent, 0)
			if !write(chunk[:head]) {
				return
			}
			chunk = chunk[head:]
			if !r.stall {
				p.cuts.Add(1)
				return
			}
			r.once.Do(func() { close(r.hit) })
			select {
			case <-r.healed: // go on under whatever rule replaced it
			case <-p.done:
				return
			}
		}
		if err != nil {
			return // io.EOF or a closed connection: done either way
		}
	}
}

func (p *Proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	for _, c := range conns {
		p.open[c] = struct{}{}
	}
	return true
}

func (p *Proxy) untrack(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		delete(p.open, c)
	}
}

func (p *Proxy) close() {
	close(p.done)
	p.ln.Close()
	p.mu.Lock()
	p.closed = true
	for c := range p.open {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
