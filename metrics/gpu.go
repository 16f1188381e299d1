package metrics

import "github.com/prometheus/client_golang/prometheus"

// gpuSource reads the machine's GPUs. NVML implements it (gpu_nvml.go);
// tests feed fake readings through it. Calls are serialized by the
// Collector's mutex.
type gpuSource interface {
	// read returns one reading per GPU, in a stable order.
	read() []gpuReading
	close() error
}

// gpuReading is one GPU's state in NVML's own units. A field is valid only
// when its bit is set in Have: NVML answers each query separately, and
// some GPUs lack some (power and energy on many consumer boards).
type gpuReading struct {
	UUID string
	Have gpuFields
	// UtilizationPercent is the share of the last sample period in which a
	// kernel ran, 0-100.
	UtilizationPercent uint32
	// MemoryTotal and MemoryUsed are in bytes.
	MemoryTotal, MemoryUsed uint64
	// PowerMilliwatts and PowerLimitMilliwatts are the draw and the power
	// management limit.
	PowerMilliwatts, PowerLimitMilliwatts uint32
	// EnergyMillijoules is the energy used since the driver loaded.
	EnergyMillijoules uint64
}

// gpuFields says which fields of a gpuReading are valid.
type gpuFields uint8

const (
	haveUtilization gpuFields = 1 << iota
	haveMemory
	havePower
	havePowerLimit
	haveEnergy
)

// recordEnergyBase remembers each GPU's energy counter the first time it is
// known, so that nv_energy_consumption counts from the collector's start
// as Triton's counts from the server's. Called with c.mu held or before c
// is shared.
func (c *Collector) recordEnergyBase(rs []gpuReading) {
	for _, r := range rs {
		if _, ok := c.energyBase[r.UUID]; !ok && r.Have&haveEnergy != 0 {
			c.energyBase[r.UUID] = r.EnergyMillijoules
		}
	}
}

// collectGPUs sends the GPU families, converted to Triton's units:
// utilization 0-1, power in watts, energy in joules.
func (c *Collector) collectGPUs(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gpu == nil {
		return
	}
	rs := c.gpu.read()
	c.recordEnergyBase(rs)
	for _, r := range rs {
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, r.UUID)
		}
		if r.Have&haveUtilization != 0 {
			gauge(c.fixed.gpuUtil, float64(r.UtilizationPercent)/100)
		}
		if r.Have&haveMemory != 0 {
			gauge(c.fixed.gpuMemTotal, float64(r.MemoryTotal))
			gauge(c.fixed.gpuMemUsed, float64(r.MemoryUsed))
		}
		if r.Have&havePower != 0 {
			gauge(c.fixed.gpuPower, float64(r.PowerMilliwatts)/1000)
		}
		if r.Have&havePowerLimit != 0 {
			gauge(c.fixed.gpuLimit, float64(r.PowerLimitMilliwatts)/1000)
		}
		if r.Have&haveEnergy != 0 {
			// A counter that went backwards (a driver reload) restarts
			// from its new value.
			base := c.energyBase[r.UUID]
			if r.EnergyMillijoules < base {
				base = 0
				c.energyBase[r.UUID] = 0
			}
			ch <- prometheus.MustNewConstMetric(c.fixed.gpuEnergy, prometheus.CounterValue, float64(r.EnergyMillijoules-base)/1000, r.UUID)
		}
	}
}
