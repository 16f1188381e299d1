package lightgbm

import (
	"bufio"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The fixtures under testdata/<data set>/<model>/ are LightGBM 4's own
// (scripts/gen-lightgbm-fixtures.sh): model.txt trained by its CLI, and
// its predictions for ../input.tsv: predict.tsv (the objective's output),
// raw.tsv (raw scores) and contrib.tsv (SHAP). The CLI prints 17
// significant digits, so those are LightGBM's doubles exactly, and the
// inputs are float32 values, so both sides start from the same doubles.

// fixture is one model directory.
type fixture struct {
	name string // "binary/v3"
	dir  string
}

func fixtures(t testing.TB) []fixture {
	t.Helper()
	models, err := filepath.Glob("testdata/*/*/model.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(models) < 18 {
		t.Fatalf("found %d fixture models under testdata/, want at least 18", len(models))
	}
	var fx []fixture
	for _, m := range models {
		dir := filepath.Dir(m)
		name := filepath.ToSlash(strings.TrimPrefix(dir, "testdata"+string(filepath.Separator)))
		fx = append(fx, fixture{name, dir})
	}
	return fx
}

// readTable reads a tab-separated file of numbers ("nan" for NaN).
func readTable(t testing.TB, path string) [][]float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows [][]float64
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var row []float64
		for _, s := range strings.Split(sc.Text(), "\t") {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			row = append(row, v)
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// inputs returns a fixture's input rows as float32, without the label
// column, checking they are float32 values (as the generator wrote them).
func inputs(t testing.TB, fx fixture, features int) ([]float32, int) {
	t.Helper()
	table := readTable(t, filepath.Join(fx.dir, "..", "input.tsv"))
	var rows []float32
	for i, r := range table {
		if len(r) != features+1 {
			t.Fatalf("%s: input row %d has %d columns, want label + %d features", fx.name, i, len(r), features)
		}
		for _, v := range r[1:] {
			if float64(float32(v)) != v && v == v {
				t.Fatalf("%s: input %v is not a float32", fx.name, v)
			}
			rows = append(rows, float32(v))
		}
	}
	return rows, len(table)
}

// closeTo reports whether got is within tol of want, relative for
// |want| > 1 and absolute below.
func closeTo(got, want, tol float64) bool {
	if math.IsNaN(want) || math.IsNaN(got) {
		return math.IsNaN(want) && math.IsNaN(got)
	}
	return math.Abs(got-want) <= tol*math.Max(1, math.Abs(want))
}

// Tolerances. In float64 we do LightGBM's arithmetic in its order, so the
// scores agree to the bit except where a libm function (exp, log1p) of Go
// and glibc differ in the last place: 1e-13 allows that and nothing else.
// Predict and SHAP return float32, the doubles rounded: they must agree
// with LightGBM's double rounded to float32 within 1e-6 (relative above 1,
// absolute below), i.e. to float32 precision (2^-24 ≈ 6e-8 relative) with
// room for a value that lands on a rounding boundary.
const (
	tol64 = 1e-13
	tol32 = 1e-6
)

func TestFixtures(t *testing.T) {
	var exact, total int     // float64 values bit-identical to LightGBM's
	var dev64, dev32 float64 // the largest differences, as closeTo measures them
	for _, fx := range fixtures(t) {
		t.Run(fx.name, func(t *testing.T) {
			f, err := Load(filepath.Join(fx.dir, "model.txt"))
			if err != nil {
				t.Fatal(err)
			}
			rows, n := inputs(t, fx, f.Features())
			k, nf := f.Outputs(), f.Features()
			check := func(what string, want [][]float64, width int, got64 func(x []float32, out []float64), got32 []float32) {
				t.Helper()
				if len(want) != n {
					t.Fatalf("%s: %d rows, input has %d", what, len(want), n)
				}
				out := make([]float64, width)
				for r := range n {
					if len(want[r]) != width {
						t.Fatalf("%s row %d: %d values, want %d", what, r, len(want[r]), width)
					}
					got64(rows[r*nf:(r+1)*nf], out)
					for c, w := range want[r] {
						total++
						if out[c] == w {
							exact++
						}
						dev64 = max(dev64, math.Abs(out[c]-w)/math.Max(1, math.Abs(w)))
						if !closeTo(out[c], w, tol64) {
							t.Errorf("%s row %d [%d]: float64 %.17g, LightGBM %.17g", what, r, c, out[c], w)
						}
						if got32 == nil {
							continue
						}
						g := float64(got32[r*width+c])
						dev32 = max(dev32, math.Abs(g-w)/math.Max(1, math.Abs(w)))
						if !closeTo(g, w, tol32) {
							t.Errorf("%s row %d [%d]: float32 %.9g, LightGBM %.17g", what, r, c, g, w)
						}
					}
				}
			}

			out := make([]float32, n*k)
			if err := f.Predict(rows, n, out); err != nil {
				t.Fatal(err)
			}
			check("predict", readTable(t, filepath.Join(fx.dir, "predict.tsv")), k, f.predict64, out)
			// raw.tsv: there is no float32 API for raw scores.
			check("raw", readTable(t, filepath.Join(fx.dir, "raw.tsv")), k, f.raw, nil)

			contrib := filepath.Join(fx.dir, "contrib.tsv")
			shap := make([]float32, n*k*(nf+1))
			err = f.SHAP(rows, n, shap)
			if _, statErr := os.Stat(contrib); statErr != nil {
				// LightGBM refuses SHAP for this model (linear trees).
				if err == nil {
					t.Fatal("SHAP succeeded where LightGBM refuses")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			path := make([]pathElement, (f.maxDepth+1)*(f.maxDepth+2)/2)
			check("contrib", readTable(t, contrib), k*(nf+1), func(x []float32, phi []float64) {
				f.contrib(x, phi, path)
			}, shap)
		})
	}
	t.Logf("%d of %d float64 values bit-identical to LightGBM's; largest difference %.3g in float64, %.3g in float32", exact, total, dev64, dev32)
}
