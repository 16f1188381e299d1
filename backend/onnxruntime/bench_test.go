package onnxruntime_test

// The backend's overhead per request (issue #3): srv.Infer through the
// onnxruntime backend against onnxruntime_go called directly, the fastest
// way to use it (one DynamicAdvancedSession, inputs built once, outputs
// preallocated), on the same model file with the same input data, batch 1,
// in the same run. Both sides run one session with one intra-op and one
// inter-op thread. Results and the command are in docs/performance.md.

import (
	"context"
	"fmt"
	"image"
	"math"
	"path/filepath"
	"testing"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/examples/ocr/ppocr"
	"github.com/triton-go/triton/internal/testenv"
	"github.com/triton-go/triton/tensor"
)

// benchParams pins the server side to what the direct side uses: one
// instance, one session, one intra-op and one inter-op thread.
const benchParams = `
instance_group [ { count: 1 kind: KIND_CPU } ]
parameters { key: "intra_op_thread_count" value: { string_value: "1" } }
parameters { key: "inter_op_thread_count" value: { string_value: "1" } }
`

// directSession opens file with onnxruntime_go, one thread each way. The
// ONNX Runtime environment must already exist (a server has loaded a model).
func directSession(b *testing.B, file string, inputs, outputs []string) *ort.DynamicAdvancedSession {
	b.Helper()
	opts, err := ort.NewSessionOptions()
	if err != nil {
		b.Fatal(err)
	}
	defer opts.Destroy()
	if err := opts.SetIntraOpNumThreads(1); err != nil {
		b.Fatal(err)
	}
	if err := opts.SetInterOpNumThreads(1); err != nil {
		b.Fatal(err)
	}
	s, err := ort.NewDynamicAdvancedSession(file, inputs, outputs, opts)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// benchServer runs req in a loop; check validates the first response.
func benchServer(b *testing.B, srv *triton.Server, req *triton.InferRequest, check func(*triton.InferResponse) error) {
	ctx := context.Background()
	resp, err := srv.Infer(ctx, req)
	if err != nil {
		b.Fatal(err)
	}
	if err := check(resp); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := srv.Infer(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// benchDirect runs the session in a loop on prebuilt values; check
// validates the first run's outputs.
func benchDirect(b *testing.B, s *ort.DynamicAdvancedSession, ins, outs []ort.Value, check func() error) {
	if err := s.Run(ins, outs); err != nil {
		b.Fatal(err)
	}
	if err := check(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := s.Run(ins, outs); err != nil {
			b.Fatal(err)
		}
	}
}

func destroy(b *testing.B, vals ...ort.Value) {
	for _, v := range vals {
		if err := v.Destroy(); err != nil {
			b.Error(err)
		}
	}
}

// closeEq reports whether got and want agree to within tol.
func closeEq(what string, got, want []float32, tol float64) error {
	if len(got) != len(want) {
		return fmt.Errorf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Abs(float64(got[i]-want[i])) > tol {
			return fmt.Errorf("%s[%d] = %v, want %v", what, i, got[i], want[i])
		}
	}
	return nil
}

// BenchmarkClassifier: PP-OCR's direction classifier on one rendered line,
// input [1, 3, 48, 192], output [1, 2].
func BenchmarkClassifier(b *testing.B) {
	file := testenv.Model(b, clsModel)
	srv := serveReal(b, realEntry{name: "cls", file: file, config: clsConfig + benchParams})
	img, err := ppocr.RenderLine("Hello World 123", 48)
	if err != nil {
		b.Fatal(err)
	}
	data := ppocr.ClsBatch([]image.Image{img})
	shape := tensor.Shape{1, 3, 48, ppocr.ClsWidth}
	var want []float32 // the server's answer, which the direct side must match

	b.Run("server", func(b *testing.B) {
		req := &triton.InferRequest{Model: "cls", Inputs: []tensor.Tensor{tensorOf(b, "x", shape, data)}}
		benchServer(b, srv, req, func(resp *triton.InferResponse) error {
			out, ok := resp.Output(clsOutput)
			if !ok {
				return fmt.Errorf("no output %s", clsOutput)
			}
			p, err := tensor.View[float32](out)
			if err != nil {
				return err
			}
			if len(p) != 2 || p[0] < 0.9 {
				return fmt.Errorf("upright line classified as %v", p)
			}
			want = append(want[:0], p...)
			return nil
		})
	})
	b.Run("direct", func(b *testing.B) {
		s := directSession(b, file, []string{"x"}, []string{clsOutput})
		defer s.Destroy()
		x, err := ort.NewTensor(ort.NewShape(shape...), data)
		if err != nil {
			b.Fatal(err)
		}
		out, err := ort.NewEmptyTensor[float32](ort.NewShape(1, 2))
		if err != nil {
			b.Fatal(err)
		}
		defer destroy(b, x, out)
		benchDirect(b, s, []ort.Value{x}, []ort.Value{out}, func() error {
			if want == nil {
				return nil // server side not run (-bench filter)
			}
			return closeEq("direct output", out.GetData(), want, 1e-5)
		})
	})
}

// BenchmarkSilero: Silero VAD v6 on one speech chunk, input [1, 576] with a
// state [2, 1, 128] and sr = 16000; outputs [1, 1] and [2, 1, 128].
func BenchmarkSilero(b *testing.B) {
	file := testenv.Model(b, sileroModel)
	srv := serveReal(b, realEntry{name: "silero_config", file: file, config: sileroConfig + benchParams})
	samples, _, err := readWAV(filepath.Join("testdata", "speech_16k.wav"))
	if err != nil {
		b.Fatal(err)
	}
	// Chunk 40 (speech) with the 64 samples before it as context, fresh state.
	const c = 40
	input := samples[c*sileroChunk-sileroContext : (c+1)*sileroChunk]
	state := make([]float32, sileroState)
	var want []float32

	b.Run("server", func(b *testing.B) {
		req := &triton.InferRequest{Model: "silero_config", Inputs: []tensor.Tensor{
			tensorOf(b, "input", tensor.Shape{1, sileroContext + sileroChunk}, input),
			tensorOf(b, "state", tensor.Shape{2, 1, 128}, state),
			tensorOf(b, "sr", tensor.Shape{1}, []int64{16000}),
		}}
		benchServer(b, srv, req, func(resp *triton.InferResponse) error {
			out, ok := resp.Output("output")
			if !ok {
				return fmt.Errorf("no output 'output'")
			}
			p, err := tensor.View[float32](out)
			if err != nil {
				return err
			}
			if len(p) != 1 || p[0] < 0 || p[0] > 1 {
				return fmt.Errorf("speech probability %v", p)
			}
			if st, ok := resp.Output("stateN"); !ok || !st.Shape.Equal(tensor.Shape{2, 1, 128}) {
				return fmt.Errorf("stateN missing or misshapen: %v", st.Shape)
			}
			want = append(want[:0], p...)
			return nil
		})
	})
	b.Run("direct", func(b *testing.B) {
		s := directSession(b, file, []string{"input", "state", "sr"}, []string{"output", "stateN"})
		defer s.Destroy()
		in, err := ort.NewTensor(ort.NewShape(1, sileroContext+sileroChunk), input)
		if err != nil {
			b.Fatal(err)
		}
		st, err := ort.NewTensor(ort.NewShape(2, 1, 128), state)
		if err != nil {
			b.Fatal(err)
		}
		sr, err := ort.NewScalar(int64(16000))
		if err != nil {
			b.Fatal(err)
		}
		out, err := ort.NewEmptyTensor[float32](ort.NewShape(1, 1))
		if err != nil {
			b.Fatal(err)
		}
		next, err := ort.NewEmptyTensor[float32](ort.NewShape(2, 1, 128))
		if err != nil {
			b.Fatal(err)
		}
		defer destroy(b, in, st, sr, out, next)
		benchDirect(b, s, []ort.Value{in, st, sr}, []ort.Value{out, next}, func() error {
			if want == nil {
				return nil
			}
			return closeEq("direct speech probability", out.GetData(), want, 1e-5)
		})
	})
}
