package fil

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/modelconfig"
)

// Model types (parameter model_type) and their default file names, as
// Triton FIL's current code reads them (spec/pytorch-fil.md §B1).
var defaultFiles = map[string]string{
	"xgboost":             "xgboost.model",
	"xgboost_json":        "xgboost.json",
	"xgboost_ubj":         "xgboost.ubj",
	"lightgbm":            "model.txt",
	"treelite_checkpoint": "checkpoint.tl",
}

// params are a FIL model's parameters (spec §B2).
type params struct {
	modelType    string
	isClassifier bool
	predictProba bool
	threshold    float32
	allowUnknown bool // xgboost_allow_unknown_field
	threads      int  // cpu_nthread; -1: all
}

// layouts are the GPU tree layouts FIL accepts (no effect here).
var layouts = map[string]bool{"depth_first": true, "breadth_first": true, "layered": true}

// removed are the parameters FIL 25.09 removed, with what replaced each
// ("" for none); FIL warns and goes on.
var removed = map[string]string{
	"algo":             "layout",
	"threads_per_tree": "chunk_size",
	"output_class":     "is_classifier",
	"storage_type":     "",
	"blocks_per_sm":    "",
}

// readParams reads cfg's parameters with FIL's rules and messages: a bool
// is exactly "true" or "false"; a number that does not read takes its
// default, or fails when it has none; a missing parameter with no default
// fails. Removed and deprecated parameters are logged as FIL logs them.
func readParams(cfg *modelconfig.ModelConfig, log *zap.Logger) (params, error) {
	raw := map[string]string{}
	for k, v := range cfg.GetParameters() {
		raw[k] = v.GetStringValue()
	}
	p := params{modelType: "xgboost", threads: -1}
	if v, ok := raw["model_type"]; ok {
		p.modelType = v
	}
	switch {
	case defaultFiles[p.modelType] == "":
		return p, fmt.Errorf("%s not recognized as a valid serialization format.: %w", p.modelType, errors.ErrUnsupported)
	case p.modelType == "treelite_checkpoint":
		return p, fmt.Errorf("model_type treelite_checkpoint: Treelite checkpoints are not supported here; save the model in its library's own format (XGBoost binary, JSON or UBJSON; LightGBM text): %w", errors.ErrUnsupported)
	}
	for old, repl := range removed {
		if _, ok := raw[old]; !ok {
			continue
		}
		if repl != "" {
			log.Warn(fmt.Sprintf("The `%s` parameter has been removed in 25.09 release. Use `%s` instead.", old, repl))
		} else {
			log.Warn(fmt.Sprintf("The `%s` parameter has been removed in 25.09 release.", old))
		}
	}
	var err error
	if _, ok := raw["is_classifier"]; ok {
		if p.isClassifier, err = boolParam(raw, "is_classifier", false); err != nil {
			return p, err
		}
	} else if _, ok := raw["output_class"]; ok { // still honoured
		if p.isClassifier, err = boolParam(raw, "output_class", false); err != nil {
			return p, err
		}
	} else {
		return p, required("is_classifier")
	}
	if p.predictProba, err = boolParam(raw, "predict_proba", false); err != nil {
		return p, err
	}
	if p.allowUnknown, err = boolParam(raw, "xgboost_allow_unknown_field", false); err != nil {
		return p, err
	}
	if p.isClassifier {
		v, ok := raw["threshold"]
		if !ok {
			return p, required("threshold")
		}
		f, ok := readNumber(v)
		if !ok {
			return p, fmt.Errorf("Bad input for parameter threshold: %w", backend.ErrInvalidInput)
		}
		p.threshold = float32(f)
	} else {
		p.threshold = 0.5
	}
	if v, ok := raw["cpu_nthread"]; ok {
		if f, ok := readNumber(v); ok {
			p.threads = int(f)
		}
	}
	// GPU-only: read as FIL reads them, without effect on CPU.
	if v, ok := raw["layout"]; ok && !layouts[v] {
		return p, fmt.Errorf("Unknown nvForest layout name: %s: %w", v, backend.ErrInvalidInput)
	}
	if _, err := boolParam(raw, "use_experimental_optimizations", false); err != nil {
		return p, err
	}
	if _, ok := raw["use_experimental_optimizations"]; ok {
		log.Warn("use_experimental_optimizations option is deprecated. It will be removed in the 25.10 release.")
	}
	return p, nil
}

func required(k string) error {
	return fmt.Errorf("Required parameter %s not found in config: %w", k, backend.ErrInvalidInput)
}

// boolParam reads a bool parameter: exactly "true" or "false" (FIL's
// error is an internal one, as Triton answers it).
func boolParam(raw map[string]string, k string, def bool) (bool, error) {
	v, ok := raw[k]
	if !ok {
		return def, nil
	}
	switch v {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("Expected 'true' or 'false' for parameter '%s', got: '%s'", k, v)
}

var numberPrefix = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?`)

// readNumber reads a number as C++'s istream >> does: leading spaces
// skipped, the longest numeric prefix taken, the rest ignored.
func readNumber(v string) (float64, bool) {
	m := numberPrefix.FindString(strings.TrimLeft(v, " \t\n"))
	if m == "" {
		return 0, false
	}
	f, err := strconv.ParseFloat(m, 64)
	return f, err == nil
}
