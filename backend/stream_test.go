package backend_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/tensor"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestSenderFinal(t *testing.T) {
	st := backend.NewStream("r", 4)
	s := st.Sender()
	ctx := context.Background()
	if err := s.Send(ctx, backend.Response{}); err != nil {
		t.Fatal(err)
	}
	if closed(s.Done()) {
		t.Fatal("Done closed before the final response")
	}
	if err := s.Send(ctx, backend.Response{Final: true}); err != nil {
		t.Fatal(err)
	}
	if !closed(s.Done()) {
		t.Error("Done not closed after the final response")
	}
	if err := s.Send(ctx, backend.Response{}); !errors.Is(err, backend.ErrAfterFinal) {
		t.Errorf("Send after final: %v, want ErrAfterFinal", err)
	}
	if st.End(errors.New("late")) {
		t.Error("End after the final response ended the stream again")
	}
	if r := st.Recv(ctx); r.Final {
		t.Error("first response flagged final")
	}
	if r := st.Recv(ctx); !r.Final || r.Err != nil {
		t.Errorf("second response %+v, want the final one", r)
	}
}

// TestSenderTrySend: TrySend sends while the buffer has room, refuses
// without waiting when it is full, and fails as Send does once the stream
// has ended.
func TestSenderTrySend(t *testing.T) {
	st := backend.NewStream("r", 1)
	s := st.Sender()
	ctx := context.Background()
	if sent, err := s.TrySend(backend.Response{}); !sent || err != nil {
		t.Fatalf("TrySend with room = %v, %v", sent, err)
	}
	if sent, err := s.TrySend(backend.Response{Final: true}); sent || err != nil {
		t.Fatalf("TrySend on a full buffer = %v, %v; want false, nil", sent, err)
	}
	if closed(s.Done()) {
		t.Fatal("a final response TrySend did not send ended the stream")
	}
	if r := st.Recv(ctx); r.Final || r.SentAt().IsZero() {
		t.Fatalf("first response %+v", r)
	}
	if sent, err := s.TrySend(backend.Response{Final: true}); !sent || err != nil {
		t.Fatalf("TrySend after the consumer took one = %v, %v", sent, err)
	}
	if !closed(s.Done()) {
		t.Error("Done not closed after the final response")
	}
	if sent, err := s.TrySend(backend.Response{}); sent || !errors.Is(err, backend.ErrAfterFinal) {
		t.Errorf("TrySend after final = %v, %v; want ErrAfterFinal", sent, err)
	}
}

func TestStreamEnd(t *testing.T) {
	st := backend.NewStream("r", 4)
	s := st.Sender()
	ctx := context.Background()
	out, _ := tensor.From("OUT", tensor.Shape{1}, []int32{1})
	if err := s.Send(ctx, backend.Response{Outputs: []tensor.Tensor{out}}); err != nil {
		t.Fatal(err)
	}
	cause := fmt.Errorf("client went away: %w", context.Canceled)
	if !st.End(cause) || !closed(s.Done()) {
		t.Fatal("End did not end the stream")
	}
	if err := s.Send(ctx, backend.Response{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Send after End: %v, want the cause", err)
	}
	if !errors.Is(s.Err(), context.Canceled) {
		t.Errorf("Err() = %v", s.Err())
	}
	// What was buffered before the end comes first, then the cause.
	if r := st.Recv(ctx); r.Final || len(r.Outputs) != 1 {
		t.Errorf("first Recv %+v, want the buffered response", r)
	}
	if r := st.Recv(ctx); !r.Final || r.Err != cause {
		t.Errorf("second Recv %+v, want the cause as final", r)
	}
}

// Send blocks while the buffer is full, until the consumer takes one, the
// stream ends, or ctx ends.
func TestSenderBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := backend.NewStream("r", 1)
		s := st.Sender()
		ctx := context.Background()
		if err := s.Send(ctx, backend.Response{}); err != nil {
			t.Fatal(err)
		}
		sent := make(chan error, 1)
		go func() { sent <- s.Send(ctx, backend.Response{}) }()
		synctest.Wait()
		select {
		case err := <-sent:
			t.Fatalf("Send into a full buffer returned %v", err)
		default:
		}
		st.Recv(ctx)
		if err := <-sent; err != nil {
			t.Fatal(err)
		}

		cctx, cancel := context.WithCancel(ctx)
		go func() { sent <- s.Send(cctx, backend.Response{}) }()
		synctest.Wait()
		cancel()
		if err := <-sent; !errors.Is(err, context.Canceled) {
			t.Errorf("Send with its ctx cancelled: %v", err)
		}

		go func() { sent <- s.Send(ctx, backend.Response{}) }()
		synctest.Wait()
		st.End(errors.New("unloading"))
		if err := <-sent; err == nil || err.Error() != "unloading" {
			t.Errorf("Send blocked when the stream ended: %v", err)
		}
	})
}

// Recv ends the stream when its ctx ends.
func TestStreamRecvContext(t *testing.T) {
	st := backend.NewStream("r", 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if r := st.Recv(ctx); !r.Final || !errors.Is(r.Err, context.Canceled) {
		t.Errorf("Recv = %+v", r)
	}
	if !closed(st.Sender().Done()) {
		t.Error("stream not ended")
	}
}

func TestStreamFunc(t *testing.T) {
	count := backend.StreamFunc(func(ctx context.Context, r *backend.Request, send func(backend.Response) error) error {
		for i := range 3 {
			out, _ := tensor.From("OUT", tensor.Shape{1}, []int32{int32(i)})
			if err := send(backend.Response{Outputs: []tensor.Tensor{out}}); err != nil {
				return err
			}
		}
		return nil
	})
	ctx := context.Background()
	t.Run("decoupled", func(t *testing.T) {
		st := backend.NewStream("r", 8)
		r := &backend.Request{ID: "r", BatchSize: 1}
		r.SetSender(st.Sender())
		if err := count.Execute(ctx, backend.NewBatch(false, r)); err != nil || r.Err() != nil {
			t.Fatal(err, r.Err())
		}
		for i := range 3 {
			if resp := st.Recv(ctx); resp.Final || len(resp.Outputs) != 1 {
				t.Fatalf("response %d: %+v", i, resp)
			}
		}
		if resp := st.Recv(ctx); !resp.Final || len(resp.Outputs) != 0 || resp.Err != nil {
			t.Errorf("last response %+v, want an empty final one", resp)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		st := backend.NewStream("r", 8)
		st.End(fmt.Errorf("gone: %w", context.Canceled))
		r := &backend.Request{ID: "r", BatchSize: 1}
		r.SetSender(st.Sender())
		_ = count.Execute(ctx, backend.NewBatch(false, r))
		if !errors.Is(r.Err(), context.Canceled) {
			t.Errorf("request error %v, want the cancellation", r.Err())
		}
	})
	t.Run("not decoupled", func(t *testing.T) {
		one := backend.StreamFunc(func(ctx context.Context, r *backend.Request, send func(backend.Response) error) error {
			out, _ := tensor.From("OUT", tensor.Shape{1}, []int32{7})
			return send(backend.Response{Outputs: []tensor.Tensor{out}, Final: true})
		})
		r := &backend.Request{ID: "r", BatchSize: 1}
		if err := one.Execute(ctx, backend.NewBatch(false, r)); err != nil || r.Err() != nil {
			t.Fatal(err, r.Err())
		}
		if len(r.Outputs()) != 1 || r.Outputs()[0].Name != "OUT" {
			t.Errorf("outputs %v", r.Outputs())
		}
		r = &backend.Request{ID: "r2", BatchSize: 1}
		_ = count.Execute(ctx, backend.NewBatch(false, r))
		if r.Err() == nil {
			t.Error("three responses on a model that is not decoupled: no error")
		}
	})
}
