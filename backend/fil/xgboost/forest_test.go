package xgboost_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/triton-go/triton/backend/fil"
	"github.com/triton-go/triton/backend/fil/xgboost"
	"github.com/triton-go/triton/cgo/xgbrun"
)

var _ fil.Forest = (*xgboost.Forest)(nil)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// needLibrary loads XGBoost for a test; without it the test is skipped on
// a developer's machine and fails under CI=true, where scripts/deps.sh
// (make deps) has installed libxgboost-dev (internal/testenv's rule for
// native libraries).
func needLibrary(tb testing.TB) {
	tb.Helper()
	err := xgboost.OpenLibrary("")
	if err == nil {
		return
	}
	msg := fmt.Sprintf("%v (run make deps: scripts/deps.sh installs it)", err)
	if os.Getenv("CI") == "true" {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
}

// expectation is a NAME.expect.json of scripts/gen-fil-models.py: a
// held-out input set and XGBoost's answers for it.
type expectation struct {
	Name      string
	Objective string
	Features  int
	Outputs   int
	Rows      int
	Input     []float32
	Predict   []float32
	Contribs  []float32
	Formats   map[string]xgboost.Format // file → format
}

var extFormats = map[string]xgboost.Format{".model": xgboost.Legacy, ".json": xgboost.JSON, ".ubj": xgboost.UBJSON}

// float32s reads a JSON array of numbers (null for NaN) as float32 values,
// each parsed directly to the nearest float32, so that the generator's
// shortest decimals give back its values exactly.
type float32s []float32

func (f *float32s) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*f = make([]float32, len(raw))
	for i, r := range raw {
		if string(r) == "null" {
			(*f)[i] = float32(math.NaN())
			continue
		}
		v, err := strconv.ParseFloat(string(r), 32)
		if err != nil {
			return err
		}
		(*f)[i] = float32(v)
	}
	return nil
}

func expectations(tb testing.TB) []expectation {
	tb.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "*.expect.json"))
	if err != nil || len(paths) == 0 {
		tb.Fatalf("no testdata/*.expect.json (%v); run scripts/gen-fil-models.py", err)
	}
	var out []expectation
	for _, p := range paths {
		var raw struct {
			Objective         string
			Features, Outputs int
			Rows              int
			Input             float32s
			Predict           float32s
			Contribs          float32s
		}
		data, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		if err := json.Unmarshal(data, &raw); err != nil {
			tb.Fatalf("%s: %v", p, err)
		}
		name := strings.TrimSuffix(filepath.Base(p), ".expect.json")
		e := expectation{Name: name, Objective: raw.Objective, Features: raw.Features, Outputs: raw.Outputs, Rows: raw.Rows,
			Input: raw.Input, Predict: raw.Predict, Contribs: raw.Contribs, Formats: map[string]xgboost.Format{}}
		for ext, f := range extFormats {
			file := filepath.Join("testdata", name+ext)
			if _, err := os.Stat(file); err == nil {
				e.Formats[file] = f
			}
		}
		if len(e.Input) != e.Rows*e.Features || len(e.Predict) != e.Rows*e.Outputs ||
			len(e.Contribs) != e.Rows*e.Outputs*(e.Features+1) || len(e.Formats) < 2 {
			tb.Fatalf("%s: inconsistent sizes, or fewer than two model files", p)
		}
		out = append(out, e)
	}
	return out
}

// sameBits compares float32 slices bit for bit (so NaN equals NaN, and
// -0 differs from 0).
func sameBits(a, b []float32) (int, bool) {
	if len(a) != len(b) {
		return -1, false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return i, false
		}
	}
	return 0, true
}

// TestMatchesXGBoost checks every model file against XGBoost's own Python
// answers on the held-out rows, NaN rows included: predictions and SHAP
// values must be equal bit for bit (the same library computes both, on
// the same float32 inputs, in the same order), whether the rows come all
// at once, one at a time or in uneven batches.
func TestMatchesXGBoost(t *testing.T) {
	needLibrary(t)
	for _, e := range expectations(t) {
		for file, format := range e.Formats {
			t.Run(filepath.Base(file), func(t *testing.T) {
				f, err := xgboost.Load(file, xgboost.Options{Format: format})
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				if f.Features() != e.Features || f.Outputs() != e.Outputs || f.Objective() != e.Objective {
					t.Fatalf("Features, Outputs, Objective = %d, %d, %s; want %d, %d, %s",
						f.Features(), f.Outputs(), f.Objective(), e.Features, e.Outputs, e.Objective)
				}
				for _, batch := range []int{e.Rows, 1, 7} {
					got := make([]float32, len(e.Predict))
					shap := make([]float32, len(e.Contribs))
					w, sw := e.Outputs, e.Outputs*(e.Features+1)
					for r := 0; r < e.Rows; r += batch {
						n := min(batch, e.Rows-r)
						in := e.Input[r*e.Features : (r+n)*e.Features]
						if err := f.Predict(in, n, got[r*w:(r+n)*w]); err != nil {
							t.Fatal(err)
						}
						if err := f.SHAP(in, n, shap[r*sw:(r+n)*sw]); err != nil {
							t.Fatal(err)
						}
					}
					if i, ok := sameBits(got, e.Predict); !ok {
						t.Fatalf("batches of %d: prediction %d (row %d) is %v, XGBoost's %v", batch, i, i/w, got[i], e.Predict[i])
					}
					if i, ok := sameBits(shap, e.Contribs); !ok {
						t.Fatalf("batches of %d: SHAP value %d (row %d) is %v, XGBoost's %v", batch, i, i/sw, shap[i], e.Contribs[i])
					}
				}
			})
		}
	}
}

// TestConcurrentPredict runs Predict and SHAP on one Forest from many
// goroutines (under -race in make test), each checking its answers.
func TestConcurrentPredict(t *testing.T) {
	needLibrary(t)
	for _, e := range expectations(t) {
		if e.Name != "softprob" && e.Name != "categorical" {
			continue
		}
		var file string
		for p, f := range e.Formats {
			if f == xgboost.UBJSON {
				file = p
			}
		}
		f, err := xgboost.Load(file, xgboost.Options{Format: xgboost.UBJSON, Threads: 2})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for g := range 8 {
			wg.Go(func() {
				got := make([]float32, len(e.Predict))
				shap := make([]float32, len(e.Contribs))
				for range 25 {
					if err := f.Predict(e.Input, e.Rows, got); err != nil {
						errs <- err
						return
					}
					if _, ok := sameBits(got, e.Predict); !ok {
						errs <- fmt.Errorf("%s, goroutine %d: predictions differ", e.Name, g)
						return
					}
				}
				if err := f.SHAP(e.Input, e.Rows, shap); err != nil {
					errs <- err
					return
				}
				if _, ok := sameBits(shap, e.Contribs); !ok {
					errs <- fmt.Errorf("%s, goroutine %d: SHAP values differ", e.Name, g)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		if err := f.Predict(e.Input, 1, make([]float32, e.Outputs)); !errors.Is(err, xgbrun.ErrClosed) {
			t.Errorf("Predict after Close: %v", err)
		}
	}
}

// TestWrongFormat loads each model file as each other format: a clear
// error, naming the file and both formats, and no crash.
func TestWrongFormat(t *testing.T) {
	needLibrary(t)
	for _, e := range expectations(t) {
		for file, format := range e.Formats {
			for _, wrong := range []xgboost.Format{xgboost.Legacy, xgboost.JSON, xgboost.UBJSON} {
				if wrong == format {
					continue
				}
				f, err := xgboost.Load(file, xgboost.Options{Format: wrong})
				if err == nil {
					f.Close()
					t.Fatalf("%s as %v: loaded", file, wrong)
				}
				msg := err.Error()
				if !errors.Is(err, xgbrun.ErrFormat) || !strings.Contains(msg, file) ||
					!strings.Contains(msg, wrong.String()) || !strings.Contains(msg, format.String()) {
					t.Errorf("%s as %v: %v", file, wrong, err)
				}
			}
		}
	}
	// One message in full, as a user meets it.
	_, err := xgboost.Load("testdata/binary.model", xgboost.Options{Format: xgboost.JSON})
	want := `xgboost: loading testdata/binary.model as xgboost_json (XGBoost JSON): not a well-formed XGBoost model: ` +
		`the data is XGBoost legacy binary (it starts with "binf"), not XGBoost JSON`
	if err == nil || err.Error() != want {
		t.Errorf("error\n%v\nwant\n%s", err, want)
	}
}

// TestTruncated loads each model file cut short at a spread of lengths:
// every one is an error naming the file.
func TestTruncated(t *testing.T) {
	needLibrary(t)
	for _, e := range expectations(t) {
		for file, format := range e.Formats {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []int{0, 1, 3, 4, 5, 100, 140, len(data) / 3, len(data) / 2, len(data) - 100, len(data) - 2, len(data) - 1} {
				f, err := xgboost.LoadBytes(file, data[:n], xgboost.Options{Format: format})
				if err == nil {
					f.Close()
					t.Fatalf("%s cut to %d bytes: loaded", file, n)
				}
				if !errors.Is(err, xgbrun.ErrFormat) || !strings.Contains(err.Error(), file) {
					t.Errorf("%s cut to %d bytes: %v", file, n, err)
				}
			}
		}
	}
}

// TestMissingLibrary points the loader at a library that does not exist:
// the error names it and says what to install. It holds whether or not
// XGBoost is installed (a loaded library does not stand in for a path
// that names another).
func TestMissingLibrary(t *testing.T) {
	_, err := xgboost.Load("testdata/binary.model", xgboost.Options{Format: xgboost.Legacy, LibraryPath: "/nonexistent/libxgboost.so.0"})
	if !errors.Is(err, xgboost.ErrNoLibrary) || !strings.Contains(err.Error(), "/nonexistent/libxgboost.so.0") ||
		!strings.Contains(err.Error(), "libxgboost0") || !strings.Contains(err.Error(), xgboost.LibraryEnv) {
		t.Fatalf("Load: %v", err)
	}
	t.Setenv(xgboost.LibraryEnv, "/nonexistent/env/libxgboost.so")
	_, err = xgboost.Load("testdata/binary.model", xgboost.Options{Format: xgboost.Legacy})
	if !errors.Is(err, xgboost.ErrNoLibrary) || !strings.Contains(err.Error(), "/nonexistent/env/libxgboost.so") {
		t.Fatalf("Load with %s set: %v", xgboost.LibraryEnv, err)
	}
}

// TestAllowUnknownField adds fields XGBoost does not know to a JSON model,
// at the top, in the learner, in the model parameters and in a tree: it
// loads and predicts the same with either value of AllowUnknownField,
// because XGBoost 1.7.4 reads only the fields it knows.
func TestAllowUnknownField(t *testing.T) {
	needLibrary(t)
	data, err := os.ReadFile("testdata/regression.json")
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	for _, r := range []struct{ old, new string }{
		{`{"learner":{`, `{"extra_top":{"a":[1,2]},"learner":{"extra_learner":"x",`},
		{`"learner_model_param":{`, `"learner_model_param":{"extra_param":"7",`},
		{`"tree_param":{`, `"tree_param":{"extra_tree_param":"1",`},
		{`{"base_weights":`, `{"extra_tree":[true,null],"base_weights":`},
	} {
		if !strings.Contains(s, r.old) {
			t.Fatalf("regression.json has no %s", r.old)
		}
		s = strings.Replace(s, r.old, r.new, 1)
	}
	e := expectations(t)
	var want []float32
	var input []float32
	var rows int
	for _, x := range e {
		if x.Name == "regression" {
			want, input, rows = x.Predict, x.Input, x.Rows
		}
	}
	for _, allow := range []bool{false, true} {
		f, err := xgboost.LoadBytes("regression+unknown.json", []byte(s), xgboost.Options{Format: xgboost.JSON, AllowUnknownField: allow})
		if err != nil {
			t.Fatalf("AllowUnknownField %v: %v", allow, err)
		}
		got := make([]float32, rows)
		if err := f.Predict(input, rows, got); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if _, ok := sameBits(got, want); !ok {
			t.Fatalf("AllowUnknownField %v: predictions differ", allow)
		}
	}
}

func TestParseFormat(t *testing.T) {
	for in, want := range map[string]xgboost.Format{"xgboost": xgboost.Legacy, "xgboost_json": xgboost.JSON, "xgboost_ubj": xgboost.UBJSON} {
		if got, err := xgboost.ParseFormat(in); err != nil || got != want {
			t.Errorf("ParseFormat(%q) = %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "lightgbm", "treelite_checkpoint", "XGBoost"} {
		if _, err := xgboost.ParseFormat(in); err == nil {
			t.Errorf("ParseFormat(%q): nil error", in)
		}
	}
	if _, err := xgboost.LoadBytes("m", []byte("x"), xgboost.Options{}); err == nil || !strings.Contains(err.Error(), "Options.Format") {
		t.Errorf("LoadBytes without a format: %v", err)
	}
}

// TestLoadErrors covers the file-level errors of Load.
func TestLoadErrors(t *testing.T) {
	needLibrary(t)
	if _, err := xgboost.Load("testdata/nonexistent.json", xgboost.Options{Format: xgboost.JSON}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	// A JSON model whose objective XGBoost does not know: XGBoost's own
	// error, with the file's name.
	data, err := os.ReadFile("testdata/binary.json")
	if err != nil {
		t.Fatal(err)
	}
	data = bytes.Replace(data, []byte(`"name":"binary:logistic"`), []byte(`"name":"binary:unheard_of"`), 1)
	_, err = xgboost.LoadBytes("odd.json", data, xgboost.Options{Format: xgboost.JSON})
	var xe *xgbrun.Error
	if !errors.As(err, &xe) || !strings.Contains(err.Error(), "odd.json") || !strings.Contains(err.Error(), "binary:unheard_of") {
		t.Errorf("unknown objective: %v", err)
	}
}
