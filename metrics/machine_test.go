package metrics_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/metrics"
)

// TestInterval: with Config.Interval the GPU (and CPU) families are read
// at most once per interval, and scrapes in between answer the last
// reading; the per-model families stay live.
func TestInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reads := 0
		gpus := &metrics.FakeGPUs{Read: func() []metrics.GPUReading {
			reads++
			return []metrics.GPUReading{{UUID: "GPU-0", Have: metrics.HaveUtilization, UtilizationPercent: uint32(10 * reads)}}
		}}
		srv := newServer(t, model("m", "mirror", 8, 1, ""), triton.WithBackend("mirror", mirror))
		c := metrics.NewCollectorWithGPUs(srv, metrics.Config{Interval: 2 * time.Second}, gpus)
		defer c.Close()
		base := reads // the collector reads the energy counters once at construction

		util := func() float64 { return value(t, gather(t, c), "nv_gpu_utilization", "gpu_uuid=GPU-0") }
		first := util()
		infer(t, srv, "m", 1)
		time.Sleep(time.Second) // the fake clock: half the interval
		if got := util(); got != first || reads != base+1 {
			t.Errorf("within the interval: utilization %v after %v, %d reads; want the first reading again", got, first, reads-base)
		}
		if n := value(t, gather(t, c), "nv_inference_count", "model=m", "version=1"); n != 1 {
			t.Errorf("per-model counts are not live: %v", n)
		}
		time.Sleep(time.Second)
		if got := util(); got == first || reads != base+2 {
			t.Errorf("after the interval: utilization %v, %d reads; want a new reading", got, reads-base)
		}
	})
}
