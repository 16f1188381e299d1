package main

import (
	"bytes"
	"math"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/internal/pixels"
	"github.com/triton-go/triton/tensor"
)

const repo = "../model_repository"

// TestDigits: the ensemble's answer is what its three steps give when
// called one by one (the Go scaling, the TorchScript CNN, a softmax
// computed here), for images of every stroke position; concurrent
// requests batch in the CNN.
func TestDigits(t *testing.T) {
	srv, err := newServer(repo)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx := t.Context()

	const n = 2 * pixels.Side
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			img := stroke(i % pixels.Side)
			got, err := classify(ctx, srv, img)
			if err != nil {
				t.Errorf("image %d: %v", i, err)
				return
			}
			in, err := tensor.New("IMAGE", tensor.Uint8, tensor.Shape{1, pixels.Side, pixels.Side}, img)
			if err != nil {
				t.Error(err)
				return
			}
			px, err := pixels.Scale(in)
			if err != nil {
				t.Error(err)
				return
			}
			px.Name = "INPUT__0"
			resp, err := srv.Infer(ctx, &triton.InferRequest{Model: "digits_cnn", Inputs: []tensor.Tensor{px}})
			if err != nil {
				t.Errorf("digits_cnn: %v", err)
				return
			}
			out, _ := resp.Output("OUTPUT__0")
			logits, err := tensor.View[float32](out)
			if err != nil || len(logits) != 10 || len(got) != 10 {
				t.Errorf("logits %v (%v), probabilities %v: want ten of each", logits, err, got)
				return
			}
			want := softmax(logits)
			sum := float32(0)
			for j := range got {
				sum += got[j]
				if math.Abs(float64(got[j]-want[j])) > 1e-6 {
					t.Errorf("image %d: PROBS[%d] = %v, want %v (softmax of the CNN's logits %v)", i, j, got[j], want[j], logits)
				}
			}
			if math.Abs(float64(sum-1)) > 1e-5 {
				t.Errorf("image %d: probabilities add up to %v", i, sum)
			}
		})
	}
	wg.Wait()
	st, err := srv.Model("digits_cnn").Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.InferenceCount != 2*n {
		t.Errorf("digits_cnn counted %d inferences, want %d (the ensemble's and the direct calls)", st.InferenceCount, 2*n)
	}
	if st.ExecutionCount == 0 || st.ExecutionCount > st.InferenceCount {
		t.Errorf("digits_cnn ran %d batches for %d inferences", st.ExecutionCount, st.InferenceCount)
	}
}

func softmax(x []float32) []float32 {
	m := x[0]
	for _, v := range x {
		m = max(m, v)
	}
	out := make([]float32, len(x))
	var sum float64
	for i, v := range x {
		e := math.Exp(float64(v - m))
		out[i], sum = float32(e), sum+e
	}
	for i := range out {
		out[i] = float32(float64(out[i]) / sum)
	}
	return out
}

// TestRun: the command's own output names classes and the CNN's batches.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(t.Context(), &out, repo, 16); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); strings.Count(s, ": class ") != 4 || !strings.Contains(s, "16 requests: the CNN ran ") {
		t.Errorf("output:\n%s", s)
	}
}

// TestCopies: the example repository's model files are the generators'.
func TestCopies(t *testing.T) {
	for copy, orig := range map[string]string{
		repo + "/digits_cnn/1/model.pt":       "../../backend/pytorch/testdata/models/cnn.pt",
		repo + "/digits_softmax/1/model.onnx": "../../backend/onnxruntime/testdata/models/softmax.onnx",
		repo + "/add_sub/1/model.onnx":        "../../backend/onnxruntime/testdata/models/add_sub.onnx",
	} {
		a, err1 := os.ReadFile(copy)
		b, err2 := os.ReadFile(orig)
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs from %s (%v, %v): copy it again", copy, orig, err1, err2)
		}
	}
}
