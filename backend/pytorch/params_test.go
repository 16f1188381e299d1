package pytorch

import (
	"errors"
	"testing"

	"github.com/triton-go/triton/backend"
)

func param(key, value string) string {
	return `parameters { key: "` + key + `" value: { string_value: "` + value + `" } } `
}

func TestParseSettingsDefaults(t *testing.T) {
	s, err := parseSettings("m", parse(t, ``))
	if err != nil {
		t.Fatal(err)
	}
	want := settings{inferenceMode: true}
	if s != want {
		t.Errorf("defaults %+v, want %+v (inference mode on, the rest unset)", s, want)
	}
}

func TestParseSettings(t *testing.T) {
	cfg := parse(t, param(ParamInferenceMode, "OFF")+param(ParamDisableOptimizedExecution, "True")+
		param(ParamIntraOpThreadCount, "3")+param(ParamInterOpThreadCount, "-2")+
		param(ParamEnableJITExecutor, "0")+param(ParamEnableJITProfiling, "on")+param(ParamEnableTensorFuser, "false")+
		param(ParamEnableWeightSharing, "1")+param(ParamEnableCacheCleaning, "TRUE")+param(ParamDisableCUDNN, "On"))
	s, err := parseSettings("m", cfg)
	if err != nil {
		t.Fatal(err)
	}
	want := settings{
		inferenceMode: false, disableOptimized: true, intraOpThreads: 3, interOpThreads: 0,
		jitExecutor: off, jitProfiling: on, tensorFuser: off,
		weightSharing: true, cacheCleaning: true, disableCUDNN: true,
	}
	if s != want {
		t.Errorf("settings %+v, want %+v", s, want)
	}
}

func TestParseSettingsErrors(t *testing.T) {
	for _, c := range []struct{ params, want string }{
		{param(ParamInferenceMode, "yes"), "parameter 'INFERENCE_MODE' of model 'm': failed to convert 'yes' to boolean"},
		{param(ParamEnableJITExecutor, ""), "parameter 'ENABLE_JIT_EXECUTOR' of model 'm': failed to convert '' to boolean"},
		{param(ParamDisableCUDNN, "2"), "parameter 'DISABLE_CUDNN' of model 'm': failed to convert '2' to boolean"},
		{param(ParamIntraOpThreadCount, "four"), "parameter 'INTRA_OP_THREAD_COUNT' of model 'm': failed to convert 'four' to integral number"},
		{param(ParamInterOpThreadCount, "4 threads"), "parameter 'INTER_OP_THREAD_COUNT' of model 'm': failed to convert '4 threads' to integral number"},
	} {
		_, err := parseSettings("m", parse(t, c.params))
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: error %v, want %q", c.params, err, c.want)
		}
		if !errors.Is(err, backend.ErrInvalidInput) {
			t.Errorf("%s: error %v does not wrap ErrInvalidInput (Triton's INVALID_ARG)", c.params, err)
		}
	}
}
