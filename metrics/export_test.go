package metrics

import "github.com/triton-go/triton"

// GPUReading is a fake GPU's state, in NVML's units.
type GPUReading = gpuReading

// The fields a GPUReading has.
const (
	HaveUtilization = haveUtilization
	HaveMemory      = haveMemory
	HavePower       = havePower
	HavePowerLimit  = havePowerLimit
	HaveEnergy      = haveEnergy
)

// FakeGPUs is a gpuSource whose readings come from a function.
type FakeGPUs struct {
	Read   func() []GPUReading
	Closed int
}

func (f *FakeGPUs) read() []gpuReading { return f.Read() }
func (f *FakeGPUs) close() error       { f.Closed++; return nil }

// NewCollectorWithGPUs is NewCollector reading fake GPUs.
func NewCollectorWithGPUs(srv *triton.Server, cfg Config, gpus *FakeGPUs) *Collector {
	return newCollector(srv, cfg, gpus)
}

// NVMLAvailable reports whether this machine has a usable NVML and a GPU.
func NVMLAvailable() bool {
	g := openNVML(logger(nil))
	if g == nil {
		return false
	}
	g.close()
	return true
}
