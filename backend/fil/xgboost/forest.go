package xgboost

import (
	"errors"
	"fmt"
	"os"

	"github.com/triton-go/triton/cgo/xgbrun"
)

// Format is a model file's serialization, which the caller declares (FIL's
// model_type); see [ParseFormat].
type Format = xgbrun.Format

// The formats, with FIL's model_type for each.
const (
	Legacy = xgbrun.Legacy // "xgboost": XGBoost's deprecated binary format, file xgboost.model
	JSON   = xgbrun.JSON   // "xgboost_json": file xgboost.json
	UBJSON = xgbrun.UBJSON // "xgboost_ubj": file xgboost.ubj
)

var modelTypes = map[string]Format{"xgboost": Legacy, "xgboost_json": JSON, "xgboost_ubj": UBJSON}

// ParseFormat returns the format of FIL's model_type value: "xgboost",
// "xgboost_json" or "xgboost_ubj". Other values are errors.
func ParseFormat(modelType string) (Format, error) {
	if f, ok := modelTypes[modelType]; ok {
		return f, nil
	}
	return 0, fmt.Errorf("xgboost: model type %q is not an XGBoost format (xgboost, xgboost_json, xgboost_ubj)", modelType)
}

// modelType is FIL's name of f.
func modelType(f Format) string {
	for k, v := range modelTypes {
		if v == f {
			return k
		}
	}
	return f.String()
}

// Options are how a model is loaded: FIL's parameters, and where the
// library is. The zero value is not valid: Format is required.
type Options struct {
	// Format is the file's format, as the model's configuration declares
	// it: nothing is detected, and a file of another format is an error.
	Format Format
	// AllowUnknownField is FIL's xgboost_allow_unknown_field, which FIL
	// hands to Treelite's JSON and UBJSON readers. It changes nothing
	// here: XGBoost 1.7.4's readers take no such flag and read the fields
	// they know, ignoring the others, so a model with unknown fields
	// loads whatever its value (where FIL, with false, refuses it).
	AllowUnknownField bool
	// Threads is FIL's cpu_nthread: the most threads one call runs on;
	// 0 or less (FIL's default is -1) means all, as XGBoost counts them
	// (the CPUs, or OMP_NUM_THREADS, and no more than the cgroup's CPU
	// quota). A call of n rows uses at most ceil(n/64) threads for
	// Predict (XGBoost's blocks of rows) and n for SHAP.
	Threads int
	// LibraryPath is the XGBoost shared library to load when none is
	// loaded yet; see [OpenLibrary].
	LibraryPath string
}

// Forest is an XGBoost model loaded with XGBoost's C API: the fil
// backend's Forest for the model types xgboost, xgboost_json and
// xgboost_ubj. Create it with [Load] or [LoadBytes].
//
// A Forest is safe for concurrent use: Predict and SHAP may run on any
// number of goroutines at once (XGBoost's in-place prediction keeps its
// buffers per thread and model, and each call copies its result out).
// Close waits for the calls in progress; calls after it fail.
type Forest struct {
	b         *xgbrun.Booster
	info      xgbrun.Info
	out       xgbrun.Output
	outputs   int
	threads   int
	objective string
}

// Load reads the model file at path and loads it as [LoadBytes] does,
// with path as its name.
func Load(path string, opts Options) (*Forest, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("xgboost: %w", err)
	}
	return LoadBytes(path, data, opts)
}

// LoadBytes loads the model data, a file of format opts.Format; name
// names it in errors. It loads the XGBoost library first if none is
// loaded ([OpenLibrary] with opts.LibraryPath). data is not retained.
//
// Before XGBoost reads anything, the data's first bytes must be those of
// the declared format (XGBoost's loader goes by them, not by a declared
// format), and its structure is checked where XGBoost's readers trust it:
// a truncated, corrupt or mislabelled file is an error wrapping
// [xgbrun.ErrFormat] that names the file and the format, never a crash
// (see [xgbrun.Check]). After loading, the model XGBoost holds is checked
// again (trees, features, output groups). Errors from XGBoost itself are
// [*xgbrun.Error]s; gblinear and multi-target models are refused with
// errors wrapping [errors.ErrUnsupported]; a missing library is an error
// wrapping [ErrNoLibrary].
func LoadBytes(name string, data []byte, opts Options) (*Forest, error) {
	if opts.Format != Legacy && opts.Format != JSON && opts.Format != UBJSON {
		return nil, fmt.Errorf("xgboost: loading %s: Options.Format is %v, not one of Legacy, JSON, UBJSON", name, opts.Format)
	}
	if err := OpenLibrary(opts.LibraryPath); err != nil {
		return nil, err
	}
	b, err := xgbrun.Load(data, opts.Format)
	if err != nil {
		return nil, fmt.Errorf("xgboost: loading %s as %s (%s): %w", name, modelType(opts.Format), opts.Format, err)
	}
	info := b.Info()
	f := &Forest{b: b, info: info, out: xgbrun.Values, outputs: info.ValueWidth, threads: opts.Threads, objective: info.Objective}
	if info.Objective == "multi:softmax" {
		f.out, f.outputs = xgbrun.SoftmaxMargins, info.Groups
	}
	if f.outputs != info.Groups {
		b.Close()
		return nil, fmt.Errorf("xgboost: %s: objective %s gives %d values per row for %d output groups: %w",
			name, info.Objective, f.outputs, info.Groups, errors.ErrUnsupported)
	}
	return f, nil
}

// Features is the number of values in an input row: the model's
// num_feature.
func (f *Forest) Features() int { return f.info.Features }

// Outputs is the number of values Predict writes per row: the model's
// number of classes for multi:softprob and multi:softmax, 1 otherwise.
func (f *Forest) Outputs() int { return f.outputs }

// Objective is the name of the model's objective, as "binary:logistic".
func (f *Forest) Objective() string { return f.objective }

// Predict computes n rows (rows[:n×Features()], row after row; NaN is a
// missing value) into out[:n×Outputs()], bit for bit as XGBoost's Python
// Booster.predict does: the objective's transformation of the margins,
// which is the prediction of a regressor, P(class 1) for binary:logistic,
// the class probabilities for multi:softprob. Two objectives differ from
// what the fil backend's other forests give: for multi:softmax, whose
// predict gives class numbers, Predict gives the class probabilities
// (XGBoost's softmax of the margins, exactly as multi:softprob computes
// them); binary:logitraw, as in Python (and Triton's FIL, whose Treelite
// gives it the identity transform), gives the margin, not a probability.
// rows and out are used during the call only.
func (f *Forest) Predict(rows []float32, n int, out []float32) error {
	return f.b.Predict(rows, n, f.out, f.threads, out)
}

// SHAP computes n rows' SHAP values (read as Predict reads them) into
// out[:n×Outputs()×(Features()+1)]: per row and output group, one value per
// feature and the bias last, in the margin space, bit for bit as Python's
// Booster.predict(pred_contribs=True) gives them (exact TreeSHAP). Trees
// more than [xgbrun.MaxSHAPDepth] deep make it fail with an error wrapping
// errors.ErrUnsupported.
func (f *Forest) SHAP(rows []float32, n int, out []float32) error {
	return f.b.Contributions(rows, n, f.threads, out)
}

// Close frees the model after the calls in progress. It is idempotent.
func (f *Forest) Close() error { return f.b.Close() }
