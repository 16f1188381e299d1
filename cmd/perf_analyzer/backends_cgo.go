//go:build cgo

package main

import (
	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend/onnxruntime"
)

// cgoBackends are the in-process backends that need cgo: ONNX Runtime
// (its library is loaded when a model needs it).
func cgoBackends() []triton.Option {
	return []triton.Option{triton.WithBackend(onnxruntime.Name, onnxruntime.New())}
}
