package lightgbm

import (
	"fmt"
	"sync"
	"testing"
)

// benchModels are fixture models of different shapes: 12 trees of 15
// leaves (binary), 30 trees of 7 leaves over 5 classes (softmax), and
// categorical splits.
var benchModels = []string{"binary/binary", "multiclass/softmax", "categorical/binary"}

func loadBench(tb testing.TB, name string) (*Forest, []float32, int) {
	tb.Helper()
	f, err := Load("testdata/" + name + "/model.txt")
	if err != nil {
		tb.Fatal(err)
	}
	rows, n := inputs(tb, fixture{name, "testdata/" + name}, f.Features())
	return f, rows, n
}

// rowsOf repeats the fixture's rows up to n rows.
func rowsOf(rows []float32, have, features, n int) []float32 {
	out := make([]float32, 0, n*features)
	for i := range n {
		r := i % have
		out = append(out, rows[r*features:(r+1)*features]...)
	}
	return out
}

func BenchmarkPredict(b *testing.B) {
	for _, name := range benchModels {
		f, rows, have := loadBench(b, name)
		for _, n := range []int{1, 64} {
			b.Run(fmt.Sprintf("%s/rows=%d", name, n), func(b *testing.B) {
				in := rowsOf(rows, have, f.Features(), n)
				out := make([]float32, n*f.Outputs())
				b.ReportAllocs()
				for b.Loop() {
					if err := f.Predict(in, n, out); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/row")
			})
		}
	}
}

func BenchmarkSHAP(b *testing.B) {
	for _, name := range benchModels {
		f, rows, have := loadBench(b, name)
		for _, n := range []int{1, 64} {
			b.Run(fmt.Sprintf("%s/rows=%d", name, n), func(b *testing.B) {
				in := rowsOf(rows, have, f.Features(), n)
				out := make([]float32, n*f.Outputs()*(f.Features()+1))
				b.ReportAllocs()
				for b.Loop() {
					if err := f.SHAP(in, n, out); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkLoad(b *testing.B) {
	data := mustRead(b, "testdata/multiclass/softmax/model.txt")
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse("", data); err != nil {
			b.Fatal(err)
		}
	}
}

// TestPredictAllocs holds Predict to no allocation for models of up to 8
// outputs: it runs per batch on the serving path.
func TestPredictAllocs(t *testing.T) {
	for _, name := range benchModels {
		f, rows, n := loadBench(t, name)
		out := make([]float32, n*f.Outputs())
		allocs := testing.AllocsPerRun(20, func() {
			if err := f.Predict(rows, n, out); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: Predict allocates %v times per call, want 0", name, allocs)
		}
	}
}

// TestConcurrent runs Predict and SHAP on one Forest from several
// goroutines (for the race detector) and checks they agree with a
// sequential run.
func TestConcurrent(t *testing.T) {
	f, rows, n := loadBench(t, "multiclass/softmax")
	want := make([]float32, n*f.Outputs())
	if err := f.Predict(rows, n, want); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			out := make([]float32, n*f.Outputs())
			phi := make([]float32, n*f.Outputs()*(f.Features()+1))
			for range 20 {
				if err := f.Predict(rows, n, out); err != nil {
					t.Error(err)
					return
				}
				if err := f.SHAP(rows, n, phi); err != nil {
					t.Error(err)
					return
				}
				for i := range out {
					if out[i] != want[i] {
						t.Errorf("row %d: %v, want %v", i, out[i], want[i])
						return
					}
				}
			}
		})
	}
	wg.Wait()
}
