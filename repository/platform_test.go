package repository_test

import (
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/triton-go/triton/repository"
)

func TestBackendForPlatform(t *testing.T) {
	tests := []struct {
		platform, backend string
		ok                bool
	}{
		{"onnxruntime_onnx", "onnxruntime", true},
		{"tensorrt_plan", "tensorrt", true},
		{"pytorch_libtorch", "pytorch", true},
		{"libtorch", "pytorch", true},
		{"torch_aoti", "pytorch", true},
		{"tensorflow_graphdef", "tensorflow", true},
		{"tensorflow_savedmodel", "tensorflow", true},
		{"ensemble", "", false},
		{"", "", false},
		{"onnxruntime", "", false},
		{"caffe2_netdef", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.platform, func(t *testing.T) {
			b, ok := repository.BackendForPlatform(tt.platform)
			if b != tt.backend || ok != tt.ok {
				t.Errorf("BackendForPlatform(%q) = %q, %v; want %q, %v", tt.platform, b, ok, tt.backend, tt.ok)
			}
		})
	}
}

func TestDefaultModelFilename(t *testing.T) {
	tests := []struct {
		backend, platform, want string
	}{
		{"onnxruntime", "", "model.onnx"},
		{"", "onnxruntime_onnx", "model.onnx"},
		{"tensorrt", "tensorrt_plan", "model.plan"},
		{"pytorch", "", "model.pt"},
		{"pytorch", "torch_aoti", "model.pt2"},
		{"", "pytorch_libtorch", "model.pt"},
		{"", "libtorch", "model.pt"},
		{"tensorflow", "", "model.savedmodel"},
		{"tensorflow", "tensorflow_graphdef", "model.graphdef"},
		{"", "tensorflow_savedmodel", "model.savedmodel"},
		{"openvino", "", "model.xml"},
		{"python", "", "model.py"},
		{"", "ensemble", ""},
		{"my_go_backend", "", ""},
		{"", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.backend+"/"+tt.platform, func(t *testing.T) {
			if got := repository.DefaultModelFilename(tt.backend, tt.platform); got != tt.want {
				t.Errorf("DefaultModelFilename(%q, %q) = %q, want %q", tt.backend, tt.platform, got, tt.want)
			}
		})
	}
}

func TestGuessBackend(t *testing.T) {
	dir := &fstest.MapFile{Mode: os.ModeDir | 0o755}
	tests := []struct {
		name              string
		fsys              fstest.MapFS
		backend, platform string
		ok                bool
	}{
		{"onnx", fstest.MapFS{"m/1/model.onnx": {}}, "onnxruntime", "onnxruntime_onnx", true},
		{"first version decides", fstest.MapFS{"m/1/model.onnx": {}, "m/2/model.plan": {}}, "onnxruntime", "onnxruntime_onnx", true},
		{"name order, as Triton", fstest.MapFS{"m/9/model.onnx": {}, "m/10/model.pt": {}}, "pytorch", "pytorch_libtorch", true},
		{"Triton's order of formats", fstest.MapFS{"m/1/model.onnx": {}, "m/1/model.plan": {}}, "tensorrt", "tensorrt_plan", true},
		{"onnx folder", fstest.MapFS{"m/1/model.onnx/model.onnx": {}}, "onnxruntime", "onnxruntime_onnx", true},
		{"plan folder is not a plan", fstest.MapFS{"m/1/model.plan/x": {}}, "", "", false},
		{"name with a backend is not a file", fstest.MapFS{"m.identity/1/x": {}}, "", "", false},
		{"aoti", fstest.MapFS{"m/1/model.pt2": {}}, "pytorch", "torch_aoti", true},
		{"savedmodel folder", fstest.MapFS{"m/1/model.savedmodel/saved_model.pb": {}}, "tensorflow", "tensorflow_savedmodel", true},
		{"graphdef", fstest.MapFS{"m/1/model.graphdef": {}}, "tensorflow", "tensorflow_graphdef", true},
		{"openvino", fstest.MapFS{"m/1/model.xml": {}, "m/1/model.bin": {}}, "openvino", "", true},
		{"python", fstest.MapFS{"m/1/model.py": {}}, "python", "", true},
		{"unknown file", fstest.MapFS{"m/1/weights.bin": {}}, "", "", false},
		{"file only in a later version", fstest.MapFS{"m/1": dir, "m/2/model.onnx": {}}, "", "", false},
		{"no versions", fstest.MapFS{"m/model.onnx": {}}, "", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			models, err := repository.Scan([]repository.Root{repository.FSRoot(tt.fsys)}, nil)
			if err != nil || len(models) != 1 {
				t.Fatalf("Scan = %v, %v", models, err)
			}
			b, p, ok := repository.GuessBackend(models[0])
			if b != tt.backend || p != tt.platform || ok != tt.ok {
				t.Errorf("GuessBackend = %q, %q, %v; want %q, %q, %v", b, p, ok, tt.backend, tt.platform, tt.ok)
			}
		})
	}
}

func TestCompleteBackend(t *testing.T) {
	tests := []struct {
		name           string
		fsys           fstest.MapFS // one model folder
		cfg            string       // config text before completion
		backend, plat  string
		file, errorHas string
	}{
		{name: "nothing but a model file", fsys: fstest.MapFS{"m/1/model.onnx": {}},
			backend: "onnxruntime", plat: "onnxruntime_onnx", file: "model.onnx"},
		{name: "override without backend", fsys: fstest.MapFS{"m/1/model.plan": {}}, cfg: `max_batch_size: 4`,
			backend: "tensorrt", plat: "tensorrt_plan", file: "model.plan"},
		{name: "platform names the backend", fsys: fstest.MapFS{"m/1/x": {}}, cfg: `platform: "onnxruntime_onnx"`,
			backend: "onnxruntime", plat: "onnxruntime_onnx", file: "model.onnx"},
		{name: "default_model_filename names the backend", fsys: fstest.MapFS{"m/1/x": {}}, cfg: `default_model_filename: "model.pt2"`,
			backend: "pytorch", plat: "pytorch_libtorch", file: "model.pt2"}, // Triton's rule, platform included
		{name: "pytorch backend gets libtorch", fsys: fstest.MapFS{"m/1/x": {}}, cfg: `backend: "pytorch"`,
			backend: "pytorch", plat: "pytorch_libtorch", file: "model.pt"},
		{name: "aoti file", fsys: fstest.MapFS{"m/1/model.pt2": {}},
			backend: "pytorch", plat: "torch_aoti", file: "model.pt2"},
		{name: "tensorflow graphdef", fsys: fstest.MapFS{"m/1/model.graphdef": {}},
			backend: "tensorflow", plat: "tensorflow_graphdef", file: "model.graphdef"},
		{name: "python file", fsys: fstest.MapFS{"m/1/model.py": {}},
			backend: "python", file: "model.py"},
		{name: "a named backend is kept", fsys: fstest.MapFS{"m/1/model.onnx": {}}, cfg: `backend: "gofunc"`,
			backend: "gofunc"},
		{name: "files are not read when a file is named", fsys: fstest.MapFS{"m/1/model.onnx": {}}, cfg: `default_model_filename: "weights.bin"`,
			file: "weights.bin"},
		{name: "ensemble left alone", fsys: fstest.MapFS{"m/1/model.onnx": {}}, cfg: `platform: "ensemble"`,
			plat: "ensemble"},
		{name: "backend from the model name", fsys: fstest.MapFS{"add.identity/1/x": {}},
			backend: "identity", file: "model.identity"},
		{name: "first dot decides", fsys: fstest.MapFS{"a.b.c/1/x": {}},
			backend: "b.c", file: "model.b.c"},
		{name: "model files before the name", fsys: fstest.MapFS{"add.identity/1/model.onnx": {}},
			backend: "onnxruntime", plat: "onnxruntime_onnx", file: "model.onnx"},
		{name: "no backend anywhere", fsys: fstest.MapFS{"m/1/weights.bin": {}},
			errorHas: "Invalid model name: Could not determine backend for model 'm' with no backend in model configuration. Expected model name of the form 'model.<backend_name>'."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			models, err := repository.Scan([]repository.Root{repository.FSRoot(tt.fsys)}, nil)
			if err != nil || len(models) != 1 {
				t.Fatalf("Scan = %v, %v", models, err)
			}
			cfg, err := repository.ParseConfig("config.pbtxt", []byte(tt.cfg))
			if err != nil {
				t.Fatal(err)
			}
			err = repository.CompleteBackend(models[0], cfg)
			if tt.errorHas != "" {
				if err == nil || !strings.Contains(err.Error(), tt.errorHas) {
					t.Fatalf("error %v, want one with %q", err, tt.errorHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.GetName() != models[0].Name || cfg.GetBackend() != tt.backend || cfg.GetPlatform() != tt.plat || cfg.GetDefaultModelFilename() != tt.file {
				t.Errorf("completed to name %q backend %q platform %q file %q; want %q %q %q", cfg.GetName(),
					cfg.GetBackend(), cfg.GetPlatform(), cfg.GetDefaultModelFilename(), tt.backend, tt.plat, tt.file)
			}
		})
	}
}
