package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/triton-go/triton/client"
	"github.com/triton-go/triton/grpcapi/inferencepb"
)

// BenchmarkAgreement checks perf_analyzer's throughput against ghz (gRPC)
// and hey (HTTP) on the same load. cmd/tritonserver, built and started
// once, serves examples/model_repository's text_reverse (a Go backend
// without batching, so that the load's timing cannot change what the
// server does), and each round runs two pairs, alternating which of a
// pair goes first:
//
//   - perf_analyzer -i grpc and ghz: 8 concurrent ModelInfer calls on one
//     connection, the same request (TEXT = ["hello world"], raw bytes),
//     without a deadline (ghz -t 0: its default of 20 s makes the server
//     arm a timer a call, which perf_analyzer does not ask for);
//   - perf_analyzer -i http --input-tensor-format json
//     --output-tensor-format json and hey: 8 concurrent requests on 8
//     keep-alive connections, the same JSON body.
//
// Each tool is a process of its own (perf_analyzer is this command, built
// by the benchmark), so its CPU time is its rusage; the server's CPU time
// is read from /proc before and after each run, and the requests it
// served from its statistics. ghz and hey run for a fixed time (-z 4s).
// perf_analyzer runs as users run it (a warm-up, then windows of 1.2 s,
// -p 1000, until the last three are stable) but with -s 100 unless
// AGREEMENT_STABILITY says otherwise: its first three windows whatever
// their spread, a run of about the same length as the others', not
// chosen among several. (With -s 10 or 20 it measures until three windows
// agree, which on a busy VM picks a calm spell that a fixed-length run of
// ghz or hey does not get, or never stabilizes.)
//
// Reported: perf_analyzer ÷ ghz and ÷ hey in throughput, a ratio per
// round, as the median and range ("grpc-ratio", "grpc-ratio-min",
// "grpc-ratio-max", the same for http); "grpc-cpu-ratio" and
// "http-cpu-ratio", the median of the other tool's CPU time a request
// (its own plus the server's) ÷ perf_analyzer's, which is what the
// throughput ratio would be if both runs had had the same CPU to spend
// (the server and the tool share two cores, of which the VM's other jobs
// take a varying share); and each tool's median throughput and CPU time a
// request, its own and the server's. -v logs every run. Needs hey and ghz
// (`make loadgen-tools`):
//
//	go test -run '^$' -bench Agreement -benchtime 9x -timeout 30m -v ./cmd/perf_analyzer/
func BenchmarkAgreement(b *testing.B) {
	hey, ghz := loadgenBin(b, "hey"), loadgenBin(b, "ghz")
	dir := b.TempDir()
	pa := goBuild(b, dir, "perf_analyzer", ".")
	ts := goBuild(b, dir, "tritonserver", "../tritonserver")
	// -s 100 takes perf_analyzer's first three windows, none discarded
	// for differing: a run of fixed length, as ghz's and hey's are.
	stability := cmp.Or(os.Getenv("AGREEMENT_STABILITY"), "100")
	srv := startServer(b, ts)

	const (
		conc   = 8
		model  = "text_reverse"
		text   = "hello world"
		window = "1000" // perf_analyzer's -p, ms
		// ghz's and hey's -z: about perf_analyzer's three windows of 1.2 s
		// and its warm-up.
		duration = "4s"
	)
	data := filepath.Join(dir, "data.json")
	body := filepath.Join(dir, "body.json")
	reqBin := filepath.Join(dir, "request.bin")
	writeFile(b, data, fmt.Sprintf(`{"data": [{"TEXT": {"content": [%q], "shape": [1]}}]}`, text))
	writeFile(b, body, fmt.Sprintf(`{"inputs":[{"name":"TEXT","shape":[1],"datatype":"BYTES","data":[%q]}]}`, text))
	elem := binary.LittleEndian.AppendUint32(nil, uint32(len(text)))
	msg, err := proto.Marshal(&inferencepb.ModelInferRequest{ModelName: model,
		Inputs:           []*inferencepb.ModelInferRequest_InferInputTensor{{Name: "TEXT", Datatype: "BYTES", Shape: []int64{1}}},
		RawInputContents: [][]byte{append(elem, text...)}})
	if err != nil {
		b.Fatal(err)
	}
	writeFile(b, reqBin, string(msg))

	c := strconv.Itoa(conc)
	paArgs := func(proto, url string, extra ...string) []string {
		return append([]string{"-m", model, "-i", proto, "-u", url, "--input-data", data,
			"--concurrency-range", c, "-p", window, "-s", stability, "--max-trials", "20",
			"-f", filepath.Join(dir, "pa.csv")}, extra...)
	}
	tools := []tool{
		{name: "perf_analyzer/grpc", bin: pa, args: paArgs("grpc", srv.grpc), parse: parsePA(filepath.Join(dir, "pa.csv"))},
		{name: "ghz", bin: ghz, parse: parseGHZ, args: []string{"--insecure",
			"--proto", filepath.Join("..", "..", "grpcapi", "inferencepb", "grpc_service.proto"),
			"--import-paths", filepath.Join("..", "..", "modelconfig"),
			"--call", "inference.GRPCInferenceService/ModelInfer", "-B", reqBin,
			"-c", c, "-z", duration, "--duration-stop", "ignore", "-t", "0", "-O", "json", srv.grpc}},
		{name: "perf_analyzer/http", bin: pa, parse: parsePA(filepath.Join(dir, "pa.csv")),
			args: paArgs("http", srv.http, "--input-tensor-format", "json", "--output-tensor-format", "json")},
		{name: "hey", bin: hey, parse: parseHey, args: []string{"-z", duration, "-c", c, "-m", "POST",
			"-T", "application/json", "-D", body, "-disable-compression", "http://" + srv.http + "/v2/models/" + model + "/infer"}},
	}
	stats, err := client.NewHTTP(srv.http)
	if err != nil {
		b.Fatal(err)
	}
	defer stats.Close()
	served := func() uint64 {
		st, err := stats.ModelStatistics(context.Background(), model, 0)
		if err != nil || len(st) == 0 {
			b.Fatalf("statistics: %v", err)
		}
		return st[0].InferenceCount
	}

	results := make([][]run, len(tools))
	round := 0
	for b.Loop() {
		// Pairs (0,1) and (2,3); odd rounds run the other tool first.
		order := []int{0, 1, 2, 3}
		if round%2 == 1 {
			order = []int{1, 0, 3, 2}
		}
		for _, i := range order {
			t := tools[i]
			n0, cpu0 := served(), srv.cpu(b)
			r := t.run(b)
			r.served = served() - n0
			r.serverCPU = srv.cpu(b) - cpu0
			results[i] = append(results[i], r)
			b.Logf("round %d %-19s %9.0f req/s; %7d requests in %5.2f s, tool CPU %5.2f s (%5.1f µs/req), server CPU %5.2f s (%5.1f µs/req)",
				round, t.name, r.rps, r.served, r.wall.Seconds(), r.toolCPU.Seconds(), perReq(r.toolCPU, r.served),
				r.serverCPU.Seconds(), perReq(r.serverCPU, r.served))
		}
		round++
	}
	b.StopTimer()
	for _, p := range []struct {
		name   string
		pa, to int
	}{{"grpc", 0, 1}, {"http", 2, 3}} {
		var ratios, cpuRatios []float64
		for k := range results[p.pa] {
			pa, to := results[p.pa][k], results[p.to][k]
			ratios = append(ratios, pa.rps/to.rps)
			cpuRatios = append(cpuRatios, to.cpuPerReq()/pa.cpuPerReq())
		}
		b.Logf("%s: perf_analyzer ÷ %s per round: %.3f; at equal CPU: %.3f", p.name, tools[p.to].name, ratios, cpuRatios)
		slices.Sort(ratios)
		slices.Sort(cpuRatios)
		b.ReportMetric(median(ratios), p.name+"-ratio")
		b.ReportMetric(ratios[0], p.name+"-ratio-min")
		b.ReportMetric(ratios[len(ratios)-1], p.name+"-ratio-max")
		b.ReportMetric(median(cpuRatios), p.name+"-cpu-ratio")
	}
	for i, t := range tools {
		var rps, tcpu, scpu []float64
		for _, r := range results[i] {
			rps = append(rps, r.rps)
			tcpu = append(tcpu, perReq(r.toolCPU, r.served))
			scpu = append(scpu, perReq(r.serverCPU, r.served))
		}
		name := strings.ReplaceAll(t.name, "perf_analyzer", "pa")
		b.ReportMetric(median(rps), "req/s-"+name)
		b.ReportMetric(median(tcpu), "tool-µs/req-"+name)
		b.ReportMetric(median(scpu), "server-µs/req-"+name)
	}
}

// tool is one load generator's command line and the reading of what it
// printed.
type tool struct {
	name  string
	bin   string
	args  []string
	parse func(out []byte) (rps float64, err error)
}

// run is one run of a tool.
type run struct {
	rps       float64       // as the tool reports it
	wall      time.Duration // the process's
	toolCPU   time.Duration // user + system, the process's
	served    uint64        // requests the server served meanwhile
	serverCPU time.Duration // the server's user + system meanwhile
}

// cpuPerReq is the CPU time, the tool's and the server's, a request took.
func (r run) cpuPerReq() float64 { return perReq(r.toolCPU+r.serverCPU, r.served) }

func (t tool) run(b *testing.B) run {
	b.Helper()
	cmd := exec.Command(t.bin, t.args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := run{wall: time.Since(start)}
	if err != nil {
		b.Fatalf("%s: %v\n%s\n%s", t.name, err, stdout.Bytes(), stderr.Bytes())
	}
	r.toolCPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	if r.rps, err = t.parse(stdout.Bytes()); err != nil {
		b.Fatalf("%s: %v\n%s\n%s", t.name, err, stdout.Bytes(), stderr.Bytes())
	}
	return r
}

// parsePA reads perf_analyzer's CSV file: the one step's Inferences/Second.
func parsePA(csv string) func([]byte) (float64, error) {
	return func([]byte) (float64, error) {
		raw, err := os.ReadFile(csv)
		if err != nil {
			return 0, err
		}
		lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
		if len(lines) != 2 {
			return 0, fmt.Errorf("CSV %q: want a header and one row", raw)
		}
		return strconv.ParseFloat(strings.Split(lines[1], ",")[1], 64)
	}
}

// parseGHZ reads ghz's JSON report (-O json): requests a second; a call
// that did not end OK is an error.
func parseGHZ(out []byte) (float64, error) {
	var r struct {
		RPS    float64          `json:"rps"`
		Status map[string]int64 `json:"statusCodeDistribution"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return 0, fmt.Errorf("ghz's report: %w", err)
	}
	for code, n := range r.Status {
		if code != "OK" && n > 0 {
			return 0, fmt.Errorf("ghz: %d calls ended %s", n, code)
		}
	}
	return r.RPS, nil
}

var (
	heyRPS    = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	heyStatus = regexp.MustCompile(`\[(\d+)\]\s+(\d+) responses`)
)

// parseHey reads hey's summary: requests a second; an answer that is not
// a 200, or an error line, is an error.
func parseHey(out []byte) (float64, error) {
	m := heyRPS.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("no Requests/sec in hey's output")
	}
	for _, s := range heyStatus.FindAllSubmatch(out, -1) {
		if string(s[1]) != "200" {
			return 0, fmt.Errorf("hey: %s answers %s", s[2], s[1])
		}
	}
	if bytes.Contains(out, []byte("Error distribution:")) {
		return 0, fmt.Errorf("hey saw errors")
	}
	return strconv.ParseFloat(string(m[1]), 64)
}

// loadgenBin finds a load generator: on PATH, or in .cache/bin where
// `make loadgen-tools` installs hey and ghz.
func loadgenBin(tb testing.TB, name string) string {
	tb.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	p, err := filepath.Abs(filepath.Join("..", "..", ".cache", "bin", name))
	if err == nil {
		if _, err = os.Stat(p); err == nil {
			return p
		}
	}
	tb.Fatalf("%s is not installed: run `make loadgen-tools`", name)
	return ""
}

// goBuild builds the command in pkg (relative to this folder) into dir.
func goBuild(tb testing.TB, dir, name, pkg string) string {
	tb.Helper()
	bin := filepath.Join(dir, name)
	out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput()
	if err != nil {
		tb.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

func writeFile(tb testing.TB, path, s string) {
	tb.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// server is a tritonserver process.
type server struct {
	cmd        *exec.Cmd
	http, grpc string // host:port
}

// startServer runs tritonserver on examples/model_repository with
// text_reverse loaded, on loopback ports of its choosing, and stops it
// when the benchmark ends.
func startServer(tb testing.TB, bin string) *server {
	tb.Helper()
	args := []string{"--model-repository=" + filepath.Join("..", "..", "examples", "model_repository"),
		"--model-control-mode=explicit", "--load-model=text_reverse",
		"--http-port=0", "--grpc-port=0", "--metrics-port=0",
		"--http-address=127.0.0.1", "--grpc-address=127.0.0.1", "--metrics-address=127.0.0.1",
		"--log-info=false", "--exit-drain-secs=0"}
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	exited := make(chan struct{})
	s := &server{cmd: cmd}
	lines := bufio.NewScanner(stdout)
	addr := regexp.MustCompile(`^(http|grpc|metrics) listening on .*:(\d+)$`)
	kill := time.AfterFunc(60*time.Second, func() { _ = cmd.Process.Kill() })
	for (s.http == "" || s.grpc == "") && lines.Scan() {
		if m := addr.FindStringSubmatch(lines.Text()); m != nil {
			switch m[1] {
			case "http":
				s.http = "127.0.0.1:" + m[2]
			case "grpc":
				s.grpc = "127.0.0.1:" + m[2]
			}
		}
	}
	kill.Stop()
	go func() {
		defer close(exited)
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
	}()
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	if s.http == "" || s.grpc == "" {
		_ = cmd.Process.Kill()
		<-exited
		tb.Fatalf("tritonserver did not start; stderr:\n%s", stderr.String())
	}
	return s
}

// cpu is the server process's user + system time so far (/proc/<pid>/stat,
// in clock ticks of 10 ms).
func (s *server) cpu(tb testing.TB) time.Duration {
	tb.Helper()
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		tb.Fatal(err)
	}
	// The fields after the command name, which ends with the last ')':
	// state is field 3, utime 14 and stime 15.
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

func perReq(d time.Duration, n uint64) float64 {
	if n == 0 {
		return 0
	}
	return float64(d.Microseconds()) / float64(n)
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
