package xgboost_test

import (
	"fmt"
	"testing"

	"github.com/triton-go/triton/backend/fil/xgboost"
)

// benchInput is rows rows of e's held-out input, repeated as needed.
func benchInput(e expectation, rows int) []float32 {
	in := make([]float32, 0, rows*e.Features)
	for len(in) < rows*e.Features {
		in = append(in, e.Input...)
	}
	return in[:rows*e.Features]
}

// BenchmarkPredict is Forest.Predict on pre-formed batches of 1 and 64
// rows (one of XGBoost's blocks of rows, so one thread), from one
// goroutine and from GOMAXPROCS goroutines sharing the Forest: the limit
// the fil backend's own benchmark can approach, XGBoost's in-place
// prediction with nothing around it. ns/row is the time per row.
func BenchmarkPredict(b *testing.B) {
	needLibrary(b)
	exps := map[string]expectation{}
	for _, e := range expectations(b) {
		exps[e.Name] = e
	}
	for _, name := range []string{"regression", "softprob"} {
		e := exps[name]
		f, err := xgboost.Load("testdata/"+name+".ubj", xgboost.Options{Format: xgboost.UBJSON})
		if err != nil {
			b.Fatal(err)
		}
		for _, rows := range []int{1, 64} {
			in := benchInput(e, rows)
			b.Run(fmt.Sprintf("model=%s/rows=%d", name, rows), func(b *testing.B) {
				out := make([]float32, rows*f.Outputs())
				b.ReportAllocs()
				for b.Loop() {
					if err := f.Predict(in, rows, out); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
			})
			b.Run(fmt.Sprintf("model=%s/rows=%d/parallel", name, rows), func(b *testing.B) {
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					out := make([]float32, rows*f.Outputs())
					for pb.Next() {
						if err := f.Predict(in, rows, out); err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
			})
		}
		f.Close()
	}
}
