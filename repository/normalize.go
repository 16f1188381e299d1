package repository

import (
	"strconv"

	"github.com/triton-go/triton/modelconfig"
)

// sequenceIdleDefault is Triton's default max_sequence_idle_microseconds.
const sequenceIdleDefault = 1_000_000

// NormalizeOptions describes the machine a config is normalized for.
// The zero value means a machine without GPUs.
type NormalizeOptions struct {
	// GPUs is the number of visible GPUs, numbered 0..GPUs-1 (0 in CI and
	// on CPU-only machines). It decides what KIND_AUTO becomes and which
	// GPUs a GPU group without a gpus list uses.
	GPUs int
	// DefaultMaxBatchSize is Triton's --backend-config
	// default-max-batch-size: the max_batch_size a backend's
	// auto-completion gives a model whose file shows a batch dimension
	// (Triton uses 4 when it is not set). Normalize cannot see model files,
	// so it never invents a max_batch_size itself; the value travels here
	// so that the loader hands one number to auto-completion and
	// normalization alike.
	DefaultMaxBatchSize int
}

// Normalize fills in the defaults Triton applies to a model configuration
// when it loads it, so that the rest of the server (and the /config
// endpoints) see the same complete config Triton would show. It changes cfg
// in place and never fails; run [Validate] afterwards. In order:
//
//   - backend and platform: a missing one is filled from the other with
//     the platform table ([BackendForPlatform]; pytorch and tensorflow pick
//     their platform from default_model_filename);
//   - default_model_filename: the backend's default file
//     ([DefaultModelFilename]) when empty;
//   - version_policy: latest {num_versions: 1} when absent, and
//     num_versions 0 becomes 1;
//   - dynamic_batching and sequence_batching.oldest: preferred_batch_size
//     [max_batch_size] when empty and max_batch_size > 0;
//   - sequence_batching.max_sequence_idle_microseconds: 0 becomes 1000000;
//   - optimization.{input,output}_pinned_memory: enable: true when absent;
//   - instance_group: when absent, one group named after the model; each
//     group gets the name <model>_<index> when unnamed, KIND_AUTO resolved
//     to KIND_GPU when opts.GPUs > 0 and every listed GPU exists (KIND_CPU
//     otherwise; always KIND_CPU for a group of the pytorch or python backend that
//     lists no GPUs, since this server's libtorch has no CUDA: a model
//     without instance_group must not fail on a machine with GPUs), count
//     0 replaced by the default (1; 2 for KIND_CPU
//     groups of the onnxruntime and tensorflow backends), and a KIND_GPU
//     group without gpus gets every visible GPU.
//
// Ensembles (platform "ensemble" or ensemble_scheduling set) get only the
// version policy: Triton gives them no optimization and no instance groups.
// A nil cfg is left alone. Normalize is idempotent.
func Normalize(cfg *modelconfig.ModelConfig, opts NormalizeOptions) {
	if cfg == nil {
		return
	}
	ensemble := isEnsemble(cfg)
	if !ensemble {
		normalizeBackend(cfg)
	}
	normalizeVersionPolicy(cfg)
	normalizeScheduling(cfg)
	if ensemble {
		return
	}
	opt := cfg.Optimization
	if opt == nil {
		opt = new(modelconfig.ModelOptimizationPolicy)
		cfg.Optimization = opt
	}
	if opt.InputPinnedMemory == nil {
		opt.InputPinnedMemory = &modelconfig.ModelOptimizationPolicy_PinnedMemoryBuffer{Enable: true}
	}
	if opt.OutputPinnedMemory == nil {
		opt.OutputPinnedMemory = &modelconfig.ModelOptimizationPolicy_PinnedMemoryBuffer{Enable: true}
	}
	normalizeInstanceGroups(cfg, opts)
}

func isEnsemble(cfg *modelconfig.ModelConfig) bool {
	return cfg.GetPlatform() == ensemblePlatform || cfg.GetEnsembleScheduling() != nil
}

func normalizeBackend(cfg *modelconfig.ModelConfig) {
	if cfg.Backend == "" {
		if b, ok := BackendForPlatform(cfg.Platform); ok {
			cfg.Backend = b
		}
	}
	if cfg.Platform == "" && cfg.Backend != "" {
		cfg.Platform = platformForBackend(cfg.Backend, cfg.DefaultModelFilename)
	}
	if cfg.DefaultModelFilename == "" {
		cfg.DefaultModelFilename = DefaultModelFilename(cfg.Backend, cfg.Platform)
	}
}

func normalizeVersionPolicy(cfg *modelconfig.ModelConfig) {
	vp := cfg.VersionPolicy
	if vp == nil || vp.PolicyChoice == nil {
		cfg.VersionPolicy = &modelconfig.ModelVersionPolicy{
			PolicyChoice: &modelconfig.ModelVersionPolicy_Latest_{
				Latest: &modelconfig.ModelVersionPolicy_Latest{NumVersions: 1},
			},
		}
		return
	}
	if l, ok := vp.PolicyChoice.(*modelconfig.ModelVersionPolicy_Latest_); ok {
		if l.Latest == nil {
			l.Latest = new(modelconfig.ModelVersionPolicy_Latest)
		}
		if l.Latest.NumVersions == 0 {
			l.Latest.NumVersions = 1
		}
	}
}

func normalizeScheduling(cfg *modelconfig.ModelConfig) {
	mbs := cfg.GetMaxBatchSize()
	if db := cfg.GetDynamicBatching(); db != nil {
		if len(db.PreferredBatchSize) == 0 && mbs > 0 {
			db.PreferredBatchSize = []int32{mbs}
		}
	}
	if sb := cfg.GetSequenceBatching(); sb != nil {
		if sb.MaxSequenceIdleMicroseconds == 0 {
			sb.MaxSequenceIdleMicroseconds = sequenceIdleDefault
		}
		if o := sb.GetOldest(); o != nil && len(o.PreferredBatchSize) == 0 && mbs > 0 {
			o.PreferredBatchSize = []int32{mbs}
		}
	}
}

func normalizeInstanceGroups(cfg *modelconfig.ModelConfig, opts NormalizeOptions) {
	if len(cfg.InstanceGroup) == 0 {
		cfg.InstanceGroup = []*modelconfig.ModelInstanceGroup{{Name: cfg.Name}}
	}
	for i, g := range cfg.InstanceGroup {
		if g == nil {
			g = new(modelconfig.ModelInstanceGroup)
			cfg.InstanceGroup[i] = g
		}
		if g.Name == "" {
			g.Name = cfg.Name + "_" + strconv.Itoa(i)
		}
		if g.Kind == modelconfig.ModelInstanceGroup_KIND_AUTO {
			g.Kind = modelconfig.ModelInstanceGroup_KIND_CPU
			if opts.GPUs > 0 && gpusExist(g.Gpus, opts.GPUs) && (len(g.Gpus) > 0 || !cpuOnly(cfg.Backend)) {
				g.Kind = modelconfig.ModelInstanceGroup_KIND_GPU
			}
		}
		if g.Count == 0 {
			g.Count = 1
			if g.Kind == modelconfig.ModelInstanceGroup_KIND_CPU &&
				(cfg.Backend == "onnxruntime" || cfg.Backend == "tensorflow") {
				g.Count = 2
			}
		}
		if g.Kind == modelconfig.ModelInstanceGroup_KIND_GPU && len(g.Gpus) == 0 {
			for id := range opts.GPUs {
				g.Gpus = append(g.Gpus, int32(id))
			}
		}
	}
}

// cpuOnly reports whether backend runs only on the CPU in this server,
// so that KIND_AUTO means KIND_CPU for it: pytorch (backend/pytorch runs
// the CPU libtorch of Debian's libtorch-dev, and refuses KIND_GPU with an
// error that says so) and python (its tensors are in CPU memory).
func cpuOnly(backend string) bool {
	return backend == "pytorch" || backend == "python"
}

// gpusExist reports whether every listed GPU id is below n.
func gpusExist(ids []int32, n int) bool {
	for _, id := range ids {
		if id < 0 || int(id) >= n {
			return false
		}
	}
	return true
}
