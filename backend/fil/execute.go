package fil

import (
	"context"
	"errors"
	"fmt"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/tensor"
)

// Execute predicts the batch's rows at once. A request with an infinity
// in its input fails alone; the others run without it.
func (in *instance) Execute(_ context.Context, b *backend.Batch) error {
	m := in.m
	var good []*backend.Request
	for _, r := range b.Requests {
		if _, _, err := m.rowsOf(r); err != nil && !errors.Is(err, errNoRows) {
			r.Fail(err)
			continue
		}
		good = append(good, r)
	}
	shap := false
	for _, r := range good {
		shap = shap || (m.shapDims != nil && r.Wants(SHAPName))
	}
	if len(good) == len(b.Requests) {
		t, err := b.Input(InputName)
		if err != nil {
			return err
		}
		xs, err := tensor.View[float32](t)
		if err != nil {
			return err
		}
		outs, err := m.compute(xs, len(xs)/m.features, shap)
		if err != nil {
			return err
		}
		for _, o := range outs {
			if err := b.SetOutput(o); err != nil {
				return err
			}
		}
		return nil
	}
	for _, r := range good {
		xs, n, err := m.rowsOf(r)
		if err != nil && !errors.Is(err, errNoRows) {
			return err
		}
		outs, err := m.compute(xs, n, shap && r.Wants(SHAPName))
		if err != nil {
			r.Fail(err)
			continue
		}
		for _, o := range outs {
			r.SetOutput(o)
		}
	}
	return nil
}

// compute predicts n rows and shapes output__0 (and treeshap_output when
// shap is set) as Triton FIL does (spec §B3).
func (m *model) compute(xs []float32, n int, shap bool) ([]tensor.Tensor, error) {
	k := m.forest.Outputs()
	pred := make([]float32, n*k)
	if n > 0 {
		if err := m.forest.Predict(xs, n, pred); err != nil {
			return nil, fmt.Errorf("model '%s': predicting %d rows: %w", m.name, n, err)
		}
	}
	var vals []float32
	switch {
	case !m.p.isClassifier, m.p.predictProba && k > 1:
		vals = pred
	case m.p.predictProba && m.outDims[0] == 2: // binary: [1-p, p]
		vals = make([]float32, 2*n)
		for i, p := range pred {
			vals[2*i], vals[2*i+1] = 1-p, p
		}
	case m.p.predictProba:
		vals = pred
	case k == 1: // class = score > threshold
		vals = make([]float32, n)
		for i, p := range pred {
			if p > m.p.threshold {
				vals[i] = 1
			}
		}
	default: // the first strict maximum's class
		vals = make([]float32, n)
		for i := range n {
			row := pred[i*k : (i+1)*k]
			best := 0
			for c, p := range row {
				if p > row[best] {
					best = c
				}
			}
			vals[i] = float32(best)
		}
	}
	out, err := tensor.From(OutputName, append(tensor.Shape{int64(n)}, m.outDims...), vals)
	if err != nil {
		return nil, err
	}
	outs := []tensor.Tensor{out}
	if shap {
		contrib := make([]float32, n*k*(m.features+1))
		if n > 0 {
			if err := m.forest.SHAP(xs, n, contrib); err != nil {
				return nil, fmt.Errorf("model '%s': %s for %d rows: %w", m.name, SHAPName, n, err)
			}
		}
		t, err := tensor.From(SHAPName, append(tensor.Shape{int64(n)}, m.shapDims...), contrib)
		if err != nil {
			return nil, err
		}
		outs = append(outs, t)
	}
	return outs, nil
}
