package backend_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/repository"
	"github.com/triton-go/triton/tensor"
)

func i32s(t *testing.T, x tensor.Tensor) []int32 {
	t.Helper()
	v, err := tensor.View[int32](x)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// raggedBatch is a batch of three requests of a ragged input X: one item
// of 3 elements, two items of 2, one item of 1.
func raggedBatch(t *testing.T) (*backend.Batch, []*backend.Request) {
	a := &backend.Request{ID: "a", BatchSize: 1, Inputs: []tensor.Tensor{f32(t, "X", tensor.Shape{1, 3}, 1, 2, 3)}}
	b := &backend.Request{ID: "b", BatchSize: 2, Inputs: []tensor.Tensor{f32(t, "X", tensor.Shape{2, 2}, 4, 5, 6, 7)}}
	c := &backend.Request{ID: "c", BatchSize: 1, Inputs: []tensor.Tensor{f32(t, "X", tensor.Shape{1, 1}, 8)}}
	reqs := []*backend.Request{a, b, c}
	return backend.NewBatch(true, reqs...), reqs
}

// TestBatchInputs: each kind of batch_input, made from the shapes of the
// requests' source input, in both datatypes.
func TestBatchInputs(t *testing.T) {
	for _, c := range []struct {
		kind  modelconfig.BatchInput_Kind
		shape tensor.Shape
		want  []int32
	}{
		{modelconfig.BatchInput_BATCH_ELEMENT_COUNT, tensor.Shape{3}, []int32{3, 4, 1}},
		{modelconfig.BatchInput_BATCH_ACCUMULATED_ELEMENT_COUNT, tensor.Shape{3}, []int32{3, 7, 8}},
		{modelconfig.BatchInput_BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO, tensor.Shape{4}, []int32{0, 3, 7, 8}},
		{modelconfig.BatchInput_BATCH_MAX_ELEMENT_COUNT_AS_SHAPE, tensor.Shape{4}, []int32{0, 0, 0, 0}},
		{modelconfig.BatchInput_BATCH_ITEM_SHAPE, tensor.Shape{4, 1}, []int32{3, 2, 2, 1}},
		{modelconfig.BatchInput_BATCH_ITEM_SHAPE_FLATTEN, tensor.Shape{4}, []int32{3, 2, 2, 1}},
	} {
		for _, dt := range []tensor.DataType{tensor.Int32, tensor.FP32} {
			batch, _ := raggedBatch(t)
			batch.SetLayouts(map[string]backend.Layout{"X": {Ragged: true}, "N": {Made: &backend.BatchInput{Kind: c.kind, Source: "X", DataType: dt}}})
			n, err := batch.Input("N")
			if err != nil {
				t.Fatalf("%s %s: %v", c.kind, dt.ConfigName(), err)
			}
			var got []int32
			if dt == tensor.FP32 {
				for _, v := range view(t, n) {
					got = append(got, int32(v))
				}
			} else {
				got = i32s(t, n)
			}
			if n.DataType != dt || !n.Shape.Equal(c.shape) || !slices.Equal(got, c.want) {
				t.Errorf("%s %s: %s %v %v, want %v %v", c.kind, dt.ConfigName(), n.DataType.ConfigName(), n.Shape, got, c.shape, c.want)
			}
			if again, _ := batch.Input("N"); &again.Data[0] != &n.Data[0] {
				t.Errorf("%s: made twice for one batch", c.kind)
			}
			x, err := batch.Input("X")
			if err != nil || !x.Shape.Equal(tensor.Shape{8}) || !slices.Equal(view(t, x), []float32{1, 2, 3, 4, 5, 6, 7, 8}) {
				t.Errorf("%s: ragged X beside it %v %v", c.kind, x, err)
			}
		}
	}

	// A lone request gets its batch input too.
	one := backend.NewBatch(true, &backend.Request{ID: "a", BatchSize: 1, Inputs: []tensor.Tensor{f32(t, "X", tensor.Shape{1, 5}, 1, 2, 3, 4, 5)}})
	one.SetLayouts(map[string]backend.Layout{"N": {Made: &backend.BatchInput{Kind: modelconfig.BatchInput_BATCH_ACCUMULATED_ELEMENT_COUNT_WITH_ZERO, Source: "X", DataType: tensor.Int32}}})
	if n, err := one.Input("N"); err != nil || !slices.Equal(i32s(t, n), []int32{0, 5}) {
		t.Errorf("lone request: %v %v", n, err)
	}
	// A source the request lacks (an optional input) is the request's error.
	one = backend.NewBatch(true, one.Requests...)
	one.SetLayouts(map[string]backend.Layout{"N": {Made: &backend.BatchInput{Source: "Y", DataType: tensor.Int32}}})
	if _, err := one.Input("N"); err == nil || !strings.Contains(err.Error(), `request "a" has no input "Y"`) {
		t.Errorf("missing source: %v", err)
	}
}

// TestBatchOutputScatter: a batch_output is cut into consecutive parts in
// the shapes of each request's source input, as views; a request that did
// not ask for it still takes its part's place.
func TestBatchOutputScatter(t *testing.T) {
	batch, reqs := raggedBatch(t)
	reqs[1].RequestedOutputs = []string{"OTHER"}
	batch.SetLayouts(map[string]backend.Layout{"X": {Ragged: true}, "Y": {Scatter: &backend.BatchOutput{Source: "X", Shape: tensor.Shape{-1, -1}}}})
	y := f32(t, "Y", tensor.Shape{8}, 10, 20, 30, 40, 50, 60, 70, 80)
	if err := batch.SetOutput(y); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		r     *backend.Request
		shape tensor.Shape
		want  []float32
	}{{reqs[0], tensor.Shape{1, 3}, []float32{10, 20, 30}}, {reqs[2], tensor.Shape{1, 1}, []float32{80}}} {
		outs := c.r.Outputs()
		if len(outs) != 1 || !outs[0].Shape.Equal(c.shape) || !slices.Equal(view(t, outs[0]), c.want) {
			t.Errorf("request %s: %v, want %v %v", c.r.ID, outs, c.shape, c.want)
			continue
		}
		if &outs[0].Data[0] != &y.Data[4*slices.Index(view(t, y), c.want[0])] {
			t.Errorf("request %s: its part is a copy, not a view", c.r.ID)
		}
	}
	if outs := reqs[1].Outputs(); len(outs) != 0 {
		t.Errorf("request b did not ask for Y, got %v", outs)
	}

	// Fewer elements than the shapes take: an error, nothing read past the end.
	batch, _ = raggedBatch(t)
	batch.SetLayouts(map[string]backend.Layout{"Y": {Scatter: &backend.BatchOutput{Source: "X", Shape: tensor.Shape{-1, -1}}}})
	err := batch.SetOutput(f32(t, "Y", tensor.Shape{7}, 1, 2, 3, 4, 5, 6, 7))
	if err == nil || !strings.Contains(err.Error(), `request "c": [1,1]`) {
		t.Errorf("short output: %v", err)
	}

	// A request whose shape claims more elements than any output holds
	// (its data empty through a zero dimension the part leaves out): an
	// error of the client's, not an overflow.
	huge := &backend.Request{ID: "h", BatchSize: 1, Inputs: []tensor.Tensor{{Name: "X", DataType: tensor.Int32, Shape: tensor.Shape{1, 1 << 62, 0}}}}
	batch = backend.NewBatch(true, huge)
	batch.SetLayouts(map[string]backend.Layout{"Y": {Scatter: &backend.BatchOutput{Source: "X", Shape: tensor.Shape{-1, -1}}}})
	err = batch.SetOutput(tensor.Tensor{Name: "Y", DataType: tensor.FP16, Shape: tensor.Shape{8}, Data: make([]byte, 16)})
	if !errors.Is(err, backend.ErrInvalidInput) {
		t.Errorf("huge source shape: %v", err)
	}
}

// TestBatchLayouts: the layouts compiled from a configuration's
// batch_input and batch_output.
func TestBatchLayouts(t *testing.T) {
	cfg, err := repository.ParseConfig("config.pbtxt", []byte(`max_batch_size: 4
input [ { name: "X" data_type: TYPE_FP32 dims: [ -1 ] allow_ragged_batch: true } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ -1, 2 ] } ]
batch_input [ { kind: BATCH_ITEM_SHAPE target_name: [ "S", "T" ] data_type: TYPE_FP32 source_input: "X" } ]
batch_output [ { target_name: "Y" kind: BATCH_SCATTER_WITH_INPUT_SHAPE source_input: "X" } ]`))
	if err != nil {
		t.Fatal(err)
	}
	l := backend.BatchLayouts(cfg)
	for _, name := range []string{"S", "T"} {
		if m := l[name].Made; m == nil || m.Kind != modelconfig.BatchInput_BATCH_ITEM_SHAPE || m.Source != "X" || m.DataType != tensor.FP32 {
			t.Errorf("%s: %+v", name, l[name].Made)
		}
	}
	if s := l["Y"].Scatter; s == nil || s.Source != "X" || !s.Shape.Equal(tensor.Shape{-1, -1, 2}) {
		t.Errorf("Y: %+v", l["Y"].Scatter)
	}
	if len(l) != 3 {
		t.Errorf("layouts %v, want S, T and Y", l)
	}
}

// TestBatchInputOverflow: an INT32 batch input whose value does not fit
// fails the batch as invalid input (it wrapped around); FP32 takes it.
func TestBatchInputOverflow(t *testing.T) {
	// Shapes alone make batch inputs: the requests carry no data.
	huge := func(id string) *backend.Request {
		return &backend.Request{ID: id, BatchSize: 1, Inputs: []tensor.Tensor{{Name: "X", DataType: tensor.Uint8, Shape: tensor.Shape{1, 1 << 30}}}}
	}
	for _, dt := range []tensor.DataType{tensor.Int32, tensor.FP32} {
		batch := backend.NewBatch(true, huge("a"), huge("b"))
		batch.SetLayouts(map[string]backend.Layout{"X": {Ragged: true},
			"N": {Made: &backend.BatchInput{Kind: modelconfig.BatchInput_BATCH_ACCUMULATED_ELEMENT_COUNT, Source: "X", DataType: dt}}})
		n, err := batch.Input("N")
		if dt == tensor.Int32 {
			if !errors.Is(err, backend.ErrInvalidInput) || !strings.Contains(err.Error(), "2147483648 does not fit TYPE_INT32") {
				t.Errorf("INT32: %v, want an invalid-input error saying 2147483648 does not fit", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("FP32: %v", err)
		}
		if got := view(t, n); !slices.Equal(got, []float32{1 << 30, 1 << 31}) {
			t.Errorf("FP32: %v, want [2^30 2^31]", got)
		}
	}
}
