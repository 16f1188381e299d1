package repository_test

import (
	"os"
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
		{"highest version decides", fstest.MapFS{"m/1/model.onnx": {}, "m/2/model.plan": {}}, "tensorrt", "tensorrt_plan", true},
		{"numeric not lexical order", fstest.MapFS{"m/9/model.onnx": {}, "m/10/model.pt": {}}, "pytorch", "pytorch_libtorch", true},
		{"aoti", fstest.MapFS{"m/1/model.pt2": {}}, "pytorch", "torch_aoti", true},
		{"savedmodel folder", fstest.MapFS{"m/1/model.savedmodel/saved_model.pb": {}}, "tensorflow", "tensorflow_savedmodel", true},
		{"graphdef", fstest.MapFS{"m/1/model.graphdef": {}}, "tensorflow", "tensorflow_graphdef", true},
		{"openvino", fstest.MapFS{"m/1/model.xml": {}, "m/1/model.bin": {}}, "openvino", "", true},
		{"python", fstest.MapFS{"m/1/model.py": {}}, "python", "", true},
		{"unknown file", fstest.MapFS{"m/1/weights.bin": {}}, "", "", false},
		{"file only in an older version", fstest.MapFS{"m/1/model.onnx": {}, "m/2": dir}, "", "", false},
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
