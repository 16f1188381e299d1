package fil

// Forest is a loaded tree model, whatever library or reader holds it: the
// XGBoost C API (package backend/fil/xgboost) or our LightGBM reader
// (package backend/fil/lightgbm). The backend turns its outputs into
// Triton FIL's output__0 (class, P(class 1) or per-class probabilities)
// and treeshap_output.
//
// A Forest is safe for concurrent use: several instances of a model may
// share one.
type Forest interface {
	// Features is the number of input features a row has.
	Features() int
	// Outputs is the number of values Predict writes per row: 1 for a
	// regressor and a binary classifier, k for a k-class classifier.
	Outputs() int
	// Predict computes n rows (rows holds n×Features() values, row after
	// row; NaN is a missing value) into out (n×Outputs() values), as the
	// training library's own predict does: the prediction of a regressor,
	// P(class 1) of a binary classifier, the class probabilities of a
	// multi-class classifier (for XGBoost's multi:softmax, the softmax of
	// the margins rather than the class index). It never sees an
	// infinity: the backend refuses those first.
	Predict(rows []float32, n int, out []float32) error
	// SHAP computes n rows' SHAP contributions into out: per row,
	// Outputs() groups of Features()+1 values, the last one of each group
	// being the bias (expected value), in the margin space, as the
	// training library's pred_contribs gives them. A Forest that cannot
	// returns an error wrapping errors.ErrUnsupported.
	SHAP(rows []float32, n int, out []float32) error
	// Close releases the model. Predict and SHAP are not called after.
	Close() error
}
