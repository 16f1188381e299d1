//go:build !linux

package metrics

import "github.com/prometheus/client_golang/prometheus"

// cpuReader is Linux-only (it reads /proc); elsewhere the CPU families are
// absent.
type cpuReader struct{}

func newCPUReader() *cpuReader { return nil }

func (*cpuReader) collect(chan<- prometheus.Metric, *fixedDescs) {}
