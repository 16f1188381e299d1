package triton_test

import (
	"context"
	"maps"
	"math"
	"testing"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
)

// withParameters is addSub that also sets response parameters on each
// request of the batch.
func withParameters(params map[string]any) backend.Func {
	return func(ctx context.Context, b *backend.Batch) error {
		for _, r := range b.Requests {
			for k, v := range params {
				r.SetParameter(k, v)
			}
		}
		return addSub(ctx, b)
	}
}

// TestResponseParameters: the parameters a backend sets reach the
// response (Triton's response parameters), a value of a type the
// protocol has none for fails the request, and the next request of the
// pooled call starts without them.
func TestResponseParameters(t *testing.T) {
	want := map[string]any{"tokens": int64(7), "done": true, "why": "length", "score": 0.5, "big": uint64(math.MaxUint64)}
	var set map[string]any
	fn := backend.Func(func(ctx context.Context, b *backend.Batch) error { return withParameters(set)(ctx, b) })
	srv := newServer(t, simpleRepo(), triton.WithBackend("gofunc", fn))
	set = want
	resp, err := srv.Infer(context.Background(), simpleRequest(t, 1))
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(resp.Parameters, want) {
		t.Errorf("parameters %v, want %v", resp.Parameters, want)
	}
	set = nil
	if resp, err := srv.Infer(context.Background(), simpleRequest(t, 1)); err != nil || resp.Parameters != nil {
		t.Errorf("next response: parameters %v, %v; want none", resp.Parameters, err)
	}
	for _, bad := range []any{int32(1), math.NaN(), math.Inf(1)} {
		set = map[string]any{"bad": bad}
		_, err := srv.Infer(context.Background(), simpleRequest(t, 1))
		wantError(t, err, triton.Internal, "response of model 'simple'", "parameter 'bad'")
	}
}

// TestStreamResponseParameters: a decoupled model's responses carry the
// parameters it sends with them.
func TestStreamResponseParameters(t *testing.T) {
	fn := backend.Func(func(ctx context.Context, b *backend.Batch) error {
		s := b.Requests[0].Sender()
		for i := range int64(2) {
			if err := s.Send(ctx, backend.Response{Parameters: map[string]any{"index": i}, Final: i == 1}); err != nil {
				return err
			}
		}
		return nil
	})
	srv := newServer(t, map[string]string{"d/config.pbtxt": oneInput("sender", 1, "model_transaction_policy { decoupled: true }"), "d/1/model.txt": ""},
		triton.WithBackend("sender", fn))
	var got []any
	for resp, err := range srv.InferStream(context.Background(), oneInputRequest(t, "d", "r", 1)) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, resp.Parameters["index"])
	}
	if len(got) != 2 || got[0] != int64(0) || got[1] != int64(1) {
		t.Errorf("index parameters %v, want [0 1]", got)
	}
}
