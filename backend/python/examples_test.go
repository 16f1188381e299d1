package python_test

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/metrics"
	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/tensor"
)

// TestExamples runs the Python models of examples/model_repository (those
// make run serves) on one server, each subtest loading what it uses, and
// checks each answer against one computed here.
func TestExamples(t *testing.T) {
	srv := exampleServer(t)
	ctx := t.Context()

	t.Run("preprocess", func(t *testing.T) {
		loadModels(t, srv, "preprocess")
		wp := readVocab(t, exampleRepo+"/preprocess/vocab.txt")
		n, err := strconv.Atoi(parameter(t, srv, "preprocess", "max_length"))
		if err != nil {
			t.Fatal(err)
		}
		texts := []string{
			"Good movie!",
			"I played it, then re-read the book.", // pieces: play ##ed; punctuation alone; then, - unknown
			"Unhappy Zebras",                      // no cut: [UNK] for both words
			"",                                    // [CLS] [SEP] only
			strings.Repeat("great ", 3*n),         // truncated, [SEP] kept
			"the service was slow but the food great.", // padded
			"ÉTÉ à la plage",                           // lower-casing beyond ASCII
		}
		// One request of them all (a batch of len(texts)), then each alone
		// from goroutines, batched by the dynamic batcher or not.
		batch := must(tensor.FromStrings("TEXT", tensor.Shape{int64(len(texts)), 1}, texts))
		resp, err := srv.Infer(ctx, &triton.InferRequest{Model: "preprocess", Inputs: []tensor.Tensor{batch}})
		if err != nil {
			t.Fatal(err)
		}
		ids, shape := output[int64](t, resp, "INPUT_IDS")
		mask, mshape := output[int64](t, resp, "ATTENTION_MASK")
		if want := (tensor.Shape{int64(len(texts)), int64(n)}); !slices.Equal(shape, want) || !slices.Equal(mshape, want) {
			t.Fatalf("shapes %v, %v; want %v", shape, mshape, want)
		}
		for i, text := range texts {
			wantIDs, wantMask := wp.encode(text, n)
			if got := ids[i*n : (i+1)*n]; !slices.Equal(got, wantIDs) {
				t.Errorf("%q: INPUT_IDS %v (%v), want %v (%v)", text, got, wp.tokensOf(got), wantIDs, wp.tokensOf(wantIDs))
			}
			if got := mask[i*n : (i+1)*n]; !slices.Equal(got, wantMask) {
				t.Errorf("%q: ATTENTION_MASK %v, want %v", text, got, wantMask)
			}
		}
		// The tokenizer here agrees with what its description says, too.
		for text, want := range map[string]string{
			texts[0]: "[CLS] good movie ! [SEP]",
			texts[1]: "[CLS] i play ##ed it , [UNK] re [UNK] read the book . [SEP]",
			texts[2]: "[CLS] [UNK] [UNK] [SEP]",
			texts[3]: "[CLS] [SEP]",
			texts[4]: "[CLS] " + strings.Repeat("great ", n-2) + "[SEP]",
		} {
			if got, _ := wp.encode(text, n); strings.Join(wp.tokensOf(got), " ") != want {
				t.Errorf("the test's tokenizer: %q gives %v, want %s", text, wp.tokensOf(got), want)
			}
		}

		var wg sync.WaitGroup
		for _, text := range texts {
			wg.Go(func() {
				in := must(tensor.FromStrings("TEXT", tensor.Shape{1, 1}, []string{text}))
				resp, err := srv.Infer(ctx, &triton.InferRequest{Model: "preprocess", Inputs: []tensor.Tensor{in}})
				if err != nil {
					t.Errorf("%q: %v", text, err)
					return
				}
				got, _ := output[int64](t, resp, "INPUT_IDS")
				if want, _ := wp.encode(text, n); !slices.Equal(got, want) {
					t.Errorf("%q alone: INPUT_IDS %v, want %v", text, got, want)
				}
			})
		}
		wg.Wait()
	})

	t.Run("text_classify", func(t *testing.T) {
		loadModels(t, srv, "text_classify") // and its steps preprocess, sentiment, text_label
		wp := readVocab(t, exampleRepo+"/preprocess/vocab.txt")
		n, _ := strconv.Atoi(parameter(t, srv, "preprocess", "max_length"))
		labels := strings.Split(parameter(t, srv, "text_label", "labels"), ",")
		cases := map[string]string{ // the text and the class a reader gives it
			"What a great movie, I loved it!": "positive",
			"Terrible service and awful food": "negative",
			"The plot of the book":            "neutral",
			"good good bad":                   "positive",
		}
		var wg sync.WaitGroup
		for text, class := range cases {
			wg.Go(func() {
				in := must(tensor.FromStrings("TEXT", tensor.Shape{1, 1}, []string{text}))
				resp, err := srv.Infer(ctx, &triton.InferRequest{Model: "text_classify", Inputs: []tensor.Tensor{in}})
				if err != nil {
					t.Errorf("%q: %v", text, err)
					return
				}
				label := stringsOut(t, resp, "LABEL")
				score, _ := output[float32](t, resp, "SCORE")

				// The same text through the ONNX step alone, with ids made
				// here, then softmax and argmax here.
				ids, mask := wp.encode(text, n)
				r, err := srv.Infer(ctx, &triton.InferRequest{Model: "sentiment", Inputs: []tensor.Tensor{
					must(tensor.From("INPUT_IDS", tensor.Shape{1, int64(n)}, ids)),
					must(tensor.From("ATTENTION_MASK", tensor.Shape{1, int64(n)}, mask)),
				}})
				if err != nil {
					t.Errorf("sentiment: %v", err)
					return
				}
				logits, _ := output[float32](t, r, "LOGITS")
				if len(logits) != len(labels) {
					t.Errorf("sentiment: LOGITS %v for %d labels", logits, len(labels))
					return
				}
				probs := softmax(logits)
				best := argmax(probs)
				if len(label) != 1 || label[0] != labels[best] || label[0] != class || len(score) != 1 || math.Abs(float64(score[0]-probs[best])) > 1e-6 {
					t.Errorf("%q: LABEL %q SCORE %v; want %q (%s by the logits %v) with %v", text, label, score, labels[best], class, logits, probs[best])
				}
			})
		}
		wg.Wait()
	})

	t.Run("detect_classify", func(t *testing.T) {
		loadModels(t, srv, "detector", "classifier", "detect_classify")
		threshold := must(strconv.ParseFloat(parameter(t, srv, "detect_classify", "threshold"), 64))
		classes := strings.Split(parameter(t, srv, "detect_classify", "classes"), ",")
		// image has value v in column col (other pixels 0, col < 0: none).
		image := func(col int, v float32) []float32 {
			img := make([]float32, 16)
			for r := range 4 {
				if col >= 0 {
					img[4*r+col] = v
				}
			}
			return img
		}
		// want: the detector's score and the class, computed here.
		want := func(img []float32) (string, float64) {
			var sum float64
			cols := make([]float32, 4)
			for i, v := range img {
				sum += float64(v)
				cols[i%4] += v
			}
			score := 1 / (1 + math.Exp(-sum/16))
			if score <= threshold {
				return "none", score
			}
			return classes[argmax(softmax(cols))], score
		}
		run := func(t *testing.T, imgs ...[]float32) (calledRows, calls uint64) {
			t.Helper()
			rows0, calls0 := inferences(t, srv, "classifier")
			in := must(tensor.From("INPUT", tensor.Shape{int64(len(imgs)), 16}, slices.Concat(imgs...)))
			resp, err := srv.Infer(ctx, &triton.InferRequest{Model: "detect_classify", Inputs: []tensor.Tensor{in}})
			if err != nil {
				t.Fatal(err)
			}
			got := stringsOut(t, resp, "CLASS")
			scores, _ := output[float32](t, resp, "SCORE")
			if len(got) != len(imgs) || len(scores) != len(imgs) {
				t.Fatalf("CLASS %q SCORE %v for %d images", got, scores, len(imgs))
			}
			for i, img := range imgs {
				class, score := want(img)
				if got[i] != class || math.Abs(float64(scores[i])-score) > 1e-6 {
					t.Errorf("image %d: CLASS %q SCORE %v, want %q %v", i, got[i], scores[i], class, score)
				}
			}
			rows1, calls1 := inferences(t, srv, "classifier")
			return rows1 - rows0, calls1 - calls0
		}

		t.Run("below threshold", func(t *testing.T) {
			// mean 0 and 0.25: scores 0.5 and 0.56, both at most 0.6.
			if rows, calls := run(t, image(-1, 0), image(1, 1)); rows != 0 || calls != 0 {
				t.Errorf("classifier ran %d times on %d images, want none", calls, rows)
			}
		})
		t.Run("above threshold", func(t *testing.T) {
			// mean 1 (column 2 at 4): score 0.73.
			if rows, calls := run(t, image(2, 4)); rows != 1 || calls != 1 {
				t.Errorf("classifier ran %d times on %d images, want once on 1", calls, rows)
			}
		})
		t.Run("mixed", func(t *testing.T) {
			// Only the two above the threshold go to the classifier, together.
			if rows, calls := run(t, image(0, 8), image(3, 0.5), image(3, 4)); rows != 2 || calls != 1 {
				t.Errorf("classifier ran %d times on %d images, want once on 2", calls, rows)
			}
		})
	})

	t.Run("autocomplete", func(t *testing.T) {
		loadModels(t, srv, "autocomplete")
		cfg, err := srv.ModelConfig("autocomplete", 0)
		if err != nil {
			t.Fatal(err)
		}
		in, out := cfg.GetInput(), cfg.GetOutput()
		if cfg.GetMaxBatchSize() != 4 || cfg.GetDynamicBatching() == nil ||
			len(in) != 1 || in[0].GetName() != "VECTOR" || in[0].GetDataType() != modelconfig.DataType_TYPE_FP32 || !slices.Equal(in[0].GetDims(), []int64{3}) ||
			len(out) != 1 || out[0].GetName() != "LENGTH" || out[0].GetDataType() != modelconfig.DataType_TYPE_FP32 || !slices.Equal(out[0].GetDims(), []int64{1}) {
			t.Fatalf("completed config: max_batch_size %d, dynamic_batching %v, inputs %v, outputs %v",
				cfg.GetMaxBatchSize(), cfg.GetDynamicBatching(), in, out)
		}
		vs := []float32{3, 4, 0, 1, 2, 2}
		resp, err := srv.Infer(ctx, &triton.InferRequest{Model: "autocomplete", Inputs: []tensor.Tensor{must(tensor.From("VECTOR", tensor.Shape{2, 3}, vs))}})
		if err != nil {
			t.Fatal(err)
		}
		got, shape := output[float32](t, resp, "LENGTH")
		for i := range 2 {
			v := vs[3*i : 3*i+3]
			want := math.Sqrt(float64(v[0]*v[0] + v[1]*v[1] + v[2]*v[2]))
			if !slices.Equal(shape, tensor.Shape{2, 1}) || math.Abs(float64(got[i])-want) > 1e-6 {
				t.Errorf("LENGTH %v %v, want [2 1] with %v at %d", got, shape, want, i)
			}
		}
	})

	t.Run("units", func(t *testing.T) {
		// Two models of one Python-based backend (examples/backends/units),
		// each converting with its own parameters.
		loadModels(t, srv, "celsius_to_fahrenheit", "miles_to_km")
		for _, c := range []struct {
			model    string
			in, want []float64
		}{
			{"celsius_to_fahrenheit", []float64{0, 100, -40, 37}, []float64{32, 212, -40, 98.6}},
			{"miles_to_km", []float64{1, 26.2, 0}, []float64{1.609344, 42.1648128, 0}},
		} {
			cfg, err := srv.ModelConfig(c.model, 0)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.GetRuntime() != "model.py" || cfg.GetMaxBatchSize() != 8 || cfg.GetDynamicBatching() == nil || len(cfg.GetInput()) != 1 {
				t.Errorf("%s: runtime %q, max_batch_size %d, dynamic batching %v, inputs %v; want the backend's completion",
					c.model, cfg.GetRuntime(), cfg.GetMaxBatchSize(), cfg.GetDynamicBatching(), cfg.GetInput())
			}
			n := int64(len(c.in))
			resp, err := srv.Infer(ctx, &triton.InferRequest{Model: c.model, Inputs: []tensor.Tensor{must(tensor.From("IN", tensor.Shape{1, n}, c.in))}})
			if err != nil {
				t.Fatal(err)
			}
			got, shape := output[float64](t, resp, "OUT")
			if !slices.Equal(shape, tensor.Shape{1, n}) {
				t.Fatalf("%s: OUT shape %v", c.model, shape)
			}
			for i := range got {
				if math.Abs(got[i]-c.want[i]) > 1e-9 {
					t.Errorf("%s: OUT %v, want %v", c.model, got, c.want)
					break
				}
			}
		}
	})

	t.Run("repeat_py", func(t *testing.T) {
		loadModels(t, srv, "repeat_py")
		request := func(in []int32, delay []uint32) *triton.InferRequest {
			return &triton.InferRequest{Model: "repeat_py", Inputs: []tensor.Tensor{
				must(tensor.From("IN", tensor.Shape{int64(len(in))}, in)),
				must(tensor.From("DELAY", tensor.Shape{int64(len(delay))}, delay)),
				must(tensor.From("WAIT", tensor.Shape{1}, []uint32{0})),
			}}
		}
		for _, in := range [][]int32{{4, 8, 15, 16, 23, 42}, {-7}, {}} {
			var out []int32
			var idx []uint32
			for resp, err := range srv.InferStream(ctx, request(in, make([]uint32, len(in)))) {
				if err != nil {
					t.Errorf("IN %v: %v", in, err)
					break
				}
				// The model sends the final flag alone, which ends the
				// iteration without a response: every one has outputs.
				o, ok := resp.Output("OUT")
				if !ok || resp.Final {
					t.Errorf("IN %v: response %+v, want OUT and not final", in, resp)
					break
				}
				out = append(out, must(tensor.View[int32](o))...)
				i, _ := output[uint32](t, resp, "IDX")
				idx = append(idx, i...)
			}
			wantIdx := make([]uint32, len(in))
			for i := range wantIdx {
				wantIdx[i] = uint32(i)
			}
			if !slices.Equal(out, in) || !slices.Equal(idx, wantIdx) {
				t.Errorf("IN %v: OUT %v IDX %v; want OUT = IN, IDX %v", in, out, idx, wantIdx)
			}
		}
		// DELAY must match IN: the model answers InvalidArgument, its final
		// response.
		errs := 0
		for resp, err := range srv.InferStream(ctx, request([]int32{1, 2}, []uint32{0})) {
			errs++
			if resp != nil || triton.CodeOf(err) != triton.InvalidArgument || !strings.Contains(err.Error(), "DELAY has 1 elements, IN 2") {
				t.Errorf("DELAY shorter than IN: %v, %v; want InvalidArgument", resp, err)
			}
		}
		if errs != 1 {
			t.Errorf("DELAY shorter than IN: %d answers, want one error", errs)
		}
	})

	t.Run("counted", func(t *testing.T) {
		loadModels(t, srv, "counted")
		reg := prometheus.NewRegistry()
		c := metrics.NewCollector(srv, metrics.Config{DisableGPU: true})
		defer c.Close()
		reg.MustRegister(c)

		sizes := []int{1, 3, 5, 20, 0}
		var total float64
		for i, n := range sizes {
			x := make([]float32, n)
			var sum float32
			for j := range x {
				x[j] = float32(j) + 0.5
				sum += x[j]
			}
			total += float64(n)
			resp, err := infer(t, srv, "counted", must(tensor.From("INPUT", tensor.Shape{int64(n)}, x)))
			if err != nil {
				t.Fatal(err)
			}
			if got := floats(t, resp, "SUM"); len(got) != 1 || got[0] != sum {
				t.Errorf("SUM %v, want %v", got, sum)
			}
			if got, _ := output[float64](t, resp, "REQUESTS"); len(got) != 1 || got[0] != float64(i+1) {
				t.Errorf("REQUESTS %v after %d requests", got, i+1)
			}
		}
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		labels := map[string]string{"model": "counted", "version": "1"}
		if m := series(families, "counted_requests_total", labels); m == nil || m.GetCounter().GetValue() != float64(len(sizes)) {
			t.Errorf("counted_requests_total %v, want %d", m, len(sizes))
		}
		if m := series(families, "counted_last_size", labels); m == nil || m.GetGauge().GetValue() != float64(sizes[len(sizes)-1]) {
			t.Errorf("counted_last_size %v, want %d", m, sizes[len(sizes)-1])
		}
		m := series(families, "counted_input_size", labels)
		if m == nil || m.GetHistogram().GetSampleCount() != uint64(len(sizes)) || m.GetHistogram().GetSampleSum() != total {
			t.Fatalf("counted_input_size %v, want %d observations adding up to %v", m, len(sizes), total)
		}
		for _, b := range m.GetHistogram().GetBucket() {
			var n uint64
			for _, s := range sizes {
				if float64(s) <= b.GetUpperBound() {
					n++
				}
			}
			if b.GetCumulativeCount() != n {
				t.Errorf("counted_input_size bucket le=%v: %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), n)
			}
		}
	})
}

// series finds the series of family name with exactly labels.
func series(families []*dto.MetricFamily, name string, labels map[string]string) *dto.Metric {
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if len(got) == len(labels) && func() bool {
				for k, v := range labels {
					if got[k] != v {
						return false
					}
				}
				return true
			}() {
				return m
			}
		}
	}
	return nil
}

func softmax(x []float32) []float32 {
	m := slices.Max(x)
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

func argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}
