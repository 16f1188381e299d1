package lightgbm

import (
	"errors"
	"fmt"
)

// zeroThreshold is LightGBM's kZeroThreshold. Its parsers and its C API's
// dense-matrix rows drop values with |x| ≤ zeroThreshold (the row is sparse
// and they read as 0), and a missingZero split takes them for missing.
const zeroThreshold = 1e-35

// value returns feature j of row x as LightGBM's predictor sees it: as a
// double, 0 when |x| ≤ kZeroThreshold, NaN kept.
func value(x []float32, j int32) float64 {
	v := float64(x[j])
	if v >= -zeroThreshold && v <= zeroThreshold {
		return 0
	}
	return v
}

// next is Tree::Decision: the child of nd that value v goes to.
func (t *tree) next(nd *node, v float64) int32 {
	if nd.categorical {
		// Tree::CategoricalDecision: NaN and negative categories go
		// right; otherwise the category (v truncated to an int) goes
		// left when its bit is set. A value beyond int32 converts to
		// INT_MIN on x86 in LightGBM, hence right.
		if !(v > -1) || v >= 1<<31 {
			return nd.right
		}
		c := uint32(int32(v))
		bits := t.catBits[nd.catLo:nd.catHi]
		if int(c/32) < len(bits) && bits[c/32]>>(c%32)&1 != 0 {
			return nd.left
		}
		return nd.right
	}
	// Tree::NumericalDecision.
	if v != v && nd.missing != missingNaN {
		v = 0
	}
	if (nd.missing == missingZero && v >= -zeroThreshold && v <= zeroThreshold) ||
		(nd.missing == missingNaN && v != v) {
		if nd.defaultLeft {
			return nd.left
		}
		return nd.right
	}
	if v <= nd.threshold {
		return nd.left
	}
	return nd.right
}

// leaf is Tree::GetLeaf: the leaf row x falls in.
func (t *tree) leaf(x []float32) int {
	if len(t.nodes) == 0 {
		return 0
	}
	i := int32(0)
	for i >= 0 {
		nd := &t.nodes[i]
		i = t.next(nd, value(x, nd.feature))
	}
	return int(^i)
}

// predict is Tree::Predict: the tree's output for row x.
func (t *tree) predict(x []float32) float64 {
	l := t.leaf(x)
	if t.linear == nil {
		return t.leafValue[l]
	}
	out := t.linear.konst[l]
	for i, j := range t.linear.features[l] {
		v := value(x, j)
		if v != v {
			return t.leafValue[l]
		}
		out += float64(t.linear.coeff[l][i] * v) // no fused multiply-add: LightGBM rounds the product
	}
	return out
}

// raw is GBDT::PredictRaw: the summed scores of row x into score (what
// LightGBM's raw-score prediction gives, not averaged for average_output).
func (f *Forest) raw(x []float32, score []float64) {
	clear(score)
	k := len(score)
	for it := range f.iterations {
		for c, t := range f.trees[it*k : (it+1)*k] {
			score[c] += t.predict(x)
		}
	}
}

// checkRows validates the arguments of Predict and SHAP: n rows of
// Features() values in rows, width values per row in out.
func (f *Forest) checkRows(rows []float32, n int, out []float32, width int) error {
	if n < 0 {
		return fmt.Errorf("lightgbm: %d rows", n)
	}
	if n > len(rows)/f.numFeatures {
		return fmt.Errorf("lightgbm: %d rows of %d features need %d values, got %d", n, f.numFeatures, int64(n)*int64(f.numFeatures), len(rows))
	}
	if n > 0 && n > len(out)/width {
		return fmt.Errorf("lightgbm: %d rows need %d output values, got %d", n, int64(n)*int64(width), len(out))
	}
	return nil
}

// Predict computes n rows into out, as LightGBM's predict does (not raw
// score): rows holds at least n×Features() values, row after row, NaN
// being a missing value; out receives Outputs() values per row and must
// hold at least n×Outputs(). The prediction is the objective's transform
// of the summed (for average_output, averaged) tree outputs: the value of
// a regressor (e^score for poisson, gamma and tweedie), P(class 1) of a
// binary classifier, the softmax (multiclass) or per-class sigmoids
// (multiclassova) of a k-class one, the score of a ranker. It computes in
// float64 exactly as LightGBM does (its float32 input read as double, the
// same operations in the same order) and rounds the results to float32.
//
// The only errors are for inconsistent arguments. Predict is safe for
// concurrent use.
func (f *Forest) Predict(rows []float32, n int, out []float32) error {
	if err := f.checkRows(rows, n, out, f.numClass); err != nil {
		return err
	}
	var buf [8]float64 // no allocation for up to 8 outputs
	var score []float64
	if f.numClass <= len(buf) {
		score = buf[:f.numClass]
	} else {
		score = make([]float64, f.numClass)
	}
	for r := range n {
		f.predict64(rows[r*f.numFeatures:(r+1)*f.numFeatures], score)
		for c, s := range score {
			out[r*f.numClass+c] = float32(s)
		}
	}
	return nil
}

// predict64 is GBDT::Predict for one row: raw scores, averaged for
// average_output, then the objective's transform.
func (f *Forest) predict64(x []float32, score []float64) {
	f.raw(x, score)
	if f.averageOutput {
		for c := range score {
			score[c] /= float64(f.iterations)
		}
	}
	f.obj.convert(score)
}

// maxSHAPDepth bounds the depth of trees SHAP accepts: its path buffer
// grows with the square of the depth ((d+1)(d+2)/2 elements of 32 bytes,
// 16 MiB at 1023) and its recursion with the depth.
const maxSHAPDepth = 1023

// SHAP computes n rows' SHAP contributions into out, as LightGBM's
// predict_contrib (pred_contrib=True) does: per row, Outputs() groups of
// Features()+1 values, the per-feature contributions then the expected
// value, in raw-score space (before the objective's transform). It is
// TreeSHAP (Lundberg et al., arXiv:1706.06060) as LightGBM's
// Tree::TreeSHAP implements it, with the training counts (leaf_count,
// internal_count) as each node's cover, in float64, rounded to float32
// at the end. Like LightGBM it does not divide by the number of
// iterations for average_output (random forest) models: there the values
// add up to the raw score (the trees' sum), not to the averaged one. out
// must hold at least n×Outputs()×(Features()+1) values.
//
// A model with linear trees gets an error wrapping [errors.ErrUnsupported],
// as LightGBM refuses them ("Predicting SHAP feature contributions is not
// implemented for linear trees"). So does one with a tree deeper than 1023
// levels (LightGBM's own trees stay far below). Otherwise the only errors
// are for inconsistent arguments. SHAP is safe for concurrent use.
func (f *Forest) SHAP(rows []float32, n int, out []float32) error {
	width := f.numClass * (f.numFeatures + 1)
	if err := f.checkRows(rows, n, out, width); err != nil {
		return err
	}
	if f.linear {
		return errUnsupported("lightgbm: SHAP values of linear trees (LightGBM: \"Predicting SHAP feature contributions is not implemented for linear trees\")")
	}
	if f.maxDepth > maxSHAPDepth {
		return fmt.Errorf("lightgbm: SHAP of a tree %d levels deep (the limit is %d): %w", f.maxDepth, maxSHAPDepth, errors.ErrUnsupported)
	}
	phi := make([]float64, width)
	path := make([]pathElement, (f.maxDepth+1)*(f.maxDepth+2)/2)
	for r := range n {
		f.contrib(rows[r*f.numFeatures:(r+1)*f.numFeatures], phi, path)
		for i, v := range phi {
			out[r*width+i] = float32(v)
		}
	}
	return nil
}

// contrib is GBDT::PredictContrib for one row.
func (f *Forest) contrib(x []float32, phi []float64, path []pathElement) {
	clear(phi)
	k, nf := f.numClass, f.numFeatures
	for it := range f.iterations {
		for c := range k {
			f.trees[it*k+c].contrib(x, phi[c*(nf+1):(c+1)*(nf+1)], path)
		}
	}
}

// expectedValue is Tree::ExpectedValue.
func (t *tree) expectedValue() float64 {
	if len(t.nodes) == 0 {
		return t.leafValue[0]
	}
	total := t.innerCount[0]
	var ev float64
	for i, v := range t.leafValue {
		ev += float64((t.leafCount[i] / total) * v)
	}
	return ev
}

// contrib is Tree::PredictContrib: adds the tree's contributions to phi
// (Features()+1 values, the last the expected value).
func (t *tree) contrib(x []float32, phi []float64, path []pathElement) {
	phi[len(phi)-1] += t.expectedValue()
	if len(t.nodes) > 0 {
		t.shap(x, phi, 0, 0, path, 1, 1, -1)
	}
}

// count is Tree::data_count: the training rows that reached node (a node
// index, or a complemented leaf index).
func (t *tree) count(node int32) float64 {
	if node >= 0 {
		return t.innerCount[node]
	}
	return t.leafCount[^node]
}
