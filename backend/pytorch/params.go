package pytorch

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/triton-go/triton/modelconfig"
)

// The model configuration parameters the backend reads (Triton's PyTorch
// backend keys, string_value each).
const (
	ParamInferenceMode             = "INFERENCE_MODE"
	ParamDisableOptimizedExecution = "DISABLE_OPTIMIZED_EXECUTION"
	ParamIntraOpThreadCount        = "INTRA_OP_THREAD_COUNT"
	ParamInterOpThreadCount        = "INTER_OP_THREAD_COUNT"
	ParamEnableJITExecutor         = "ENABLE_JIT_EXECUTOR"
	ParamEnableJITProfiling        = "ENABLE_JIT_PROFILING"
	ParamEnableTensorFuser         = "ENABLE_TENSOR_FUSER"
	ParamEnableWeightSharing       = "ENABLE_WEIGHT_SHARING"
	ParamEnableCacheCleaning       = "ENABLE_CACHE_CLEANING"
	ParamDisableCUDNN              = "DISABLE_CUDNN"
)

// tristate is an optional boolean: unset leaves libtorch's default.
type tristate int8

const (
	unset tristate = iota
	off
	on
)

// settings are a model's parameters, parsed as Triton's backend parses
// them: booleans case-insensitive true/on/1 or false/off/0, integers
// decimal; an absent key keeps the default.
type settings struct {
	inferenceMode    bool // default true
	disableOptimized bool
	intraOpThreads   int // 0: libtorch's default
	interOpThreads   int
	jitExecutor      tristate
	jitProfiling     tristate
	tensorFuser      tristate
	weightSharing    bool
	cacheCleaning    bool // GPU only: no effect on CPU instances
	disableCUDNN     bool // GPU only: no effect on CPU instances
}

// parseBool is Triton's ParseBoolValue.
func parseBool(v string) (bool, error) {
	switch strings.ToLower(v) {
	case "true", "on", "1":
		return true, nil
	case "false", "off", "0":
		return false, nil
	}
	return false, fmt.Errorf("failed to convert '%s' to boolean", v)
}

// parseInt is Triton's ParseIntValue (std::stoi), without stoi's leniency
// for trailing text: "4 threads" is refused rather than read as 4.
func parseInt(v string) (int, error) {
	n, err := strconv.Atoi(strings.TrimLeft(v, " \t\n\r\f\v"))
	if err != nil {
		return 0, fmt.Errorf("failed to convert '%s' to integral number", v)
	}
	return n, nil
}

// parseSettings reads the parameters of cfg. Its errors name the model and
// the parameter and wrap [backend.ErrInvalidInput] (Triton's INVALID_ARG).
func parseSettings(model string, cfg *modelconfig.ModelConfig) (settings, error) {
	s := settings{inferenceMode: true}
	params := cfg.GetParameters()
	var err error
	get := func(key string) (string, bool) {
		p, ok := params[key]
		if !ok || err != nil {
			return "", false
		}
		return p.GetStringValue(), true
	}
	fail := func(key string, e error) {
		err = invalidf("parameter '%s' of model '%s': %v", key, model, e)
	}
	boolean := func(key string, dst *bool) {
		if v, ok := get(key); ok {
			b, e := parseBool(v)
			if e != nil {
				fail(key, e)
				return
			}
			*dst = b
		}
	}
	optional := func(key string, dst *tristate) {
		if v, ok := get(key); ok {
			b, e := parseBool(v)
			if e != nil {
				fail(key, e)
				return
			}
			*dst = off
			if b {
				*dst = on
			}
		}
	}
	integer := func(key string, dst *int) {
		if v, ok := get(key); ok {
			n, e := parseInt(v)
			if e != nil {
				fail(key, e)
				return
			}
			*dst = max(n, 0) // Triton applies only values > 0
		}
	}
	boolean(ParamDisableOptimizedExecution, &s.disableOptimized)
	boolean(ParamEnableCacheCleaning, &s.cacheCleaning)
	boolean(ParamInferenceMode, &s.inferenceMode)
	boolean(ParamDisableCUDNN, &s.disableCUDNN)
	optional(ParamEnableTensorFuser, &s.tensorFuser)
	boolean(ParamEnableWeightSharing, &s.weightSharing)
	optional(ParamEnableJITProfiling, &s.jitProfiling)
	optional(ParamEnableJITExecutor, &s.jitExecutor)
	integer(ParamIntraOpThreadCount, &s.intraOpThreads)
	integer(ParamInterOpThreadCount, &s.interOpThreads)
	return s, err
}
