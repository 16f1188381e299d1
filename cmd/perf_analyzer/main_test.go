package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"
	"google.golang.org/grpc"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/grpcapi"
	"github.com/triton-go/triton/httpapi"
	"github.com/triton-go/triton/internal/perf"
	"github.com/triton-go/triton/internal/repeat"
	"github.com/triton-go/triton/sysshm"
)

// TestMain runs the command itself when the tests re-execute the test
// binary with PERF_ANALYZER_MAIN=1, so that exit statuses and stderr are
// checked as a shell sees them.
func TestMain(m *testing.M) {
	if os.Getenv("PERF_ANALYZER_MAIN") == "1" {
		main()
		return
	}
	goleak.VerifyTestMain(m)
}

// repository writes a model repository with an identity model and
// Triton's decoupled repeat_int32 model (the built-in "repeat" backend).
func repository(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{
		"noop/config.pbtxt": `backend: "identity"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]
instance_group [ { count: 2 kind: KIND_CPU } ]`,
		"noop/1/.keep": "",
		"repeat_int32/config.pbtxt": `backend: "repeat"
max_batch_size: 0
model_transaction_policy { decoupled: true }
input [
  { name: "IN" data_type: TYPE_INT32 dims: [ -1 ] },
  { name: "DELAY" data_type: TYPE_UINT32 dims: [ -1 ] },
  { name: "WAIT" data_type: TYPE_UINT32 dims: [ 1 ] }
]
output [
  { name: "OUT" data_type: TYPE_INT32 dims: [ 1 ] },
  { name: "IDX" data_type: TYPE_UINT32 dims: [ 1 ] }
]`,
		"repeat_int32/1/.keep": "",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestInProcess runs the tool on the in-process server: a CSV with
// perf_analyzer's header and a positive throughput per level. The
// stability threshold is wide so that a busy machine cannot fail it; what
// is checked is the plumbing, not the figures.
func TestInProcess(t *testing.T) {
	repo := repository(t)
	out := filepath.Join(t.TempDir(), "out.csv")
	var stdout, stderr bytes.Buffer
	st := perf.Main(context.Background(), []string{"-m", "noop", "-i", "inprocess", "--model-repository", repo,
		"-p", "100", "-s", "10000", "--concurrency-range", "1:2", "-f", out}, &stdout, &stderr, dial)
	if st != 0 {
		t.Fatalf("status %d\nstdout:\n%s\nstderr:\n%s", st, stdout.String(), stderr.String())
	}
	rows := readCSV(t, out)
	want := "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency"
	if got := strings.Join(rows[0], ","); got != want {
		t.Errorf("header\n got %s\nwant %s", got, want)
	}
	if len(rows) != 3 {
		t.Fatalf("%d rows, want a header and 2 levels:\n%v", len(rows), rows)
	}
	for _, r := range rows[1:] {
		if ips, err := strconv.ParseFloat(r[1], 64); err != nil || ips <= 0 {
			t.Errorf("row %v: throughput %q", r, r[1])
		}
		if r[2] != "0" || r[8] != "0" {
			t.Errorf("row %v: Client Send %s, Client Recv %s in-process, want 0", r, r[2], r[8])
		}
	}
	if !strings.Contains(stdout.String(), "  Service Kind: TRITON_C_API\n") || !strings.Contains(stdout.String(), "Concurrency: 2, throughput: ") {
		t.Errorf("stdout:\n%s", stdout.String())
	}
}

// TestInProcessStreaming runs the decoupled repeat_int32 model, three
// responses per request, over --streaming in rate mode.
func TestInProcessStreaming(t *testing.T) {
	repo := repository(t)
	data := filepath.Join(t.TempDir(), "data.json")
	os.WriteFile(data, []byte(`{"data": [{"IN": {"content": [1, 2, 3], "shape": [3]}, "DELAY": {"content": [1, 1, 1], "shape": [3]}, "WAIT": [0]}]}`), 0o644)
	out := filepath.Join(t.TempDir(), "out.csv")
	var stdout, stderr bytes.Buffer
	st := perf.Main(context.Background(), []string{"-m", "repeat_int32", "--service-kind=triton_c_api", "--model-repository", repo,
		"--streaming", "--input-data", data, "-p", "200", "-s", "10000", "--request-rate-range", "50", "-f", out}, &stdout, &stderr, dial)
	if st != 0 {
		t.Fatalf("status %d\nstdout:\n%s\nstderr:\n%s", st, stdout.String(), stderr.String())
	}
	rows := readCSV(t, out)
	if rows[0][0] != "Request Rate" || rows[0][2] != "Response Throughput" || rows[1][0] != "50" {
		t.Errorf("csv %v", rows)
	}
	resp, _ := strconv.ParseFloat(rows[1][2], 64)
	ips, _ := strconv.ParseFloat(rows[1][1], 64)
	if ips <= 0 || resp < 2*ips {
		t.Errorf("throughput %v, response throughput %v: want three responses a request", ips, resp)
	}
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestCommandErrors runs the command: a bad command line, an unknown
// model, an unreachable server and a JSON file that is not
// perf_analyzer's format each give one line on stderr naming the problem
// (after the synopsis for the command line) and status 99, never a stack
// trace.
func TestCommandErrors(t *testing.T) {
	repo := repository(t)
	notPA := filepath.Join(t.TempDir(), "data.json")
	os.WriteFile(notPA, []byte(`{"inputs": [{"name": "INPUT0", "data": [1]}]}`), 0o644)
	tests := []struct {
		name string
		args []string
		want string // the last line of stderr
	}{
		{"bad option", []string{"-m", "noop", "--concurrency-range", "0"}, "Error: The start of the search range must be > 0"},
		{"unknown model", []string{"-m", "nope", "-i", "inprocess", "--model-repository", repo},
			`error: failed to create triton client backend: starting the in-process server: triton: model "nope": failed to load 'nope': repository: no model folder "nope" in the model repository: file does not exist`},
		{"unreachable server", []string{"-m", "noop", "-u", "127.0.0.1:1"}, "error: failed to get model metadata: "},
		{"not perf_analyzer's JSON", []string{"-m", "noop", "-i", "inprocess", "--model-repository", repo, "--input-data", notPA},
			"error: Failed to init manager inputs: The json file doesn't contain data field"},
		{"shape that does not fit", []string{"-m", "noop", "-i", "inprocess", "--model-repository", repo, "--shape", "INPUT0:3,3"},
			`error: The supplied shape of [3,3] for input "INPUT0" is incompatible with the model's input shape of [16]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], tt.args...)
			cmd.Env = append(os.Environ(), "PERF_ANALYZER_MAIN=1")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 99 {
				t.Fatalf("exit: %v, want status 99\nstderr:\n%s", err, stderr.String())
			}
			lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
			last := lines[len(lines)-1]
			if !strings.HasPrefix(last, tt.want) {
				t.Errorf("last line of stderr\n got %q\nwant %q", last, tt.want)
			}
			if s := stderr.String(); strings.Contains(s, "goroutine ") || strings.Contains(s, "panic:") {
				t.Errorf("stack trace:\n%s", s)
			}
		})
	}
}

// BenchmarkInProcessNoop is the tool's own ceiling: the identity model
// in-process at concurrency 1 and 2, reported as req/s (the figure in
// internal/perf's package documentation). One iteration is one run.
// Run: go test -run '^$' -bench InProcessNoop -benchtime 1x -cpuprofile cpu.out ./cmd/perf_analyzer
func BenchmarkInProcessNoop(b *testing.B) {
	repo := repository(b)
	out := filepath.Join(b.TempDir(), "out.csv")
	for b.Loop() {
		var stdout, stderr bytes.Buffer
		st := perf.Main(context.Background(), []string{"-m", "noop", "-i", "inprocess", "--model-repository", repo,
			"-p", "1000", "-s", "10000", "--concurrency-range", "1:2", "-f", out}, &stdout, &stderr, dial)
		if st != 0 {
			b.Fatalf("status %d: %s", st, stderr.String())
		}
	}
	f, err := os.Open(out)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	rows, _ := csv.NewReader(f).ReadAll()
	for _, r := range rows[1:] {
		ips, _ := strconv.ParseFloat(r[1], 64)
		b.ReportMetric(ips, "req/s-c"+r[0])
	}
}

// TestRemote runs the tool against the server behind the HTTP and gRPC
// adapters, through package client: the statistics extension's columns,
// shared memory for the tensors, and gRPC streaming of a decoupled model.
func TestRemote(t *testing.T) {
	repo := repository(t)
	srv, err := triton.New(triton.WithModelRepository(repo),
		triton.WithBackend("identity", perf.Identity), triton.WithBackend("repeat", &repeat.Backend{}))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	shm := sysshm.NewRegistry()
	defer shm.Close()
	hs := httptest.NewServer(httpapi.NewHandler(srv, httpapi.WithSharedMemory(shm)))
	defer hs.Close()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	grpcapi.New(srv, grpcapi.WithSharedMemory(shm)).Register(gs)
	go gs.Serve(lis)
	defer gs.Stop()

	data := filepath.Join(t.TempDir(), "data.json")
	os.WriteFile(data, []byte(`{"data": [{"IN": {"content": [1, 2], "shape": [2]}, "DELAY": {"content": [0, 0], "shape": [2]}, "WAIT": [0]}]}`), 0o644)
	tests := []struct {
		name string
		args []string
		head string
	}{
		{"http", []string{"-m", "noop", "-u", strings.TrimPrefix(hs.URL, "http://"), "--shared-memory", "system"},
			"Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,"},
		{"grpc", []string{"-m", "noop", "-u", lis.Addr().String(), "-i", "grpc", "--shared-memory", "system", "--concurrency-range", "2"},
			"Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,"},
		{"grpc streaming", []string{"-m", "repeat_int32", "-u", lis.Addr().String(), "-i", "grpc", "--streaming", "--input-data", data},
			"Concurrency,Inferences/Second,Response Throughput,Client Send,Network+Server Send/Recv,"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out.csv")
			var stdout, stderr bytes.Buffer
			args := append(tt.args, "-p", "100", "-s", "10000", "-f", out)
			if st := perf.Main(context.Background(), args, &stdout, &stderr, dial); st != 0 {
				t.Fatalf("status %d\nstdout:\n%s\nstderr:\n%s", st, stdout.String(), stderr.String())
			}
			rows := readCSV(t, out)
			if !strings.HasPrefix(strings.Join(rows[0], ","), tt.head) || len(rows) != 2 {
				t.Fatalf("csv %v", rows)
			}
			if ips, _ := strconv.ParseFloat(rows[1][1], 64); ips <= 0 {
				t.Errorf("throughput %q", rows[1][1])
			}
			// HTTP's send and receive take microseconds (gRPC's
			// marshalling of 64 bytes may round down to 0 µs).
			if tt.name == "http" && (rows[1][2] == "0" || rows[1][8] == "0") {
				t.Errorf("Client Send %s, Client Recv %s over HTTP, want both > 0 µs", rows[1][2], rows[1][8])
			}
		})
	}
	if regions, _ := shm.Status(""); len(regions) != 0 {
		t.Errorf("regions left registered: %v", regions)
	}
}
