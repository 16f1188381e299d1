package python_test

import (
	"os"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/triton-go/triton"
	_ "github.com/triton-go/triton/backend/onnxruntime" // registers "onnxruntime" for the example repository's ONNX models
	"github.com/triton-go/triton/internal/testenv"
	"github.com/triton-go/triton/tensor"
)

// exampleRepo is the repository cmd/tritonserver serves in make run.
const exampleRepo = "../../examples/model_repository"

// exampleServer serves exampleRepo in explicit mode with nothing loaded
// (its Go-backend models need cmd/tritonserver); tests load what they use.
func exampleServer(t *testing.T) *triton.Server {
	t.Helper()
	needPython(t)
	testenv.NeedLibrary(t)
	srv, err := triton.New(triton.WithModelRepository(exampleRepo), triton.WithBackendDirectory("../../examples/backends"),
		triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit}))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return srv
}

// loadModels loads models into srv, failing t on the first error.
func loadModels(t *testing.T, srv *triton.Server, models ...string) {
	t.Helper()
	for _, m := range models {
		if err := srv.Load(t.Context(), m, nil); err != nil {
			t.Fatalf("load %s: %v", m, err)
		}
	}
}

// wordPiece is a WordPiece tokenizer written here from the algorithm's
// description (BERT's basic tokenizer, lower-casing, then greedy
// longest-match-first pieces with "##" continuations), to check the
// preprocess model's Python one against.
type wordPiece struct {
	ids    map[string]int64
	tokens []string
}

func readVocab(t testing.TB, path string) *wordPiece {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	w := &wordPiece{ids: map[string]int64{}}
	w.tokens = strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	for i, tok := range w.tokens {
		w.ids[tok] = int64(i)
	}
	return w
}

// words splits lower-cased text into runs of letters, digits and '_', and
// every other non-space rune on its own.
func words(text string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, string(cur))
			cur = cur[:0]
		}
	}
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_':
			cur = append(cur, r)
		case unicode.IsSpace(r):
			flush()
		default:
			flush()
			out = append(out, string(r))
		}
	}
	flush()
	return out
}

// pieces cuts one word into vocabulary ids, or [UNK] when no cut exists.
func (w *wordPiece) pieces(word string) []int64 {
	r := []rune(word)
	var ids []int64
	for start := 0; start < len(r); {
		end := len(r)
		for ; end > start; end-- {
			p := string(r[start:end])
			if start > 0 {
				p = "##" + p
			}
			if id, ok := w.ids[p]; ok {
				ids = append(ids, id)
				break
			}
		}
		if end == start {
			return []int64{w.ids["[UNK]"]}
		}
		start = end
	}
	return ids
}

// encode gives text's ids and attention mask, n long: [CLS], the pieces
// (as many as fit), [SEP], then [PAD].
func (w *wordPiece) encode(text string, n int) (ids, mask []int64) {
	var body []int64
	for _, word := range words(text) {
		body = append(body, w.pieces(word)...)
	}
	body = body[:min(len(body), n-2)]
	ids = append(append([]int64{w.ids["[CLS]"]}, body...), w.ids["[SEP]"])
	mask = make([]int64, n)
	for i := range ids {
		mask[i] = 1
	}
	for len(ids) < n {
		ids = append(ids, w.ids["[PAD]"])
	}
	return ids, mask
}

// tokensOf names ids, stopping at the first [PAD].
func (w *wordPiece) tokensOf(ids []int64) []string {
	var out []string
	for _, id := range ids {
		if w.tokens[id] == "[PAD]" {
			break
		}
		out = append(out, w.tokens[id])
	}
	return out
}

// output returns a copy of resp's output name and its shape, or reports
// an error on t (not fatal: goroutines use it) and returns nil.
func output[T tensor.Element](t testing.TB, resp *triton.InferResponse, name string) ([]T, tensor.Shape) {
	t.Helper()
	out, ok := resp.Output(name)
	if !ok {
		t.Errorf("no output %q in %v", name, resp.Outputs)
		return nil, nil
	}
	v, err := tensor.View[T](out)
	if err != nil {
		t.Errorf("output %s: %v", name, err)
		return nil, nil
	}
	return slices.Clone(v), out.Shape
}

// stringsOut returns resp's BYTES output name, or reports an error on t
// (not fatal) and returns nil.
func stringsOut(t testing.TB, resp *triton.InferResponse, name string) []string {
	t.Helper()
	out, ok := resp.Output(name)
	if !ok {
		t.Errorf("no output %q in %v", name, resp.Outputs)
		return nil
	}
	s, err := tensor.Strings(out)
	if err != nil {
		t.Errorf("output %s: %v", name, err)
	}
	return s
}

// parameter returns the string_value of a model's config parameter.
func parameter(t testing.TB, srv *triton.Server, model, key string) string {
	t.Helper()
	cfg, err := srv.ModelConfig(model, 0)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := cfg.GetParameters()[key]
	if !ok {
		t.Fatalf("model %s has no parameter %q", model, key)
	}
	return p.GetStringValue()
}

// inferences is a model's InferenceCount and ExecutionCount so far.
func inferences(t testing.TB, srv *triton.Server, model string) (rows, executions uint64) {
	t.Helper()
	st, err := srv.Model(model).Stats()
	if err != nil {
		t.Fatal(err)
	}
	return st.InferenceCount, st.ExecutionCount
}
