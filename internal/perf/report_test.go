package perf

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCppDouble(t *testing.T) {
	for in, want := range map[float64]string{
		1407.8412: "1407.84", 69.2: "69.2", 10: "10", 0: "0", 1234567: "1.23457e+06",
		0.000012345: "1.2345e-05", 99.99999: "100", 2358070.4: "2.35807e+06",
	} {
		if got := cppDouble(in); got != want {
			t.Errorf("cppDouble(%v) = %q, want %q", in, got, want)
		}
	}
}

func csvStatus(conc uint64, ips float64) status {
	s := status{concurrency: conc, requestRate: float64(conc) * 2.5, batchSize: 1}
	s.client = clientStats{
		inferPerSec: ips, avgLatencyNS: 2_000_999, avgRequestNS: 1_900_500, avgSendNS: 10_999, avgRecvNS: 20_001,
		percentiles: []percentilePoint{{50, 1_500_999}, {90, 1_900_000}, {95, 2_500_000}, {99, 3_000_000}},
	}
	s.server = serverStats{queueCount: 10, queueNS: 1_000_000, computeInputCount: 10, computeInputNS: 200_000,
		computeInferCount: 10, computeInferNS: 10_000_000, computeOutputCount: 10, computeOutputNS: 300_000,
		successCount: 10, cummNS: 15_000_000}
	return s
}

func TestCSVHeader(t *testing.T) {
	steps := []status{csvStatus(1, 10)}
	base := reportOptions{percentile: -1, serverStats: true}
	tests := []struct {
		name string
		o    func(reportOptions) reportOptions
		pcts []percentilePoint
		want string
	}{
		{"default", func(o reportOptions) reportOptions { return o }, nil,
			"Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency"},
		{"rate mode", func(o reportOptions) reportOptions { o.rateMode = true; return o }, nil,
			"Request Rate,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency"},
		{"no statistics extension", func(o reportOptions) reportOptions { o.serverStats = false; return o }, nil,
			"Concurrency,Inferences/Second,Client Send,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency"},
		{"decoupled and cache", func(o reportOptions) reportOptions { o.decoupled, o.cache = true, true; return o }, nil,
			"Concurrency,Inferences/Second,Response Throughput,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,Server Cache Hit,Server Cache Miss,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency"},
		{"percentile 85", func(o reportOptions) reportOptions { o.percentile = 85; return o },
			[]percentilePoint{{50, 0}, {85, 0}, {90, 0}, {95, 0}, {99, 0}},
			"Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p85 latency,p90 latency,p95 latency,p99 latency"},
		{"verbose csv", func(o reportOptions) reportOptions { o.verboseCSV = true; return o }, nil,
			"Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency,Avg latency,request/response,response wait"},
		{"verbose csv with percentile", func(o reportOptions) reportOptions { o.verboseCSV, o.percentile = true, 95; return o }, nil,
			"Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency,request/response,response wait"},
	}
	for _, tt := range tests {
		st := steps
		if tt.pcts != nil {
			s := csvStatus(1, 10)
			s.client.percentiles = tt.pcts
			st = []status{s}
		}
		if got := csvHeader(st, tt.o(base)); got != tt.want {
			t.Errorf("%s:\n got %s\nwant %s", tt.name, got, tt.want)
		}
	}
}

func TestCSVRows(t *testing.T) {
	steps := []status{csvStatus(1, 1407.8412), csvStatus(2, 69.2), csvStatus(3, 10), csvStatus(4, 1234567)}
	o := reportOptions{percentile: -1, serverStats: true, verboseCSV: true}
	var warnings []string
	rows := csvRows(steps, o, func(s string) { warnings = append(warnings, s) })
	// Sorted by throughput; times in whole µs; network = wait − (queue +
	// compute) = (2000999 − 10999 − 20001) − (100000 + 1050000) ns.
	want := []string{
		"3,10,10,819,100,20,1000,30,20,1500,1900,2500,3000,2000,30,1870",
		"2,69.2,10,819,100,20,1000,30,20,1500,1900,2500,3000,2000,30,1870",
		"1,1407.84,10,819,100,20,1000,30,20,1500,1900,2500,3000,2000,30,1870",
		"4,1.23457e+06,10,819,100,20,1000,30,20,1500,1900,2500,3000,2000,30,1870",
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	if len(warnings) != 0 {
		t.Errorf("warnings %q", warnings)
	}
	o.rateMode = true
	o.verboseCSV = false
	rows = csvRows(steps[:1], o, nil)
	if !strings.HasPrefix(rows[0], "2.5,1407.84,") {
		t.Errorf("rate row %s", rows[0])
	}
	slow := csvStatus(1, 5)
	slow.client.avgLatencyNS = 100_000 // less than the server accounts for
	csvRows([]status{slow}, reportOptions{percentile: -1, serverStats: true}, func(s string) { warnings = append(warnings, s) })
	if len(warnings) != 1 || !strings.HasPrefix(warnings[0], "Server average accounted time was larger than client average wait time") {
		t.Errorf("warnings %q", warnings)
	}
}

func TestWriteCSVEnsemble(t *testing.T) {
	s := csvStatus(2, 100)
	s.server.composing = []composingStats{{modelID{"pre", "1"}, serverStats{successCount: 5, cummNS: 5_000_000, queueCount: 5, queueNS: 500_000}}}
	dir := t.TempDir()
	path := filepath.Join(dir, "out.csv")
	var warnings []string
	if err := writeCSV(path, []status{s}, reportOptions{percentile: -1, serverStats: true}, func(w string) { warnings = append(warnings, w) }); err != nil {
		t.Fatal(err)
	}
	// The prefix goes on the whole path, as perf_analyzer does: here a
	// folder "pre_v1./tmp" that does not exist.
	if len(warnings) != 1 || !strings.Contains(warnings[0], "pre_v1."+path) {
		t.Errorf("warnings %q", warnings)
	}
	b, err := os.ReadFile(path)
	if err != nil || !strings.HasPrefix(string(b), "Concurrency,Inferences/Second,") {
		t.Fatalf("main file %q %v", b, err)
	}
	t.Chdir(dir)
	if err := writeCSV("x.csv", []status{s}, reportOptions{percentile: -1, serverStats: true}, nil); err != nil {
		t.Fatal(err)
	}
	b, err = os.ReadFile("pre_v1.x.csv")
	if err != nil {
		t.Fatal(err)
	}
	want := "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv\n2,50,0,900,100,0,0,0,0\n"
	if string(b) != want {
		t.Errorf("composing file:\n%s\nwant:\n%s", b, want)
	}
}

func blockStatus() status {
	s := status{concurrency: 1, batchSize: 1, stabilizingNS: 708_000, overheadPct: 12.345}
	s.client = clientStats{
		requestCount: 25348, inferPerSec: 1407.8412, avgLatencyNS: 708_900, stdUS: 663,
		percentiles:  []percentilePoint{{50, 690_000}, {90, 1_000_000}, {95, 1_100_000}, {99, 1_500_000}},
		avgRequestNS: 700_000, avgSendNS: 40_000, avgRecvNS: 62_000,
	}
	s.server = serverStats{inferenceCount: 25348, executionCount: 25348, successCount: 25348,
		cummNS: 25348 * 382_000, queueCount: 25348, queueNS: 25348 * 41_000,
		computeInputCount: 25348, computeInputNS: 25348 * 26_000, computeInferCount: 25348, computeInferNS: 25348 * 257_000,
		computeOutputCount: 25348, computeOutputNS: 25348 * 16_000}
	return s
}

func TestStepBlock(t *testing.T) {
	s := blockStatus()
	var b bytes.Buffer
	stepBlock(&console{w: &b}, &s, reportOptions{percentile: -1, protocol: HTTP, libStats: true, serverStats: true, overheadWarn: 50})
	want := `  Client: 
    Request count: 25348
    Throughput: 1407.84 infer/sec
    Avg client overhead: 12.35%
    Avg latency: 708 usec (standard deviation 663 usec)
    p50 latency: 690 usec
    p90 latency: 1000 usec
    p95 latency: 1100 usec
    p99 latency: 1500 usec
    Avg HTTP time: 700 usec (send/recv 102 usec + response wait 598 usec)
  Server: 
    Inference count: 25348
    Execution count: 25348
    Successful request count: 25348
    Avg request latency: 382 usec (overhead 42 usec + queue 41 usec + compute input 26 usec + compute infer 257 usec + compute output 16 usec)
`
	if b.String() != want {
		t.Errorf("block:\n%s\nwant:\n%s", b.String(), want)
	}

	// gRPC with -v, --percentile, a sequence model, late sends and high
	// overhead; the fixed format then sticks, as std::cout's does.
	s.onSequence = true
	s.client.sequenceCount = 1000
	s.client.sequencePerSec = 55.5
	s.client.delayedCount = 2535
	s.sendRate = 1234.5678
	s.overheadPct = 60
	b.Reset()
	c := &console{w: &b}
	stepBlock(c, &s, reportOptions{percentile: 95, protocol: GRPC, verbose: true, libStats: true, overheadWarn: 50})
	want = `  Client: 
    Request count: 25348
    Avg send request rate: 1234.57 infer/sec
    [WARNING] Perf Analyzer was not able to keep up with the desired request rate. 10.00% of the requests were delayed. 
    Sequence count: 1000 (55.50 seq/sec)
    Throughput: 1407.84 infer/sec
    Avg client overhead: 60.00%
    p50 latency: 690 usec
    p90 latency: 1000 usec
    p95 latency: 1100 usec
    p99 latency: 1500 usec
    Avg gRPC time: 700 usec (marshal 40 usec + response wait 598 usec + unmarshal 62 usec)
[WARNING] Perf Analyzer is not able to keep up with the desired load. The results may not be accurate.
`
	if b.String() != want {
		t.Errorf("block:\n%s\nwant:\n%s", b.String(), want)
	}
	b.Reset()
	summaryBlock(c, []status{blockStatus()}, reportOptions{percentile: -1})
	if want := "Inferences/Second vs. Client Average Batch Latency\nConcurrency: 1, throughput: 1407.84 infer/sec, latency 708 usec\n"; b.String() != want {
		t.Errorf("summary after fixed:\n%s", b.String())
	}

	// In-process (the C API's blank library line) and decoupled.
	s = blockStatus()
	s.client.responsesPerSec = 4000
	b.Reset()
	stepBlock(&console{w: &b}, &s, reportOptions{percentile: 99, protocol: InProcess, libStats: false, decoupled: true, overheadWarn: 50})
	if !strings.Contains(b.String(), "    Response Throughput: 4000 infer/sec\n") || !strings.Contains(b.String(), "    p99 latency: 1500 usec\n    \n") {
		t.Errorf("decoupled in-process block:\n%s", b.String())
	}
}

func TestServerBlockEnsemble(t *testing.T) {
	sub := func(queue, compute uint64) serverStats {
		return serverStats{inferenceCount: 10, executionCount: 10, successCount: 10, cummNS: 10 * (queue + compute + 5000),
			queueCount: 10, queueNS: 10 * queue, computeInputCount: 10, computeInferCount: 10, computeInferNS: 10 * compute, computeOutputCount: 10}
	}
	s := serverStats{inferenceCount: 10, executionCount: 10, successCount: 10, cummNS: 10 * 400_000,
		composing: []composingStats{{modelID{"a", "1"}, sub(10_000, 100_000)}, {modelID{"b", "2"}, sub(20_000, 200_000)}}}
	var b bytes.Buffer
	serverBlock(&console{w: &b}, &s, 1, reportOptions{})
	want := `    Inference count: 10
    Execution count: 10
    Successful request count: 10
    Avg request latency: 400 usec (overhead 70 usec + queue 30 usec + compute 300 usec)

  Composing models: 
  a, version: 1
      Inference count: 10
      Execution count: 10
      Successful request count: 10
      Avg request latency: 115 usec (overhead 5 usec + queue 10 usec + compute input 0 usec + compute infer 100 usec + compute output 0 usec)
  b, version: 2
      Inference count: 10
      Execution count: 10
      Successful request count: 10
      Avg request latency: 225 usec (overhead 5 usec + queue 20 usec + compute input 0 usec + compute infer 200 usec + compute output 0 usec)
`
	if b.String() != want {
		t.Errorf("ensemble block:\n%s\nwant:\n%s", b.String(), want)
	}
}
