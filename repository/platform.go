package repository

import (
	"cmp"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/triton-go/triton/modelconfig"
)

// ensemblePlatform is the platform of ensemble models. Ensembles have no
// backend: the server runs them itself.
const ensemblePlatform = "ensemble"

// formats is the one table of model formats: the backend that loads each,
// its Triton platform name ("" for backends that have none) and the file it
// loads from a version folder by default. The order matters twice: a
// backend's first row gives its default platform and file, and
// GuessBackend tries the files in this order.
var formats = []struct {
	backend, platform, file string
}{
	{"onnxruntime", "onnxruntime_onnx", "model.onnx"},
	{"tensorrt", "tensorrt_plan", "model.plan"},
	{"pytorch", "pytorch_libtorch", "model.pt"},
	{"pytorch", "libtorch", "model.pt"}, // Triton's core takes it for pytorch_libtorch
	{"pytorch", "torch_aoti", "model.pt2"},
	{"tensorflow", "tensorflow_savedmodel", "model.savedmodel"},
	{"tensorflow", "tensorflow_graphdef", "model.graphdef"},
	{"openvino", "", "model.xml"},
	{"python", "", "model.py"},
}

// BackendForPlatform returns the backend that serves a Triton platform:
// onnxruntime_onnx → onnxruntime, tensorrt_plan → tensorrt,
// pytorch_libtorch, its alias libtorch and torch_aoti → pytorch, tensorflow_graphdef and
// tensorflow_savedmodel → tensorflow. ok is false for any other platform,
// including "ensemble", which has no backend.
func BackendForPlatform(platform string) (backend string, ok bool) {
	if platform == "" {
		return "", false
	}
	for _, f := range formats {
		if f.platform == platform {
			return f.backend, true
		}
	}
	return "", false
}

// platformForBackend returns the platform Triton's auto-completion fills
// in for a backend when the config names none. The default model file
// decides between the two platforms of pytorch and of tensorflow. Backends
// without a platform (openvino, python, custom Go backends) get "".
func platformForBackend(backend, file string) string {
	first, seen := "", false
	for _, f := range formats {
		if f.backend != backend {
			continue
		}
		if !seen {
			first, seen = f.platform, true
		}
		if file != "" && f.file == file {
			return f.platform
		}
	}
	return first
}

// knownPlatforms lists every platform Validate accepts, sorted.
func knownPlatforms() []string {
	names := []string{ensemblePlatform}
	for _, f := range formats {
		if f.platform != "" {
			names = append(names, f.platform)
		}
	}
	slices.Sort(names)
	return names
}

// DefaultModelFilename returns the file a model loads from its version
// folder when its config sets no default_model_filename: model.onnx,
// model.plan, model.pt, model.pt2, model.savedmodel, model.graphdef,
// model.xml or model.py. The platform decides when it is known, otherwise
// the backend (tensorflow defaults to model.savedmodel, pytorch to
// model.pt). It returns "" for ensembles and for backends it does not know:
// a custom backend chooses its own files.
func DefaultModelFilename(backend, platform string) string {
	if platform != "" {
		for _, f := range formats {
			if f.platform == platform {
				return f.file
			}
		}
	}
	for _, f := range formats {
		if f.backend == backend {
			return f.file
		}
	}
	return ""
}

// GuessBackend guesses the backend of a model that has no config.pbtxt
// from its files alone, as [CompleteBackend] does for an empty config: it
// looks in the first version folder in name order for model.savedmodel,
// model.graphdef, model.plan, model.onnx, model.xml, model.pt, model.pt2
// or model.py, in that order, and returns the backend and platform that
// load it. platform is "" for backends that have none (openvino, python).
// ok is false when the model has no version folder or none of those files
// is there (the <name>.<backend> rule of CompleteBackend is not applied).
func GuessBackend(md ModelDir) (backend string, platform string, ok bool) {
	cfg := &modelconfig.ModelConfig{Name: md.Name}
	_ = completeBackend(md, cfg, false)
	return cfg.Backend, cfg.Platform, cfg.Backend != ""
}

// CompleteBackend fills in the backend, platform and default_model_filename
// of cfg that its model files imply, as Triton's server-side
// auto-completion does for every model, whether its config came from
// config.pbtxt, from a load's override or from nothing (no config.pbtxt),
// and whether strict model configuration is on or not. It reads the first
// version folder of md in name order, as Triton does, and decides in
// Triton's order:
//
//   - TensorFlow: default_model_filename model.savedmodel or
//     model.graphdef, or (neither platform nor file named) a folder
//     model.savedmodel or a file model.graphdef;
//   - TensorRT: platform tensorrt_plan or file name model.plan, or a file
//     model.plan;
//   - ONNX Runtime: platform onnxruntime_onnx or file name model.onnx, or
//     a file or folder model.onnx;
//   - OpenVINO: file name model.xml, or a file model.xml;
//   - PyTorch: platform pytorch_libtorch (or libtorch) or torch_aoti, or file name
//     model.pt or model.pt2, or a file model.pt or model.pt2;
//   - Python: file name model.py, or a file model.py;
//   - otherwise, when the config names no backend, platform or file, the
//     model's name must have the form <name>.<backend> and the backend is
//     what follows the first '.', with default_model_filename
//     model.<backend> (Triton's custom backends: a folder "add.identity"
//     is served by backend "identity").
//
// The one error is the last case failing, with Triton's message. A config
// that names a backend or platform this table does not know (a custom Go
// backend) is left as it is; an empty name is set to md's.
func CompleteBackend(md ModelDir, cfg *modelconfig.ModelConfig) error {
	return completeBackend(md, cfg, true)
}

// completeBackend is CompleteBackend, with the <name>.<backend> rule only
// when byName is set.
func completeBackend(md ModelDir, cfg *modelconfig.ModelConfig, byName bool) error {
	if cfg.GetName() == "" {
		cfg.Name = md.Name
	}
	first := firstVersionDir(md)
	has := func(file string, dir bool) bool {
		if first == "" || md.FS == nil {
			return false
		}
		fi, err := fs.Stat(md.FS, path.Join(first, file))
		return err == nil && fi.IsDir() == dir
	}
	exists := func(file string) bool { return has(file, false) || has(file, true) }
	guess := cfg.Platform == "" && cfg.DefaultModelFilename == "" && first != ""
	// TensorFlow: the platform decides.
	if cfg.Platform == "" && (cfg.Backend == "" || cfg.Backend == "tensorflow") {
		switch {
		case cfg.DefaultModelFilename == "model.savedmodel":
			cfg.Platform = "tensorflow_savedmodel"
		case cfg.DefaultModelFilename == "model.graphdef":
			cfg.Platform = "tensorflow_graphdef"
		case guess:
			if has("model.savedmodel", true) {
				cfg.Platform = "tensorflow_savedmodel"
			}
			if has("model.graphdef", false) {
				cfg.Platform = "tensorflow_graphdef"
			}
		}
	}
	if p := cfg.Platform; p == "tensorflow_savedmodel" || p == "tensorflow_graphdef" {
		cfg.Backend = cmp.Or(cfg.Backend, "tensorflow")
		cfg.DefaultModelFilename = cmp.Or(cfg.DefaultModelFilename, DefaultModelFilename("", p))
		return nil
	}
	// Backends with one platform and one file.
	for _, f := range []struct {
		backend, platform, file string
		dirOK                   bool
	}{
		{"tensorrt", "tensorrt_plan", "model.plan", false},
		{"onnxruntime", "onnxruntime_onnx", "model.onnx", true},
		{"openvino", "", "model.xml", true},
	} {
		if cfg.Backend == "" {
			switch {
			case f.platform != "" && cfg.Platform == f.platform, cfg.DefaultModelFilename == f.file:
				cfg.Backend = f.backend
			case guess && (has(f.file, false) || (f.dirOK && has(f.file, true))):
				cfg.Backend = f.backend
			}
		}
		if cfg.Backend == f.backend {
			cfg.Platform = cmp.Or(cfg.Platform, f.platform)
			cfg.DefaultModelFilename = cmp.Or(cfg.DefaultModelFilename, f.file)
			return nil
		}
	}
	// PyTorch: TorchScript or AOTInductor.
	if cfg.Backend == "" {
		switch {
		case cfg.Platform == "pytorch_libtorch", cfg.Platform == "libtorch", cfg.Platform == "torch_aoti",
			cfg.DefaultModelFilename == "model.pt", cfg.DefaultModelFilename == "model.pt2":
			cfg.Backend = "pytorch"
		case guess && has("model.pt", false):
			cfg.Backend, cfg.Platform = "pytorch", "pytorch_libtorch"
		case guess && has("model.pt2", false):
			cfg.Backend, cfg.Platform = "pytorch", "torch_aoti"
		}
	}
	if cfg.Backend == "pytorch" {
		switch {
		case cfg.Platform == "":
			cfg.Platform = "pytorch_libtorch"
			cfg.DefaultModelFilename = cmp.Or(cfg.DefaultModelFilename, "model.pt")
		case cfg.Platform == "torch_aoti":
			cfg.DefaultModelFilename = cmp.Or(cfg.DefaultModelFilename, "model.pt2")
		}
		return nil
	}
	// Python.
	if cfg.Backend == "" && (cfg.DefaultModelFilename == "model.py" || (guess && exists("model.py"))) {
		cfg.Backend = "python"
	}
	if cfg.Backend == "python" {
		cfg.DefaultModelFilename = cmp.Or(cfg.DefaultModelFilename, "model.py")
		return nil
	}
	// A custom backend, named by the model: <name>.<backend>.
	if byName && cfg.Backend == "" && cfg.Platform == "" && cfg.DefaultModelFilename == "" {
		_, b, ok := strings.Cut(md.Name, ".")
		if !ok {
			return fmt.Errorf("Invalid model name: Could not determine backend for model '%s' with no backend in model configuration. Expected model name of the form 'model.<backend_name>'.", md.Name)
		}
		cfg.Backend, cfg.DefaultModelFilename = b, "model."+b
	}
	return nil
}

// firstVersionDir returns the name of md's first version folder in name
// order ("10" before "2"), the one Triton inspects, or "" when there is
// none.
func firstVersionDir(md ModelDir) string {
	first := ""
	for _, v := range md.Versions {
		if s := strconv.FormatInt(v, 10); first == "" || s < first {
			first = s
		}
	}
	return first
}
