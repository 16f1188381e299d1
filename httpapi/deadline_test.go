package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/httpapi"
	"github.com/triton-go/triton/internal/testmodels"
)

// The tests of this file check that Triton's "timeout" request parameter
// and a client's disconnection reach the request over HTTP. Each runs in a
// synctest bubble: an http.Server and an http.Client talk over net.Pipe
// connections (which block durably, as sockets do not), so time passes on
// the bubble's clock and synctest.Wait says when the server has done all
// it can.

// pipeListener is a net.Listener whose connections are net.Pipe pairs,
// dialled by its dial method.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// gateServer serves the gate models over HTTP on a pipeListener:
// "gated" without a batcher (a request waits for the instance),
// "gated_batched" with a dynamic batcher whose batches hold one request,
// and "policy", batched so too, whose queue policy lets a request shorten
// its timeout (an hour by default) and rejects it when that passes; all on
// one instance of one testmodels.Gate. It must be called inside the
// bubble; everything stops when the test ends.
func gateServer(t *testing.T) (*triton.Server, *http.Client, *testmodels.Gate) {
	t.Helper()
	g := testmodels.NewGate()
	files := map[string]string{}
	for name, extra := range map[string]string{
		"gated":         ``,
		"gated_batched": `max_batch_size: 1 dynamic_batching { }`,
		"policy": `max_batch_size: 1 dynamic_batching { default_queue_policy {
  timeout_action: REJECT default_timeout_microseconds: 3600000000 allow_timeout_override: true } }`,
	} {
		files[name+"/config.pbtxt"] = fmt.Sprintf(`name: %q backend: "gate" %s
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
instance_group [ { count: 1 kind: KIND_CPU } ]`, name, extra)
		files[name+"/1/model"] = ""
	}
	srv := newServer(t, files, triton.WithBackend("gate", g.Backend()))
	l := newPipeListener()
	hs := &http.Server{Handler: httpapi.NewHandler(srv)}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = hs.Serve(l)
	}()
	client := &http.Client{Transport: &http.Transport{DialContext: l.dial, DisableCompression: true}}
	t.Cleanup(func() {
		client.CloseIdleConnections()
		_ = hs.Close()
		<-served
	})
	return srv, client, g
}

// reply is what an HTTP call came back with.
type reply struct {
	status int
	body   string
	err    error
}

// goPost sends an inference request for model with id (and the request
// parameters params, JSON, when not "") on its own goroutine.
func goPost(ctx context.Context, client *http.Client, model, id, params string) <-chan reply {
	shape := "[1,1]" // a batch of one
	if model == "gated" {
		shape = "[1]"
	}
	body := fmt.Sprintf(`{"id":%q,"inputs":[{"name":"INPUT0","shape":%s,"datatype":"INT32","data":[1]}]`, id, shape)
	if params != "" {
		body += `,"parameters":` + params
	}
	body += "}"
	c := make(chan reply, 1)
	go func() {
		r, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://triton/v2/models/"+model+"/infer", strings.NewReader(body))
		if err != nil {
			c <- reply{err: err}
			return
		}
		resp, err := client.Do(r)
		if err != nil {
			c <- reply{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		c <- reply{status: resp.StatusCode, body: string(b), err: err}
	}()
	return c
}

// wantOK checks that a call succeeded.
func wantOK(t *testing.T, r reply) {
	t.Helper()
	if r.err != nil || r.status != http.StatusOK {
		t.Fatalf("status %d %s (%v), want 200", r.status, r.body, r.err)
	}
}

// modelStats returns the model's statistics once the bubble is idle.
func modelStats(t *testing.T, srv *triton.Server, model string) triton.ModelStats {
	t.Helper()
	synctest.Wait()
	st, err := srv.Stats(model, 0)
	if err != nil {
		t.Fatal(err)
	}
	return st[0]
}

// TestTimeoutWhileBatchRuns: a request whose "timeout" parameter (its
// queue-policy timeout, in µs) passes while it waits behind a long batch
// is rejected at that moment, while that batch still runs (Triton rejects
// it only once the batch ends, server#7512), with 503 and Triton's text;
// the backend never sees it.
func TestTimeoutWhileBatchRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, client, g := gateServer(t)
		first := goPost(t.Context(), client, "policy", "first", "")
		h := <-g.Held
		h.WantIDs(t, "first")

		start := time.Now()
		late := goPost(t.Context(), client, "policy", "late", `{"timeout":50000}`)
		if st := modelStats(t, srv, "policy"); st.Queued != 1 {
			t.Fatalf("%d requests queued, want 1", st.Queued)
		}
		r := <-late
		if r.err != nil || r.status != http.StatusServiceUnavailable || !strings.Contains(r.body, "Request timeout expired") {
			t.Fatalf("status %d %s (%v), want 503 and Request timeout expired", r.status, r.body, r.err)
		}
		if waited := time.Since(start); waited < 50*time.Millisecond || waited >= time.Hour {
			t.Errorf("rejected after %v (the bubble's clock): want its own timeout, 50ms, not the policy's", waited)
		}
		h.WantRunning(t)
		if st := modelStats(t, srv, "policy"); st.Queued != 0 || st.Failures.Rejected != 1 {
			t.Errorf("%d queued, failures %+v; want none queued, one rejected", st.Queued, st.Failures)
		}

		h.Release()
		wantOK(t, <-first)
		g.WantNothingHeld(t)
	})
}

// TestDisconnectWhileQueued: a client that goes away (cancels its call,
// which closes the connection) while its request waits for the busy
// instance takes the request out of the queue: the server counts it
// cancelled while queued and the backend never sees it.
func TestDisconnectWhileQueued(t *testing.T) {
	for _, model := range []string{"gated", "gated_batched"} {
		t.Run(model, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv, client, g := gateServer(t)
				first := goPost(t.Context(), client, model, "first", "")
				h := <-g.Held

				ctx, cancel := context.WithCancel(t.Context())
				gone := goPost(ctx, client, model, "gone", "")
				synctest.Wait() // the request waits at the server
				if model == "gated_batched" {
					if st := modelStats(t, srv, model); st.Queued != 1 {
						t.Fatalf("%d requests queued, want 1", st.Queued)
					}
				}
				cancel()
				if r := <-gone; !errors.Is(r.err, context.Canceled) {
					t.Fatalf("the cancelled call returned %d %s (%v)", r.status, r.body, r.err)
				}
				if st := modelStats(t, srv, model); st.Shed[triton.ShedCancelledQueued] != 1 || st.Queued != 0 {
					t.Errorf("shed %v, %d queued; want one cancelled_queued, none queued", st.Shed, st.Queued)
				}
				h.WantRunning(t)

				h.Release()
				wantOK(t, <-first)
				g.WantNothingHeld(t)
			})
		})
	}
}

// TestDisconnectWhileExecuting: a client that goes away while its request
// (a batch of one) executes ends the ctx of the backend's Execute, with
// context.Canceled.
func TestDisconnectWhileExecuting(t *testing.T) {
	for _, model := range []string{"gated", "gated_batched"} {
		t.Run(model, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv, client, g := gateServer(t)
				ctx, cancel := context.WithCancel(t.Context())
				gone := goPost(ctx, client, model, "gone", "")
				h := <-g.Held
				h.WantIDs(t, "gone")
				if _, ok := h.Deadline(); ok {
					t.Error("Execute's ctx has a deadline; the client set none")
				}
				cancel()
				if r := <-gone; !errors.Is(r.err, context.Canceled) {
					t.Fatalf("the cancelled call returned %d %s (%v)", r.status, r.body, r.err)
				}
				if err := h.Result(); err != context.Canceled {
					t.Errorf("Execute's ctx ended with %v, want context.Canceled", err)
				}
				if st := modelStats(t, srv, model); st.Shed[triton.ShedCancelledExecuting] != 1 {
					t.Errorf("shed %v, want one cancelled_executing", st.Shed)
				}
			})
		})
	}
}
