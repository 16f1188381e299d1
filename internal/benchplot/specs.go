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
	{
		In:       "wire.txt",
		Out:      "wire.png",
		Title:    "Ours ÷ a minimal hand-written server: add/sub over loopback, 2 vCPUs",
		XLabel:   "concurrent callers",
		YLabel:   "requests a second, ours ÷ minimal (median of the rounds)",
		LogX:     true,
		Headroom: 0.45,
		Target:   target{Label: "target: 0.95", Y: 0.95},
		Curves: []curve{
			{Label: "HTTP JSON", Match: regexp.MustCompile(`^BenchmarkHTTPMinimal/json/identity$`), Units: regexp.MustCompile(`^ours/c(?P<x>[0-9]+)-ratio$`)},
			{Label: "HTTP JSON, Accept-Encoding: gzip", Match: regexp.MustCompile(`^BenchmarkHTTPMinimal/json/gzip$`), Units: regexp.MustCompile(`^ours/c(?P<x>[0-9]+)-ratio$`)},
			{Label: "HTTP binary", Match: regexp.MustCompile(`^BenchmarkHTTPMinimal/binary/identity$`), Units: regexp.MustCompile(`^ours/c(?P<x>[0-9]+)-ratio$`)},
			{Label: "HTTP binary, Accept-Encoding: gzip", Match: regexp.MustCompile(`^BenchmarkHTTPMinimal/binary/gzip$`), Units: regexp.MustCompile(`^ours/c(?P<x>[0-9]+)-ratio$`)},
			{Label: "gRPC ModelInfer, ONNX Runtime", Match: regexp.MustCompile(`^BenchmarkGRPCAddSub/onnx$`), Units: regexp.MustCompile(`^ours/c(?P<x>[0-9]+)-ratio$`)},
			{Label: "gRPC ModelInfer, Go mirror", Match: regexp.MustCompile(`^BenchmarkGRPCAddSub/mirror$`), Units: regexp.MustCompile(`^ours/c(?P<x>[0-9]+)-ratio$`)},
		},
	},
	{
		In:     "ppocr.txt",
		Out:    "ppocr-batch-cost.png",
		Title:  "PP-OCR steps on 2 vCPUs: the cost of a page against the pages in a batch",
		XLabel: "pages in one batch",
		YLabel: "ms a page (median of the rounds)",
		LogX:   true,
		Curves: []curve{
			{Label: "ppocr_det ([n, 3, 416, 800])", Match: regexp.MustCompile(`^BenchmarkBatchCost/ppocr_det$`), Units: regexp.MustCompile(`^batch(?P<x>[0-9]+)-ms/page$`)},
			{Label: "ppocr_rec (3 lines a page)", Match: regexp.MustCompile(`^BenchmarkBatchCost/ppocr_rec$`), Units: regexp.MustCompile(`^batch(?P<x>[0-9]+)-ms/page$`)},
		},
		LegendBottom: true,
	},
	overloadSpec("fixed", "overload-fixed.png", "Open loop, a model that costs 2 ms + 0.1 ms a row (slept), 2 vCPUs: goodput"),
	overloadSpec("silero", "overload-silero.png", "Open loop, Silero VAD v6 on ONNX Runtime (8 rows a request), 2 vCPUs: goodput"),
}

// overloadSpec is the plot of BenchmarkOverload's runs on one model:
// goodput (answers within their deadline) against offered load, both ÷
// the capacity measured on the same transport, a curve per schedule and
// transport.
func overloadSpec(model, out, title string) spec {
	c := func(label, transport, schedule string) curve {
		return curve{Label: label, Match: regexp.MustCompile(`^BenchmarkOverload/` + model + `/` + transport + `/load=(?P<x>[0-9.]+)x/` + schedule + `$`)}
	}
	return spec{
		In:         "overload.txt",
		Out:        out,
		Title:      title,
		XLabel:     "offered load ÷ capacity",
		YLabel:     "goodput ÷ capacity",
		Metric:     "goodput/cap",
		LogX:       true,
		LegendLeft: true,
		Headroom:   0.35,
		Target:     target{Label: "target at 2× and beyond: 0.9", Y: 0.9},
		Curves: []curve{
			c("FIFO, srv.Infer", "inprocess", "fifo"),
			c("deadline-aware, srv.Infer", "inprocess", "deadline"),
			c("FIFO, gRPC", "grpc", "fifo"),
			c("deadline-aware, gRPC", "grpc", "deadline"),
		},
	}
}
