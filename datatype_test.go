package triton_test

import (
	"context"
	"sync"
	"testing"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/tensor"
)

// widening answers OUTPUT0 = INPUT0 as INT64, whatever the config
// declares.
var widening = backend.Func(func(ctx context.Context, b *backend.Batch) error {
	for _, r := range b.Requests {
		in, _ := r.Input("INPUT0")
		v, err := tensor.View[int32](in)
		if err != nil {
			return err
		}
		wide := make([]int64, len(v))
		for i, x := range v {
			wide[i] = int64(x)
		}
		out, err := tensor.From("OUTPUT0", in.Shape, wide)
		if err != nil {
			return err
		}
		r.SetOutput(out)
	}
	return nil
})

// keeping is a backend whose models are widening ones that implement
// backend.DataTypeKeeper, answering keep and recording what they are
// asked.
type keeping struct {
	keep  bool
	mu    sync.Mutex
	asked []string
}

func (k *keeping) Load(context.Context, *backend.ModelSpec) (backend.Model, error) {
	return keepingModel{Func: widening, k: k}, nil
}

type keepingModel struct {
	backend.Func
	k *keeping
}

func (m keepingModel) KeepDataType(output string, produced, declared tensor.DataType) bool {
	m.k.mu.Lock()
	defer m.k.mu.Unlock()
	m.k.asked = append(m.k.asked, output+" "+produced.String()+" for "+declared.String())
	return m.k.keep
}

// TestOutputDataTypeMismatch: an output of another datatype than the
// config's fails its request, unless the backend's model is a
// backend.DataTypeKeeper that keeps it (Triton's Python backend does).
func TestOutputDataTypeMismatch(t *testing.T) {
	keeps, refuses := &keeping{keep: true}, &keeping{}
	srv := newServer(t, map[string]string{
		"plain/config.pbtxt":   oneInput("widening", 1, ""),
		"plain/1/model":        "",
		"keeps/config.pbtxt":   oneInput("keeps", 1, ""),
		"keeps/1/model":        "",
		"refuses/config.pbtxt": oneInput("refuses", 1, ""),
		"refuses/1/model":      "",
	}, triton.WithBackend("widening", widening), triton.WithBackend("keeps", keeps), triton.WithBackend("refuses", refuses))
	ctx := context.Background()
	for _, model := range []string{"plain", "refuses"} {
		_, err := srv.Infer(ctx, oneInputRequest(t, model, "", 7))
		wantError(t, err, triton.Internal, "backend produced output 'OUTPUT0' with data-type 'INT64', but model '"+model+"' declares 'INT32'")
	}
	resp, err := srv.Infer(ctx, oneInputRequest(t, "keeps", "", 7))
	if err != nil {
		t.Fatal(err)
	}
	out, ok := resp.Output("OUTPUT0")
	if !ok || out.DataType != tensor.Int64 {
		t.Fatalf("OUTPUT0 %v, want the INT64 the backend produced", out)
	}
	if v, err := tensor.View[int64](out); err != nil || len(v) != 1 || v[0] != 7 {
		t.Errorf("OUTPUT0 %v (%v), want [7]", v, err)
	}
	for _, k := range []*keeping{keeps, refuses} {
		if len(k.asked) != 1 || k.asked[0] != "OUTPUT0 INT64 for INT32" {
			t.Errorf("keep %v was asked %q, want once about OUTPUT0 INT64 for INT32", k.keep, k.asked)
		}
	}
}
