package repository_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/repository"
)

// loadCorpus parses every testdata/corpus/*.pbtxt; the file name is the
// model name.
func loadCorpus(t *testing.T) map[string]*modelconfig.ModelConfig {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "corpus", "*.pbtxt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 15 {
		t.Fatalf("corpus has %d configs, want at least 15", len(files))
	}
	out := map[string]*modelconfig.ModelConfig{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := repository.ParseConfig(f, data)
		if err != nil {
			t.Fatalf("%v", err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".pbtxt")] = cfg
	}
	return out
}

// TestCorpus parses, normalizes, validates and round-trips every config of
// the corpus, on a machine without GPUs and on one with two.
func TestCorpus(t *testing.T) {
	corpus := loadCorpus(t)
	knownModel := func(name string) bool { _, ok := corpus[name]; return ok }
	for name, parsed := range corpus {
		t.Run(name, func(t *testing.T) {
			roundTrip(t, parsed)
			for _, gpus := range []int{0, 2} {
				cfg := proto.CloneOf(parsed)
				repository.Normalize(cfg, repository.NormalizeOptions{GPUs: gpus})
				path := filepath.Join("testdata", "corpus", name+".pbtxt")
				err := repository.Validate(path, cfg, repository.ValidateOptions{ModelName: name, KnownModel: knownModel})
				if err != nil {
					t.Fatalf("GPUs=%d: %v", gpus, err)
				}
				roundTrip(t, cfg)
				if cfg.GetPlatform() != "ensemble" && len(cfg.GetInstanceGroup()) == 0 {
					t.Errorf("GPUs=%d: no instance group after Normalize", gpus)
				}
			}
		})
	}
}

// roundTrip marshals cfg to text and parses it back.
func roundTrip(t *testing.T, cfg *modelconfig.ModelConfig) {
	t.Helper()
	out, err := prototext.MarshalOptions{Multiline: true}.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	back, err := repository.ParseConfig("roundtrip", out)
	if err != nil {
		t.Fatalf("re-parse: %v\n%s", err, out)
	}
	if !proto.Equal(cfg, back) {
		t.Fatalf("round trip changed the config:\n before {%s}\n after  {%s}", text(cfg), text(back))
	}
}

// TestCorpusCoverage keeps the corpus honest: each feature a real
// config.pbtxt uses must appear in at least one file.
func TestCorpusCoverage(t *testing.T) {
	corpus := loadCorpus(t)
	type cfg = *modelconfig.ModelConfig
	accel := func(c cfg, gpu bool, name string) bool {
		ea := c.GetOptimization().GetExecutionAccelerators()
		list := ea.GetCpuExecutionAccelerator()
		if gpu {
			list = ea.GetGpuExecutionAccelerator()
		}
		for _, a := range list {
			if a.GetName() == name && (name == "auto_mixed_precision" || len(a.GetParameters()) > 0) {
				return true
			}
		}
		return false
	}
	control := func(c cfg, k modelconfig.ModelSequenceBatching_Control_Kind) bool {
		for _, ci := range c.GetSequenceBatching().GetControlInput() {
			for _, ct := range ci.GetControl() {
				if ct.GetKind() == k {
					return true
				}
			}
		}
		return false
	}
	warmup := func(c cfg, pick func(*modelconfig.ModelWarmup_Input) bool) bool {
		for _, w := range c.GetModelWarmup() {
			for _, in := range w.GetInputs() {
				if pick(in) {
					return true
				}
			}
		}
		return false
	}
	anyInput := func(c cfg, pick func(*modelconfig.ModelInput) bool) bool {
		for _, in := range c.GetInput() {
			if pick(in) {
				return true
			}
		}
		return false
	}
	features := map[string]func(cfg) bool{
		"default scheduler":    func(c cfg) bool { return c.GetSchedulingChoice() == nil && c.GetPlatform() != "ensemble" },
		"dynamic batching":     func(c cfg) bool { return len(c.GetDynamicBatching().GetPreferredBatchSize()) > 0 },
		"priority levels":      func(c cfg) bool { return c.GetDynamicBatching().GetPriorityLevels() > 1 },
		"queue policies":       func(c cfg) bool { return len(c.GetDynamicBatching().GetPriorityQueuePolicy()) > 0 },
		"sequence direct":      func(c cfg) bool { return c.GetSequenceBatching().GetDirect() != nil },
		"sequence oldest":      func(c cfg) bool { return c.GetSequenceBatching().GetOldest() != nil },
		"control START":        func(c cfg) bool { return control(c, modelconfig.ModelSequenceBatching_Control_CONTROL_SEQUENCE_START) },
		"control READY":        func(c cfg) bool { return control(c, modelconfig.ModelSequenceBatching_Control_CONTROL_SEQUENCE_READY) },
		"control END":          func(c cfg) bool { return control(c, modelconfig.ModelSequenceBatching_Control_CONTROL_SEQUENCE_END) },
		"control CORRID":       func(c cfg) bool { return control(c, modelconfig.ModelSequenceBatching_Control_CONTROL_SEQUENCE_CORRID) },
		"implicit state":       func(c cfg) bool { return len(c.GetSequenceBatching().GetState()) > 0 },
		"initial state zero":   func(c cfg) bool { return hasInitialState(c, true) },
		"initial state file":   func(c cfg) bool { return hasInitialState(c, false) },
		"ensemble":             func(c cfg) bool { return len(c.GetEnsembleScheduling().GetStep()) > 1 },
		"graph level":          func(c cfg) bool { return c.GetOptimization().GetGraph() != nil },
		"cuda graphs":          func(c cfg) bool { return len(c.GetOptimization().GetCuda().GetGraphSpec()) > 0 },
		"accelerator tensorrt": func(c cfg) bool { return accel(c, true, "tensorrt") },
		"accelerator cuda":     func(c cfg) bool { return accel(c, true, "cuda") },
		"accelerator openvino": func(c cfg) bool { return accel(c, false, "openvino") },
		"warmup zero": func(c cfg) bool {
			return warmup(c, func(i *modelconfig.ModelWarmup_Input) bool { return i.GetZeroData() })
		},
		"warmup random": func(c cfg) bool {
			return warmup(c, func(i *modelconfig.ModelWarmup_Input) bool { return i.GetRandomData() })
		},
		"warmup file": func(c cfg) bool {
			return warmup(c, func(i *modelconfig.ModelWarmup_Input) bool { return i.GetInputDataFile() != "" })
		},
		"rate limiter":            func(c cfg) bool { return hasRateLimiter(c) },
		"response cache":          func(c cfg) bool { return c.GetResponseCache().GetEnable() },
		"batch input":             func(c cfg) bool { return len(c.GetBatchInput()) > 0 },
		"batch output":            func(c cfg) bool { return len(c.GetBatchOutput()) > 0 },
		"parameters":              func(c cfg) bool { return len(c.GetParameters()) > 0 },
		"version policy all":      func(c cfg) bool { return c.GetVersionPolicy().GetAll() != nil },
		"version policy specific": func(c cfg) bool { return c.GetVersionPolicy().GetSpecific() != nil },
		"version policy latest":   func(c cfg) bool { return c.GetVersionPolicy().GetLatest().GetNumVersions() > 1 },
		"metric tags":             func(c cfg) bool { return len(c.GetMetricTags()) > 0 },
		"model metrics":           func(c cfg) bool { return len(c.GetModelMetrics().GetMetricControl()) > 0 },
		"label file":              func(c cfg) bool { return hasLabels(c) },
		"reshape": func(c cfg) bool {
			return anyInput(c, func(i *modelconfig.ModelInput) bool { return i.GetReshape() != nil })
		},
		"empty reshape": func(c cfg) bool {
			return anyInput(c, func(i *modelconfig.ModelInput) bool {
				return i.GetReshape() != nil && len(i.GetReshape().GetShape()) == 0
			})
		},
		"format": func(c cfg) bool {
			return anyInput(c, func(i *modelconfig.ModelInput) bool { return i.GetFormat() != modelconfig.ModelInput_FORMAT_NONE })
		},
		"optional input": func(c cfg) bool { return anyInput(c, func(i *modelconfig.ModelInput) bool { return i.GetOptional() }) },
		"ragged input": func(c cfg) bool {
			return anyInput(c, func(i *modelconfig.ModelInput) bool { return i.GetAllowRaggedBatch() })
		},
		"shape tensor": func(c cfg) bool {
			return anyInput(c, func(i *modelconfig.ModelInput) bool { return i.GetIsShapeTensor() })
		},
		"decoupled":          func(c cfg) bool { return c.GetModelTransactionPolicy().GetDecoupled() },
		"repository agents":  func(c cfg) bool { return len(c.GetModelRepositoryAgents().GetAgents()) > 0 },
		"cc model filenames": func(c cfg) bool { return len(c.GetCcModelFilenames()) > 0 },
		"model operations":   func(c cfg) bool { return len(c.GetModelOperations().GetOpLibraryFilename()) > 0 },
	}
	for name, has := range features {
		t.Run(name, func(t *testing.T) {
			for _, c := range corpus {
				if has(c) {
					return
				}
			}
			t.Errorf("no corpus config uses %s", name)
		})
	}
}

func hasInitialState(c *modelconfig.ModelConfig, zero bool) bool {
	for _, st := range c.GetSequenceBatching().GetState() {
		for _, is := range st.GetInitialState() {
			if zero && is.GetZeroData() || !zero && is.GetDataFile() != "" {
				return true
			}
		}
	}
	return false
}

func hasRateLimiter(c *modelconfig.ModelConfig) bool {
	for _, g := range c.GetInstanceGroup() {
		if len(g.GetRateLimiter().GetResources()) > 0 && g.GetRateLimiter().GetPriority() > 0 {
			return true
		}
	}
	return false
}

func hasLabels(c *modelconfig.ModelConfig) bool {
	for _, o := range c.GetOutput() {
		if o.GetLabelFilename() != "" {
			return true
		}
	}
	return false
}
