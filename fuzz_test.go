package triton_test

import (
	"context"
	"encoding/binary"
	"sync"
	"testing"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/internal/testmodels"
	"github.com/triton-go/triton/tensor"
)

// FuzzInfer sends arbitrary tensors (datatype, shape, bytes) to models with
// fixed, variable and BYTES inputs. The server must never panic, every
// error must be InvalidArgument, and every success must return outputs
// that are themselves valid.
func FuzzInfer(f *testing.F) {
	files := map[string]string{
		"fixed/config.pbtxt": `backend: "mirror" max_batch_size: 4
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 2, -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 2, -1 ] } ]`,
		"fixed/1/x": "",
		"text/config.pbtxt": `backend: "mirror"
input [ { name: "INPUT0" data_type: TYPE_STRING dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_STRING dims: [ -1 ] } ]`,
		"text/1/x": "",
	}
	srv := newServer(f, files, triton.WithBackend("mirror", mirror))
	f.Add(false, uint8(tensor.FP32), []byte{1, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, []byte{})
	f.Add(true, uint8(tensor.Bytes), []byte{2, 0, 0, 0, 0, 0, 0, 0}, []byte{1, 0, 0, 0, 'a', 0, 0, 0, 0})
	f.Add(true, uint8(tensor.Bytes), []byte{1, 0, 0, 0, 0, 0, 0, 0}, []byte{255, 255, 255, 255})
	f.Add(false, uint8(tensor.Int8), []byte{255, 255, 255, 255, 255, 255, 255, 127}, []byte{1})
	f.Fuzz(func(t *testing.T, text bool, dt uint8, shapeBytes, data []byte) {
		var shape tensor.Shape
		for i := 0; i+8 <= len(shapeBytes) && len(shape) < 5; i += 8 {
			shape = append(shape, int64(binary.LittleEndian.Uint64(shapeBytes[i:])))
		}
		model := "fixed"
		if text {
			model = "text"
		}
		in := tensor.Tensor{Name: "INPUT0", DataType: tensor.DataType(dt), Shape: shape, Data: data}
		resp, err := srv.Infer(context.Background(), &triton.InferRequest{Model: model, Inputs: []tensor.Tensor{in}})
		if err != nil {
			if c := triton.CodeOf(err); c != triton.InvalidArgument {
				t.Fatalf("code %v for bad input: %v", c, err)
			}
			return
		}
		for _, out := range resp.Outputs {
			if err := out.Validate(); err != nil {
				t.Fatalf("accepted input produced an invalid output: %v", err)
			}
		}
	})
}

// FuzzSequence sends arbitrary series of requests to accConfig's
// accumulator (the oldest strategy, batching sequences), each byte a
// request: bits 0–1 the sequence (0 is no correlation ID), bit 2 START,
// bit 3 END, bits 4–7 its X. Each sequence's requests go one after the
// other, the sequences at once. The answers must be those of a reference:
// a request without a correlation ID, or of a sequence that has not
// started, fails as InvalidArgument; a START (again) begins the sequence
// afresh, as Triton's does when the previous one did not end; SUM is X
// plus the sequence's previous SUM; an END ends it. Each input's sequences
// have IDs of their own, and those left open are ended afterwards.
func FuzzSequence(f *testing.F) {
	acc := &accumulator{}
	srv := newServer(f, map[string]string{"acc/config.pbtxt": accConfig, "acc/1/m": ""}, triton.WithBackend("acc", acc.backend()))
	f.Add([]byte{0x15, 0x21, 0x39})             // 1: start, step, end
	f.Add([]byte{0x11, 0x16, 0x21, 0x2e, 0x32}) // 1 and 2
	f.Add([]byte{0x11, 0x15, 0x21})             // 1 not started, then started
	f.Add([]byte{0x15, 0x25, 0x31})             // 1 started twice
	f.Add([]byte{0x1d, 0x21, 0x04})             // START and END at once; then no correlation ID
	var base uint64
	f.Fuzz(func(t *testing.T, ops []byte) {
		base += 4
		var wg sync.WaitGroup
		for id := range uint64(4) {
			wg.Go(func() {
				open, sum := false, int32(0) // the sequence's state in the reference
				send := func(i int, start, end bool, x int32) bool {
					req := &triton.InferRequest{Model: "acc", SequenceStart: start, SequenceEnd: end}
					if id != 0 {
						req.SequenceID = base + id
					}
					in, err := tensor.From("X", tensor.Shape{1, 1}, []int32{x})
					if err != nil {
						t.Error(err)
						return false
					}
					req.Inputs = []tensor.Tensor{in}
					resp, err := srv.Infer(context.Background(), req)
					if id == 0 || !open && !start {
						if triton.CodeOf(err) != triton.InvalidArgument {
							t.Errorf("request %d (sequence %d, open %v, start %v): %v, want InvalidArgument", i, id, open, start, err)
							return false
						}
						return true
					}
					if err != nil {
						t.Errorf("request %d (sequence %d, start %v, end %v): %v", i, id, start, end, err)
						return false
					}
					want := x
					if !start {
						want += sum
					}
					out, ok := resp.Output("SUM")
					got, err := tensor.View[int32](out)
					if !ok || err != nil || len(got) != 1 || got[0] != want {
						t.Errorf("request %d (sequence %d, start %v): SUM %v (%v), want %d", i, id, start, got, err, want)
						return false
					}
					open, sum = !end, want
					return true
				}
				for i, b := range ops[:min(len(ops), 64)] {
					if uint64(b&3) == id && !send(i, b&4 != 0, b&8 != 0, int32(b>>4)) {
						return
					}
				}
				if open {
					send(-1, false, true, 0)
				}
			})
		}
		wg.Wait()
	})
}

// FuzzBatching sends arbitrary sets of requests at once to a dynamically
// batched model whose backend doubles the whole batch (two instances,
// preferred batches of 4, a priority level each way), each byte a request:
// bits 0–3 its rows (0 or more than max_batch_size is refused), bits 4–5
// its row length (requests of different lengths never share a batch), bit
// 6 its priority level. Every request must get back exactly its own rows,
// doubled, whatever batches they went in.
func FuzzBatching(f *testing.F) {
	cfg := `backend: "double"
max_batch_size: 8
input [ { name: "IN" data_type: TYPE_INT32 dims: [ -1 ] } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ -1 ] } ]
instance_group [ { count: 2 kind: KIND_CPU } ]
dynamic_batching { preferred_batch_size: [ 4 ] max_queue_delay_microseconds: 100 priority_levels: 2 default_priority_level: 2 }`
	srv := newServer(f, map[string]string{"double/config.pbtxt": cfg, "double/1/m": ""}, triton.WithBackend("double", testmodels.Double))
	f.Add([]byte{0x01, 0x01, 0x01, 0x01, 0x01})       // five single rows
	f.Add([]byte{0x03, 0x12, 0x21, 0x05, 0x46, 0x31}) // several lengths and sizes, one of priority 1
	f.Add([]byte{0x08, 0x09, 0x00, 0x0f})             // the limit, over it, none
	f.Fuzz(func(t *testing.T, reqs []byte) {
		reqs = reqs[:min(len(reqs), 32)]
		var wg sync.WaitGroup
		for i, b := range reqs {
			rows, n, priority := int64(b&15), int64(b>>4&3)+1, uint64(1+b>>6&1)
			wg.Go(func() {
				vals := make([]int32, rows*n)
				for k := range vals {
					vals[k] = int32(i*1000 + k)
				}
				in, err := tensor.From("IN", tensor.Shape{rows, n}, vals)
				if err != nil {
					t.Error(err)
					return
				}
				resp, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "double", Priority: priority, Inputs: []tensor.Tensor{in}})
				if rows == 0 || rows > 8 {
					if triton.CodeOf(err) != triton.InvalidArgument {
						t.Errorf("request %d of %d rows: %v, want InvalidArgument", i, rows, err)
					}
					return
				}
				if err != nil {
					t.Errorf("request %d (%d rows of %d, priority %d): %v", i, rows, n, priority, err)
					return
				}
				out, ok := resp.Output("OUT")
				if !ok || !out.Shape.Equal(in.Shape) {
					t.Errorf("request %d: output %v, want shape %v", i, resp.Outputs, in.Shape)
					return
				}
				got, err := tensor.View[int32](out)
				if err != nil {
					t.Errorf("request %d: %v", i, err)
					return
				}
				for k, x := range vals {
					if got[k] != 2*x {
						t.Errorf("request %d element %d: %d, want %d (another request's rows?)", i, k, got[k], 2*x)
						return
					}
				}
			})
		}
		wg.Wait()
	})
}
