package repository

import (
	"io/fs"
	"path"
	"slices"
	"strconv"
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
	{"pytorch", "torch_aoti", "model.pt2"},
	{"tensorflow", "tensorflow_savedmodel", "model.savedmodel"},
	{"tensorflow", "tensorflow_graphdef", "model.graphdef"},
	{"openvino", "", "model.xml"},
	{"python", "", "model.py"},
}

// BackendForPlatform returns the backend that serves a Triton platform:
// onnxruntime_onnx → onnxruntime, tensorrt_plan → tensorrt,
// pytorch_libtorch and torch_aoti → pytorch, tensorflow_graphdef and
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

// GuessBackend guesses the backend of a model that has no config.pbtxt, as
// Triton's auto-completion does: it looks in the highest version folder for
// a default model file (model.onnx, model.plan, model.pt, model.pt2,
// model.savedmodel, model.graphdef, model.xml, model.py, in that order) and
// returns the backend and platform that load it. platform is "" for
// backends that have none (openvino, python). ok is false when the model has
// no version folder or none of those files is there.
func GuessBackend(md ModelDir) (backend string, platform string, ok bool) {
	if md.FS == nil || len(md.Versions) == 0 {
		return "", "", false
	}
	dir := strconv.FormatInt(slices.Max(md.Versions), 10)
	for _, f := range formats {
		if _, err := fs.Stat(md.FS, path.Join(dir, f.file)); err == nil {
			return f.backend, f.platform, true
		}
	}
	return "", "", false
}
