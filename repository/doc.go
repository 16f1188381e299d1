// Package repository reads Triton model repositories: it finds the models
// and their versions, parses config.pbtxt files, fills in Triton's defaults
// and checks the rules Triton checks, so that a repository laid out for
// Triton Inference Server works unchanged.
//
// # Layout
//
// A repository is a folder of model folders, exactly as for Triton:
//
//	<repository>/
//	  <model>/
//	    config.pbtxt          the model configuration (optional for some backends)
//	    labels.txt            files the config refers to (label_filename, ...)
//	    1/model.onnx          version folders: positive integers, no leading zero
//	    2/model.onnx
//	    warmup/, initial_state/
//
// A repository is a [Root]: an fs.FS, plus its local path when it is on
// disk ([DirRoot]) so that errors and backends get real paths. [FSRoot]
// serves repositories embedded with go:embed, held in an fstest.MapFS or
// read from any other fs.FS.
//
// # Entry points
//
// Loading a repository is a pipeline; each step is a separate function so
// that a server can interpose its own (auto-completion by a backend, a
// config sent with a load request):
//
//  1. [Scan] lists the models of one or more roots, with their versions.
//  2. [ReadConfig] reads a model's config.pbtxt ([ConfigFileFor] and
//     [ReadConfigFile] read configs/<name>.pbtxt instead, Triton's
//     --model-config-name; [ParseConfig] parses text from elsewhere).
//     Syntax errors are *[ConfigError] values with file, line and column.
//     A model without config.pbtxt gets an empty config. [CompleteBackend]
//     fills in the backend, platform and default model file that the
//     model files (or a folder name <name>.<backend>) imply, for any
//     config, as Triton's server-side auto-complete does.
//  3. [Normalize] fills in Triton's defaults (version policy, instance
//     groups, preferred batch sizes, backend/platform pairing, ...).
//  4. [Validate] reports every broken rule as a *ConfigError naming the
//     field, and the numbers above this package's bounds
//     ([MaxInstances], [MaxPriorityLevels]; Triton has none), and
//     implicit sequence state on a decoupled model, which this server does
//     not carry from one request to the next.
//  5. [SelectVersions] picks the versions the version policy serves.
//
// The platform table ([BackendForPlatform], [DefaultModelFilename]) lives
// here and nowhere else.
//
// # Concurrency and ownership
//
// Functions hold no state between calls and are safe for concurrent use.
// Configs are protobuf messages from package modelconfig: Normalize
// changes the config it is given, so give each goroutine its own (see
// proto.Clone). Logging goes to the *zap.Logger passed to Scan; nil means
// none.
//
// # Usage
//
//	models, err := repository.Scan([]repository.Root{repository.DirRoot("/models")}, log)
//	if err != nil {
//		return err
//	}
//	for _, md := range models {
//		cfg, _, err := repository.ReadConfig(md)
//		if err != nil {
//			return err
//		}
//		repository.Normalize(cfg, repository.NormalizeOptions{GPUs: gpus})
//		if err := repository.Validate(md.Name+"/config.pbtxt", cfg, repository.ValidateOptions{ModelName: md.Name}); err != nil {
//			return err
//		}
//		versions := repository.SelectVersions(cfg.GetVersionPolicy(), md.Versions)
//		...
//	}
package repository
