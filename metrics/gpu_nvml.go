//go:build linux && cgo

package metrics

import (
	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"go.uber.org/zap"
)

// nvmlGPUs reads GPUs through NVML, which go-nvml loads at run time
// (dlopen of libnvidia-ml.so.1): a binary built here runs on machines
// without a driver, where openNVML simply returns nil.
type nvmlGPUs struct {
	devices []nvmlDevice
}

type nvmlDevice struct {
	uuid string
	dev  nvml.Device
}

// openNVML initializes NVML and lists the GPUs, or returns nil (logging why
// once) when there is no usable driver or no GPU.
func openNVML(log *zap.Logger) gpuSource {
	if ret := nvml.Init(); ret != nvml.SUCCESS {
		log.Debug("GPU metrics off: NVML unavailable", zap.String("nvml", ret.Error()))
		return nil
	}
	n, ret := nvml.DeviceGetCount()
	if ret != nvml.SUCCESS || n == 0 {
		log.Debug("GPU metrics off: no GPU", zap.Int("count", n), zap.String("nvml", ret.Error()))
		nvml.Shutdown()
		return nil
	}
	g := &nvmlGPUs{}
	for i := range n {
		dev, ret := nvml.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			continue
		}
		uuid, ret := dev.GetUUID()
		if ret != nvml.SUCCESS {
			continue
		}
		g.devices = append(g.devices, nvmlDevice{uuid, dev})
	}
	if len(g.devices) == 0 {
		nvml.Shutdown()
		return nil
	}
	log.Debug("GPU metrics on", zap.Int("gpus", len(g.devices)))
	return g
}

func (g *nvmlGPUs) read() []gpuReading {
	out := make([]gpuReading, 0, len(g.devices))
	for _, d := range g.devices {
		r := gpuReading{UUID: d.uuid}
		if u, ret := d.dev.GetUtilizationRates(); ret == nvml.SUCCESS {
			r.UtilizationPercent, r.Have = u.Gpu, r.Have|haveUtilization
		}
		if m, ret := d.dev.GetMemoryInfo(); ret == nvml.SUCCESS {
			r.MemoryTotal, r.MemoryUsed, r.Have = m.Total, m.Used, r.Have|haveMemory
		}
		if p, ret := d.dev.GetPowerUsage(); ret == nvml.SUCCESS {
			r.PowerMilliwatts, r.Have = p, r.Have|havePower
		}
		if p, ret := d.dev.GetPowerManagementLimit(); ret == nvml.SUCCESS {
			r.PowerLimitMilliwatts, r.Have = p, r.Have|havePowerLimit
		}
		if e, ret := d.dev.GetTotalEnergyConsumption(); ret == nvml.SUCCESS {
			r.EnergyMillijoules, r.Have = e, r.Have|haveEnergy
		}
		out = append(out, r)
	}
	return out
}

func (g *nvmlGPUs) close() error {
	if ret := nvml.Shutdown(); ret != nvml.SUCCESS {
		return ret
	}
	return nil
}
