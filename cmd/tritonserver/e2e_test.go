package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/triton-go/triton/grpcapi/inferencepb"
	"github.com/triton-go/triton/internal/testenv"
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tritonserver-test")
	if err != nil {
		panic(err)
	}
	binDir = dir
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { os.RemoveAll(dir) }))
}

var (
	binDir    string // where the binary is built, once
	buildOnce sync.Once
	buildErr  error
)

// buildBinary builds the tritonserver binary once for the package's tests.
func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(binDir, "tritonserver")
	buildOnce.Do(func() {
		build := exec.Command("go", "build", "-o", bin, ".")
		build.Stderr = os.Stderr
		buildErr = build.Run()
	})
	if buildErr != nil {
		t.Fatalf("go build: %v", buildErr)
	}
	return bin
}

// binaryServer is the built tritonserver, running.
type binaryServer struct {
	t       *testing.T
	cmd     *exec.Cmd
	http    string // base URL
	metrics string
	grpc    string // host:port
	exited  chan error
}

// startBinary runs the binary with args on free ports, quiet, without a
// drain window on SIGTERM unless args set one.
func startBinary(t *testing.T, args ...string) *binaryServer {
	t.Helper()
	return startCommand(t, append([]string{"--http-port=0", "--metrics-port=0", "--grpc-port=0", "--grpc-address=127.0.0.1", "--log-info=false", "--exit-drain-secs=0"}, args...)...)
}

// startCommand runs the binary with exactly args, which must serve HTTP,
// gRPC and metrics, and returns once all three listen.
func startCommand(t *testing.T, args ...string) *binaryServer {
	t.Helper()
	cmd := exec.Command(buildBinary(t), args...)
	cmd.Dir = "."
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &binaryServer{t: t, cmd: cmd, exited: make(chan error, 1)}
	lines := bufio.NewScanner(stdout)
	addr := regexp.MustCompile(`^(http|metrics|grpc) listening on .*:(\d+)$`)
	deadline := time.AfterFunc(60*time.Second, func() { _ = cmd.Process.Kill() })
	defer deadline.Stop()
	for (s.http == "" || s.metrics == "" || s.grpc == "") && lines.Scan() {
		if m := addr.FindStringSubmatch(lines.Text()); m != nil {
			url := "http://127.0.0.1:" + m[2]
			switch m[1] {
			case "http":
				s.http = url
			case "metrics":
				s.metrics = url
			case "grpc":
				s.grpc = "127.0.0.1:" + m[2]
			}
		}
	}
	if s.http == "" || s.metrics == "" || s.grpc == "" {
		_ = cmd.Process.Kill()
		t.Fatalf("the server did not start; stderr:\n%s", stderr.String())
	}
	go func() {
		_, _ = io.Copy(io.Discard, stdout)
		s.exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-s.exited
	})
	return s
}

// terminate sends SIGTERM and fails the test unless the binary exits
// cleanly within limit.
func (s *binaryServer) terminate(limit time.Duration) {
	s.t.Helper()
	s.signal(syscall.SIGTERM)
	s.waitExit(limit)
}

// signal sends sig to the binary.
func (s *binaryServer) signal(sig os.Signal) {
	s.t.Helper()
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.t.Fatal(err)
	}
}

// waitExit fails the test unless the binary exits cleanly within limit.
func (s *binaryServer) waitExit(limit time.Duration) {
	s.t.Helper()
	select {
	case err := <-s.exited:
		if err != nil {
			s.t.Fatalf("exit after a signal: %v", err)
		}
		s.exited <- nil // for the cleanup
	case <-time.After(limit):
		s.t.Fatalf("no exit within %v of a signal", limit)
	}
}

// streamClient opens a ModelStreamInfer stream to the binary, closed
// with the test (30 s at most).
func (s *binaryServer) streamClient() inferencepb.GRPCInferenceService_ModelStreamInferClient {
	s.t.Helper()
	conn, err := grpc.NewClient(s.grpc, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	s.t.Cleanup(cancel)
	stream, err := inferencepb.NewGRPCInferenceServiceClient(conn).ModelStreamInfer(ctx)
	if err != nil {
		s.t.Fatal(err)
	}
	return stream
}

func (s *binaryServer) do(method, path, contentType string, body []byte, header map[string]string) (int, http.Header, []byte) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.http+path, bytes.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, data
}

func TestEndToEnd(t *testing.T) {
	testenv.NeedLibrary(t)
	s := startBinary(t, "--model-repository=../../examples/model_repository", exampleBackends, "--model-control-mode=explicit", "--load-model=*", "--allow-client-shm=true")

	if code, _, _ := s.do("GET", "/v2/health/ready", "", nil, nil); code != 200 {
		t.Fatalf("ready: %d", code)
	}
	// JSON infer through the Go backend compiled into the binary.
	code, _, body := s.do("POST", "/v2/models/text_reverse/infer", "application/json",
		[]byte(`{"id":"r1","inputs":[{"name":"TEXT","shape":[2],"datatype":"BYTES","data":["hello","triton"]}]}`), nil)
	if code != 200 || !strings.Contains(string(body), `"data":["olleh","notirt"]`) || !strings.Contains(string(body), `"id":"r1"`) {
		t.Fatalf("JSON infer: %d %s", code, body)
	}

	// An ensemble of two add_sub steps.
	code, _, body = s.do("POST", "/v2/models/add_sub_twice/infer", "application/json",
		[]byte(`{"inputs":[{"name":"A","shape":[1,16],"datatype":"FP32","data":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]},`+
			`{"name":"B","shape":[1,16],"datatype":"FP32","data":[0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,-1]}],"outputs":[{"name":"B2"}]}`), nil)
	if code != 200 || !strings.Contains(string(body), `"name":"B2"`) || !strings.Contains(string(body), `0.0,0.0,-2.0]`) || strings.Contains(string(body), `"A2"`) {
		t.Fatalf("ensemble infer: %d %s", code, body)
	}

	// Binary infer through ONNX Runtime.
	header := []byte(`{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"FP32","parameters":{"binary_data_size":64}},` +
		`{"name":"INPUT1","shape":[1,16],"datatype":"FP32","parameters":{"binary_data_size":64}}],` +
		`"outputs":[{"name":"OUTPUT0","parameters":{"binary_data":true}}]}`)
	payload := bytes.NewBuffer(append([]byte(nil), header...))
	for _, base := range []float32{1, 10} {
		for i := range 16 {
			_ = binary.Write(payload, binary.LittleEndian, base*float32(i))
		}
	}
	code, h, body := s.do("POST", "/v2/models/add_sub/infer", "application/octet-stream", payload.Bytes(),
		map[string]string{"Inference-Header-Content-Length": strconv.Itoa(len(header))})
	if code != 200 {
		t.Fatalf("binary infer: %d %s", code, body)
	}
	n, err := strconv.Atoi(h.Get("Inference-Header-Content-Length"))
	if err != nil || n > len(body) || len(body)-n != 64 {
		t.Fatalf("binary response: header length %q, body %d bytes", h.Get("Inference-Header-Content-Length"), len(body))
	}
	for i := range 16 {
		got := math.Float32frombits(binary.LittleEndian.Uint32(body[n+4*i:]))
		if got != 11*float32(i) {
			t.Fatalf("OUTPUT0[%d] = %v, want %v", i, got, 11*float32(i))
		}
	}

	// System shared memory: the input of text_reverse comes from a POSIX object.
	shmName := fmt.Sprintf("tritongo-e2e-%d", os.Getpid())
	shmPath := filepath.Join("/dev/shm", shmName)
	if _, err := os.Stat("/dev/shm"); err == nil {
		var framed bytes.Buffer
		for _, s := range []string{"abc", "de\x00f"} {
			_ = binary.Write(&framed, binary.LittleEndian, uint32(len(s)))
			framed.WriteString(s)
		}
		if err := os.WriteFile(shmPath, framed.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(shmPath)
		reg := fmt.Sprintf(`{"key":"/%s","offset":0,"byte_size":%d}`, shmName, framed.Len())
		if code, _, body := s.do("POST", "/v2/systemsharedmemory/region/in/register", "application/json", []byte(reg), nil); code != 200 {
			t.Fatalf("shm register: %d %s", code, body)
		}
		req := fmt.Sprintf(`{"inputs":[{"name":"TEXT","shape":[2],"datatype":"BYTES","parameters":{"shared_memory_region":"in","shared_memory_byte_size":%d}}]}`, framed.Len())
		code, _, body := s.do("POST", "/v2/models/text_reverse/infer", "application/json", []byte(req), nil)
		if code != 200 || !strings.Contains(string(body), `"data":["cba","f\u0000ed"]`) {
			t.Fatalf("shm infer: %d %s", code, body)
		}
		code, _, body = s.do("GET", "/v2/systemsharedmemory/status", "", nil, nil)
		if code != 200 || !strings.Contains(string(body), `"name":"in"`) {
			t.Fatalf("shm status: %d %s", code, body)
		}
		if code, _, body := s.do("POST", "/v2/systemsharedmemory/region/in/unregister", "", nil, nil); code != 200 {
			t.Fatalf("shm unregister: %d %s", code, body)
		}
	}

	// Repository: unload and load again.
	if code, _, body := s.do("POST", "/v2/repository/models/text_reverse/unload", "", nil, nil); code != 200 {
		t.Fatalf("unload: %d %s", code, body)
	}
	if code, _, _ := s.do("GET", "/v2/models/text_reverse/ready", "", nil, nil); code == 200 {
		t.Fatal("ready after unload")
	}
	code, _, body = s.do("POST", "/v2/repository/index", "application/json", nil, nil)
	var index []map[string]any
	if code != 200 || json.Unmarshal(body, &index) != nil {
		t.Fatalf("index: %d %s", code, body)
	}
	if code, _, body := s.do("POST", "/v2/repository/models/text_reverse/load", "", nil, nil); code != 200 {
		t.Fatalf("load: %d %s", code, body)
	}
	if code, _, _ := s.do("GET", "/v2/models/text_reverse/ready", "", nil, nil); code != 200 {
		t.Fatal("not ready after load")
	}

	// Statistics and metrics: add_sub ran the binary request and the
	// ensemble's two steps.
	code, _, body = s.do("GET", "/v2/models/add_sub/stats", "", nil, nil)
	var stats struct {
		ModelStats []struct {
			Name           string `json:"name"`
			InferenceCount uint64 `json:"inference_count"`
		} `json:"model_stats"`
	}
	if code != 200 || json.Unmarshal(body, &stats) != nil || len(stats.ModelStats) != 1 || stats.ModelStats[0].InferenceCount != 3 {
		t.Fatalf("stats: %d %s", code, body)
	}
	resp, err := http.Get(s.metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	mbody, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(mbody), `nv_inference_count{model="add_sub",version="1"} 3`) {
		t.Fatalf("metrics lack add_sub's inference count:\n%s", mbody)
	}

	// SIGTERM: a graceful exit.
	s.terminate(30 * time.Second)
}

// TestModelConfigNameFlag: --model-config-name makes the binary read
// <model>/configs/<name>.pbtxt where it exists (here a text_reverse whose
// output has another name) and config.pbtxt elsewhere, with the load flags
// applied.
func TestModelConfigNameFlag(t *testing.T) {
	repo := t.TempDir()
	for _, name := range []string{"a", "b"} {
		dir := filepath.Join(repo, name)
		if err := os.MkdirAll(filepath.Join(dir, "1"), 0o755); err != nil {
			t.Fatal(err)
		}
		cfg := fmt.Sprintf("name: %q\nbackend: \"reverse\"\ninput [ { name: \"TEXT\" data_type: TYPE_STRING dims: [ -1 ] } ]\noutput [ { name: \"REVERSED\" data_type: TYPE_STRING dims: [ -1 ] } ]\n", name)
		if err := os.WriteFile(filepath.Join(dir, "config.pbtxt"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(repo, "a", "configs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "a", "configs", "h100.pbtxt"),
		[]byte("name: \"a\"\nbackend: \"reverse\"\nmax_batch_size: 0\ninput [ { name: \"TEXT\" data_type: TYPE_STRING dims: [ -1 ] } ]\noutput [ { name: \"REVERSED\" data_type: TYPE_STRING dims: [ -1 ] } ]\nparameters { key: \"chosen\" value: { string_value: \"h100\" } }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startBinary(t, "--model-repository", repo, "--model-config-name", "h100", "--model-load-thread-count", "2", "--model-load-retry-count", "1")
	code, _, body := s.do("GET", "/v2/models/a/config", "", nil, nil)
	if code != 200 || !strings.Contains(string(body), `"chosen"`) {
		t.Errorf("a's config: %d %s; want the parameter of configs/h100.pbtxt", code, body)
	}
	code, _, body = s.do("GET", "/v2/models/b/config", "", nil, nil)
	if code != 200 || strings.Contains(string(body), `"chosen"`) {
		t.Errorf("b's config: %d %s; want config.pbtxt's", code, body)
	}
}
