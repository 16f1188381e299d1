//go:build !linux || !cgo

package metrics

import "go.uber.org/zap"

// openNVML returns nil: this build reads no GPU (NVML is reached through
// cgo, on Linux).
func openNVML(log *zap.Logger) gpuSource {
	log.Debug("GPU metrics off: built without cgo or not on Linux")
	return nil
}
