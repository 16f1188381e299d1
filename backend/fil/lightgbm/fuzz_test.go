package lightgbm

import (
	"math"
	"path/filepath"
	"testing"
)

// FuzzLoad feeds Parse arbitrary bytes, seeded with every fixture model and
// the hand-written ones: it must never panic, and a model it accepts must
// predict and explain rows (zeros, NaN, values around the thresholds)
// without panicking or writing past its output.
func FuzzLoad(f *testing.F) {
	models, err := filepath.Glob("testdata/*/*/model.txt")
	if err != nil {
		f.Fatal(err)
	}
	for _, m := range models {
		f.Add(mustRead(f, m))
	}
	f.Add([]byte(tiny))
	f.Add([]byte(stump("10", "0.5")))
	f.Add([]byte(`{"learner":{}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse("fuzz", data)
		if err != nil {
			return
		}
		nf, k := m.Features(), m.Outputs()
		if nf > 1<<12 || k > 1<<8 {
			return // valid, but too wide to run quickly
		}
		rows := make([]float32, 4*nf)
		for i := range rows {
			switch i / nf {
			case 1:
				rows[i] = float32(math.NaN())
			case 2:
				rows[i] = float32(i%7) - 3.5
			case 3:
				rows[i] = 1e30
			}
		}
		out := make([]float32, 4*k+1)
		out[4*k] = 42
		if err := m.Predict(rows, 4, out); err != nil {
			t.Fatalf("Predict: %v", err)
		}
		if out[4*k] != 42 {
			t.Fatal("Predict wrote past n×Outputs()")
		}
		phi := make([]float32, 4*k*(nf+1)+1)
		phi[len(phi)-1] = 42
		if err := m.SHAP(rows, 4, phi); err == nil && phi[len(phi)-1] != 42 {
			t.Fatal("SHAP wrote past its output")
		}
	})
}
