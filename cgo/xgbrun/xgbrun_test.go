//go:build cgo && linux

package xgbrun

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func TestOpen(t *testing.T) {
	needLibrary(t)
	if v := Version(); !strings.HasPrefix(v, "1.") && !strings.HasPrefix(v, "2.") && !strings.HasPrefix(v, "3.") {
		t.Errorf("Version() = %q", v)
	}
	if n := MaxThreads(); n < 1 {
		t.Errorf("MaxThreads() = %d", n)
	}
	for _, name := range libraryNames {
		if err := Open(name); err != nil && !strings.Contains(err.Error(), "cannot open shared object") {
			t.Errorf("Open(%q) again: %v", name, err)
		}
	}
	err := Open("/nonexistent/libxgboost.so.0")
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/libxgboost.so.0") {
		t.Errorf("Open of a missing file: %v", err)
	}
	err = Open("libm.so.6")
	if err == nil || !strings.Contains(err.Error(), "not an XGBoost library") {
		t.Errorf("Open(libm.so.6): %v", err)
	}
	if err := Open(""); err == nil {
		t.Error("Open(\"\"): nil error")
	}
}

func load(tb testing.TB, name string, f Format) *Booster {
	tb.Helper()
	b, err := Load(readFile(tb, filepath.Join(testdata, name)), f)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// nanRows is n rows of features values, every other value NaN.
func nanRows(n, features int) []float32 {
	rows := make([]float32, n*features)
	for i := range rows {
		if i%2 == 0 {
			rows[i] = float32(math.NaN())
		} else {
			rows[i] = float32(i%7) / 3
		}
	}
	return rows
}

func TestLoadInfo(t *testing.T) {
	needLibrary(t)
	for _, c := range []struct {
		file string
		f    Format
		want Info
	}{
		{"regression.model", Legacy, Info{Features: 6, Groups: 1, Objective: "reg:squarederror", Booster: "gbtree", Trees: 8, MaxDepth: 4, ValueWidth: 1, MarginWidth: 1}},
		{"softprob.ubj", UBJSON, Info{Features: 6, Classes: 3, Groups: 3, Objective: "multi:softprob", Booster: "gbtree", Trees: 18, MaxDepth: 3, ValueWidth: 3, MarginWidth: 3}},
		{"softmax.json", JSON, Info{Features: 6, Classes: 3, Groups: 3, Objective: "multi:softmax", Booster: "gbtree", Trees: 18, MaxDepth: 3, ValueWidth: 1, MarginWidth: 3}},
		{"dart.model", Legacy, Info{Features: 6, Groups: 1, Objective: "reg:squarederror", Booster: "dart", Trees: 6, MaxDepth: 3, ValueWidth: 1, MarginWidth: 1}},
		{"categorical.ubj", UBJSON, Info{Features: 6, Groups: 1, Objective: "reg:squarederror", Booster: "gbtree", Trees: 6, MaxDepth: 3, Categorical: true, ValueWidth: 1, MarginWidth: 1}},
	} {
		t.Run(c.file, func(t *testing.T) {
			b := load(t, c.file, c.f)
			defer b.Close()
			if got := b.Info(); got != c.want {
				t.Fatalf("Info() = %+v, want %+v", got, c.want)
			}
		})
	}
}

// TestOutputs checks the three outputs of a multi:softmax model: class
// numbers (Python's predict), margins, and softmax of the margins, which
// must be the multi:softprob model's values bit for bit (the two models
// have the same trees).
func TestOutputs(t *testing.T) {
	needLibrary(t)
	sm := load(t, "softmax.json", JSON)
	defer sm.Close()
	sp := load(t, "softprob.json", JSON)
	defer sp.Close()
	const n = 100
	rows := nanRows(n, 6)
	classes := make([]float32, n)
	margins := make([]float32, 3*n)
	probs := make([]float32, 3*n)
	want := make([]float32, 3*n)
	for _, c := range []struct {
		b   *Booster
		out Output
		dst []float32
	}{{sm, Values, classes}, {sm, Margins, margins}, {sm, SoftmaxMargins, probs}, {sp, Values, want}} {
		if err := c.b.Predict(rows, n, c.out, 0, c.dst); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		if !slices.Equal(probs[3*i:3*i+3], want[3*i:3*i+3]) {
			t.Fatalf("row %d: softmax of the margins %v, softprob %v", i, probs[3*i:3*i+3], want[3*i:3*i+3])
		}
		argmax := 0
		for k := range 3 {
			if margins[3*i+k] > margins[3*i+argmax] {
				argmax = k
			}
		}
		if classes[i] != float32(argmax) {
			t.Fatalf("row %d: class %v, margins %v", i, classes[i], margins[3*i:3*i+3])
		}
	}
}

func TestPredictArguments(t *testing.T) {
	needLibrary(t)
	b := load(t, "softprob.model", Legacy)
	rows := nanRows(2, 6)
	out := make([]float32, 6)
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"negative rows", b.Predict(rows, -1, Values, 0, out), "-1 rows"},
		{"short rows", b.Predict(rows[:11], 2, Values, 0, out), "11 values for 2 rows"},
		{"short out", b.Predict(rows, 2, Values, 0, out[:5]), "room for 5 values"},
		{"unknown output", b.Predict(rows, 2, Output(7), 0, out), "unknown output"},
		{"short SHAP out", b.Contributions(rows, 2, 0, out), "room for 6 values, 2 rows need 42"},
		{"too many rows", b.Predict(rows, math.MaxInt32, Values, 0, out), "too many"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, c.err, c.want)
		}
	}
	if err := b.Predict(nil, 0, Values, 0, nil); err != nil {
		t.Errorf("0 rows: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := b.Predict(rows, 2, Values, 0, out); !errors.Is(err, ErrClosed) {
		t.Errorf("Predict after Close: %v", err)
	}
	if err := b.Contributions(rows, 2, 0, make([]float32, 42)); !errors.Is(err, ErrClosed) {
		t.Errorf("Contributions after Close: %v", err)
	}
}

// TestConcurrent predicts from many goroutines at once, in place and
// through DMatrices, with varying thread counts: every result must be the
// one a lone call gives.
func TestConcurrent(t *testing.T) {
	needLibrary(t)
	for _, file := range []string{"softprob.ubj", "dart.ubj"} {
		t.Run(file, func(t *testing.T) {
			b := load(t, file, UBJSON)
			defer b.Close()
			info := b.Info()
			const n = 150
			rows := nanRows(n, info.Features)
			want := make([]float32, n*info.ValueWidth)
			if err := b.Predict(rows, n, Values, 1, want); err != nil {
				t.Fatal(err)
			}
			wantSHAP := make([]float32, n*info.Groups*(info.Features+1))
			if err := b.Contributions(rows, n, 1, wantSHAP); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			errs := make(chan error, 16)
			for g := range 16 {
				wg.Go(func() {
					got := make([]float32, len(want))
					shap := make([]float32, len(wantSHAP))
					for i := range 20 {
						rowsN := 1 + (g*7+i*13)%n
						if err := b.Predict(rows, rowsN, Values, g%4, got); err != nil {
							errs <- err
							return
						}
						if !slices.Equal(got[:rowsN*info.ValueWidth], want[:rowsN*info.ValueWidth]) {
							errs <- fmt.Errorf("goroutine %d, %d rows: predictions differ", g, rowsN)
							return
						}
						if i%5 == 0 {
							if err := b.Contributions(rows, rowsN, g%3, shap); err != nil {
								errs <- err
								return
							}
							w := rowsN * info.Groups * (info.Features + 1)
							if !slices.Equal(shap[:w], wantSHAP[:w]) {
								errs <- fmt.Errorf("goroutine %d, %d rows: SHAP values differ", g, rowsN)
								return
							}
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

// encodeJSON writes a decoded document back as JSON text, as XGBoost
// would (NaN for NaN), for the load tests of mutated models.
func encodeJSON(buf *bytes.Buffer, doc any) {
	switch v := doc.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			buf.WriteString(strconv.Quote(k))
			buf.WriteByte(':')
			encodeJSON(buf, v[k])
		}
		buf.WriteByte('}')
	case []any:
		buf.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				buf.WriteByte(',')
			}
			encodeJSON(buf, x)
		}
		buf.WriteByte(']')
	case []int64:
		a := make([]any, len(v))
		for i, x := range v {
			a[i] = x
		}
		encodeJSON(buf, a)
	case []float64:
		a := make([]any, len(v))
		for i, x := range v {
			a[i] = x
		}
		encodeJSON(buf, a)
	case string:
		buf.WriteString(strconv.Quote(v))
	case int64:
		buf.WriteString(strconv.FormatInt(v, 10))
	case float64:
		switch {
		case math.IsNaN(v):
			buf.WriteString("NaN")
		case math.IsInf(v, 1):
			buf.WriteString("Infinity")
		case math.IsInf(v, -1):
			buf.WriteString("-Infinity")
		default:
			s := strconv.FormatFloat(v, 'g', -1, 64)
			if !strings.ContainsAny(s, ".eE") {
				s += ".0"
			}
			buf.WriteString(s)
		}
	case bool:
		buf.WriteString(strconv.FormatBool(v))
	case nil:
		buf.WriteString("null")
	default:
		panic(fmt.Sprintf("encodeJSON: %T", doc))
	}
}

// TestLoadChecksXGBoostsCopy loads models that XGBoost's loader accepts
// but whose trees would make prediction read out of bounds or loop: Load
// must refuse them, from its check of XGBoost's copy.
func TestLoadChecksXGBoostsCopy(t *testing.T) {
	needLibrary(t)
	for _, c := range []struct {
		name   string
		mutate func(doc map[string]any)
		want   string
	}{
		{"left child out of range", func(doc map[string]any) {
			firstTree(doc)["left_children"].([]int64)[0] = 9999
		}, "node 0's children 9999"},
		{"cycle", func(doc map[string]any) {
			firstTree(doc)["left_children"].([]int64)[1] = 1
		}, "leads back to node 1"},
		{"split feature out of range", func(doc map[string]any) {
			firstTree(doc)["split_indices"].([]int64)[0] = 600
		}, "splits on feature 600"},
		{"group out of range", func(doc map[string]any) {
			path(doc, "learner", "gradient_booster", "model", "tree_info").([]int64)[2] = 5
		}, "tree 2 is in output group 5"},
	} {
		t.Run(c.name, func(t *testing.T) {
			doc := jsonModel(t, "regression")
			c.mutate(doc)
			var buf bytes.Buffer
			encodeJSON(&buf, doc)
			b, err := Load(buf.Bytes(), JSON)
			if err == nil {
				b.Close()
				t.Fatal("Load: nil error")
			}
			if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Load: %v, want ErrFormat containing %q", err, c.want)
			}
		})
	}
	// Unmutated, through the same encoder: loads.
	var buf bytes.Buffer
	encodeJSON(&buf, jsonModel(t, "categorical"))
	b, err := Load(buf.Bytes(), JSON)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
}

// TestXGBoostErrors checks that XGBoost's own refusals come back as
// *Error, without time stamp or stack trace.
func TestXGBoostErrors(t *testing.T) {
	needLibrary(t)
	doc := jsonModel(t, "regression")
	path(doc, "learner", "objective").(map[string]any)["name"] = "reg:nonsense"
	var buf bytes.Buffer
	encodeJSON(&buf, doc)
	b, err := Load(buf.Bytes(), JSON)
	if err == nil {
		b.Close()
		t.Fatal("Load: nil error")
	}
	var xe *Error
	if !errors.As(err, &xe) || xe.Op != "XGBoosterLoadModelFromBuffer" || !strings.Contains(xe.Msg, "reg:nonsense") ||
		strings.Contains(xe.Msg, "Stack trace") || strings.HasPrefix(xe.Msg, "[") {
		t.Fatalf("Load: %#v", err)
	}
}

// FuzzLoad loads mutated models: whatever Load accepts must predict and
// explain a few rows without crashing. The seed corpus runs in every test;
// `go test -fuzz FuzzLoad ./cgo/xgbrun` searches further.
func FuzzLoad(f *testing.F) {
	needLibrary(f)
	for path, format := range modelFiles(f) {
		f.Add(readFile(f, path), uint8(format))
	}
	f.Fuzz(func(t *testing.T, data []byte, format uint8) {
		b, err := Load(data, Format(format%3+1))
		if err != nil {
			return
		}
		defer b.Close()
		info := b.Info()
		rows := nanRows(3, info.Features)
		for i := range info.Features {
			rows[i] = 0
		}
		width := max(info.ValueWidth, info.MarginWidth)
		if err := b.Predict(rows, 3, Values, 0, make([]float32, 3*width)); err != nil {
			return
		}
		b.Predict(rows, 3, SoftmaxMargins, 0, make([]float32, 3*width))
		if info.Trees < 200 {
			b.Contributions(rows, 3, 0, make([]float32, 3*info.Groups*(info.Features+1)))
		}
	})
}
