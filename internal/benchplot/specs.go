package main

import "regexp"

// specs are the plots of docs/performance.md, each drawn from one file of
// docs/bench.
var specs = []spec{
	{
		In:     "silero-batching.txt",
		Out:    "silero-batching.png",
		Title:  "Silero VAD v6, 64 callers, 2 vCPUs: throughput against batch size",
		XLabel: "rows a batch (preferred_batch_size for the server, B for ONNX Runtime alone)",
		YLabel: "requests a second",
		Metric: "req/s",
		LogX:   true,
		Curves: []curve{
			{Label: "ONNX Runtime alone, pre-formed batches (limit/B=…)", Match: regexp.MustCompile(`^BenchmarkSileroBatching/limit/B=(?P<x>[0-9]+)$`)},
			{Label: "server, dynamic_batching (server/preferred=…)", Match: regexp.MustCompile(`^BenchmarkSileroBatching/server/preferred=(?P<x>[0-9]+)$`)},
			{Label: "one shared session, batch 1 (naive)", Match: regexp.MustCompile(`^BenchmarkSileroBatching/naive$`), X: 1},
		},
		LegendBottom: true,
	},
	{
		In:       "protocols.txt",
		Out:      "protocols.png",
		Title:    "An identity model in process, over HTTP and over gRPC (loopback, 2 vCPUs)",
		XLabel:   "concurrent callers",
		YLabel:   "requests a second",
		Metric:   "req/s",
		LogX:     true,
		LogY:     true,
		Headroom: 0.3,
		Curves: []curve{
			{Label: "64 B, srv.Infer", Match: regexp.MustCompile(`^BenchmarkProtocols/64B/inprocess/c(?P<x>[0-9]+)$`)},
			{Label: "64 B, HTTP", Match: regexp.MustCompile(`^BenchmarkProtocols/64B/http/c(?P<x>[0-9]+)$`)},
			{Label: "64 B, gRPC", Match: regexp.MustCompile(`^BenchmarkProtocols/64B/grpc/c(?P<x>[0-9]+)$`)},
			{Label: "1 MiB, HTTP", Match: regexp.MustCompile(`^BenchmarkProtocols/1MiB/http/c(?P<x>[0-9]+)$`)},
			{Label: "1 MiB, gRPC", Match: regexp.MustCompile(`^BenchmarkProtocols/1MiB/grpc/c(?P<x>[0-9]+)$`)},
		},
	},
	{
		In:         "gzip-encode.txt",
		Out:        "gzip-encode.png",
		Title:      "gzip at level 6: time to compress one response body",
		XLabel:     "body size (KiB)",
		YLabel:     "µs a body",
		Metric:     "ns/op",
		Scale:      1e-3,
		LogX:       true,
		LogY:       true,
		LegendLeft: true,
		Headroom:   0.3,
		Curves: []curve{
			{Label: "JSON, compress/gzip, new writer (before)", Match: regexp.MustCompile(`^BenchmarkEncode/json/stdlib-new/(?P<x>[0-9]+)KiB$`)},
			{Label: "JSON, compress/gzip, pooled", Match: regexp.MustCompile(`^BenchmarkEncode/json/stdlib-pooled/(?P<x>[0-9]+)KiB$`)},
			{Label: "JSON, httpapi (klauspost, pooled)", Match: regexp.MustCompile(`^BenchmarkEncode/json/ours/(?P<x>[0-9]+)KiB$`)},
			{Label: "FP32 noise, compress/gzip, new writer (before)", Match: regexp.MustCompile(`^BenchmarkEncode/fp32/stdlib-new/(?P<x>[0-9]+)KiB$`)},
			{Label: "FP32 noise, compress/gzip, pooled", Match: regexp.MustCompile(`^BenchmarkEncode/fp32/stdlib-pooled/(?P<x>[0-9]+)KiB$`)},
			{Label: "FP32 noise, httpapi (klauspost, pooled)", Match: regexp.MustCompile(`^BenchmarkEncode/fp32/ours/(?P<x>[0-9]+)KiB$`)},
		},
	},
}
