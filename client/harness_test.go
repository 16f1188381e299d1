package client_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/stats"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/backend/onnxruntime"
	"github.com/triton-go/triton/client"
	"github.com/triton-go/triton/grpcapi"
	"github.com/triton-go/triton/grpcapi/inferencepb"
	"github.com/triton-go/triton/httpapi"
	"github.com/triton-go/triton/internal/findup"
	"github.com/triton-go/triton/internal/pixels"
	"github.com/triton-go/triton/internal/repeat"
	"github.com/triton-go/triton/internal/reverse"
	"github.com/triton-go/triton/internal/testenv"
	"github.com/triton-go/triton/internal/testmodels"
	"github.com/triton-go/triton/sysshm"
)

// The test repository, written to a folder so that cmd/tritonserver serves
// it as the in-process server does. Its models need no native library,
// except the ONNX ones, which are written only when the ONNX Runtime
// library is there:
//
//   - built into tritonserver (Go backends cmd/tritonserver compiles in,
//     registered in-process under the same names): text_reverse and lazy
//     (reverse, BYTES), pixels and pixels_wait (pixels, UINT8 → FP32;
//     pixels_wait holds a lone request in its queue for a minute),
//     repeat_int32 (repeat, decoupled);
//   - test-only Go backends, served in-process only: simple (INT32
//     add/sub), params (echoes request parameters as response parameters);
//   - ONNX: identity_int32, add_sub (FP32 add/sub).
//
// The server runs in explicit model control with every model but lazy
// loaded at start.
var repoModels = map[string]string{
	"text_reverse": reverseConfig("text_reverse"),
	"lazy":         reverseConfig("lazy"),
	"pixels": `name: "pixels" backend: "pixels" max_batch_size: 8
input [ { name: "IMAGE" data_type: TYPE_UINT8 dims: [ 28, 28 ] } ]
output [ { name: "PIXELS" data_type: TYPE_FP32 dims: [ 1, 28, 28 ] } ]`,
	"pixels_wait": `name: "pixels_wait" backend: "pixels" max_batch_size: 8
input [ { name: "IMAGE" data_type: TYPE_UINT8 dims: [ 28, 28 ] } ]
output [ { name: "PIXELS" data_type: TYPE_FP32 dims: [ 1, 28, 28 ] } ]
dynamic_batching {
  preferred_batch_size: [ 8 ]
  max_queue_delay_microseconds: 60000000
  default_queue_policy { default_timeout_microseconds: 60000000 allow_timeout_override: true }
}`,
	"repeat_int32": `name: "repeat_int32"` + repeat.Config,
	"simple": `name: "simple" backend: "addsub" max_batch_size: 8
input [
  { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] },
  { name: "INPUT1" data_type: TYPE_INT32 dims: [ 16 ] }
]
output [
  { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] },
  { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 16 ] }
]`,
	"params": `name: "params" backend: "params" max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]`,
}

// onnxModels are the ONNX models: config and the file of
// backend/onnxruntime/testdata/models they serve.
var onnxModels = map[string][2]string{
	"identity_int32": {`name: "identity_int32" platform: "onnxruntime_onnx" max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ -1 ] } ]`, "identity_int32.onnx"},
	"add_sub": {`name: "add_sub" platform: "onnxruntime_onnx" max_batch_size: 8
input [
  { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] },
  { name: "INPUT1" data_type: TYPE_FP32 dims: [ 16 ] }
]
output [
  { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] },
  { name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 16 ] }
]`, "add_sub.onnx"},
}

// testOnlyModels are the models whose backends tritonserver lacks: it
// does not load them.
var testOnlyModels = []string{"simple", "params"}

func reverseConfig(name string) string {
	return `name: "` + name + `" backend: "reverse" max_batch_size: 0
input [ { name: "TEXT" data_type: TYPE_STRING dims: [ -1 ] } ]
output [ { name: "REVERSED" data_type: TYPE_STRING dims: [ -1 ] } ]`
}

// haveORT reports whether the ONNX Runtime library is where the
// onnxruntime backend looks for it.
func haveORT() bool {
	if p := os.Getenv(onnxruntime.LibraryEnv); p != "" {
		_, err := os.Stat(p)
		return err == nil
	}
	_, ok := findup.File(onnxruntime.CachePath())
	return ok
}

// writeRepo writes the test repository and returns its folder and the
// models to load at start.
func writeRepo(t *testing.T) (dir string, startup []string) {
	t.Helper()
	dir = t.TempDir()
	write := func(rel string, data []byte) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, cfg := range repoModels {
		write(name+"/config.pbtxt", []byte(cfg))
		write(name+"/1/model.txt", nil)
		if name != "lazy" {
			startup = append(startup, name)
		}
	}
	if haveORT() {
		root := testenv.RepoRoot(t)
		for name, m := range onnxModels {
			model, err := os.ReadFile(filepath.Join(root, "backend", "onnxruntime", "testdata", "models", m[1]))
			if err != nil {
				t.Fatal(err)
			}
			write(name+"/config.pbtxt", []byte(m[0]))
			write(name+"/1/model.onnx", model)
			startup = append(startup, name)
		}
	}
	return dir, startup
}

// echoParams answers INPUT0 as OUTPUT0 and sets the request's parameters
// as the response's.
var echoParams = backend.Func(func(ctx context.Context, b *backend.Batch) error {
	for _, r := range b.Requests {
		in, _ := r.Input("INPUT0")
		in.Name = "OUTPUT0"
		r.SetOutput(in)
		for k, v := range r.Parameters {
			r.SetParameter(k, v)
		}
	}
	return nil
})

// observer keeps the server's records of the requests to pixels_wait,
// which the deadline and cancellation cases read to see that the server
// itself stopped the request.
type observer struct{ ch chan triton.RequestStats }

func (o observer) ObserveRequest(r triton.RequestStats) {
	if r.Model != "pixels_wait" {
		return
	}
	select {
	case o.ch <- r:
	default: // nobody looked at the last 256: drop
	}
}

// saw waits for the server's record of the request with ID id and returns
// its failure reason.
func (o observer) saw(t testing.TB, id string) triton.FailureReason {
	t.Helper()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case r := <-o.ch:
			if e, ok := errors.AsType[*triton.Error](r.Err); ok && e.RequestID == id {
				return r.Reason
			}
		case <-timeout.C:
			t.Fatalf("the server did not finish request %s within 10 s", id)
		}
	}
}

// newServer starts the in-process server on the repository, closed when
// the test ends.
func newServer(t *testing.T, dir string, startup []string, obs observer) *triton.Server {
	t.Helper()
	srv, err := triton.New(
		triton.WithObserver(obs),
		triton.WithModelRepository(dir),
		triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit}),
		triton.WithStartupModels(startup...),
		triton.WithBackend(reverse.Name, reverse.Backend),
		triton.WithBackend("repeat", &repeat.Backend{}),
		triton.WithBackend(pixels.Name, pixels.Backend),
		triton.WithBackend("addsub", testmodels.AddSub),
		triton.WithBackend("params", echoParams),
		triton.WithBackend(onnxruntime.Name, onnxruntime.New()),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// target is one server a client talks to, through one protocol.
type target struct {
	name string
	kind string // "local", "http" or "grpc": the client
	// binary: the real tritonserver, which has only its own Go backends.
	binary bool
	dial   func(t *testing.T, opts ...client.Option) client.Conn
	// wire is what the server saw of compression, where the test can
	// see it (nil: it cannot).
	wire *wireLog
	// obs has the in-process server's records of requests (nil channel:
	// the binary's, which the test cannot see).
	obs observer
}

// wireLog records the encodings of the last inference request and
// response a server handled.
type wireLog struct {
	mu        sync.Mutex
	req, resp string
}

func (w *wireLog) set(req, resp string) {
	w.mu.Lock()
	w.req, w.resp = req, resp
	w.mu.Unlock()
}

func (w *wireLog) last() (req, resp string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.req, w.resp
}

// localTarget is srv through client.Local.
func localTarget(srv *triton.Server, obs observer) target {
	return target{name: "local", kind: "local", obs: obs, dial: func(t *testing.T, _ ...client.Option) client.Conn {
		c := client.Local(srv)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}}
}

// httpTarget serves srv with httpapi on a loopback port.
func httpTarget(t *testing.T, srv *triton.Server, shm *sysshm.Registry, obs observer) target {
	log := &wireLog{}
	h := httpapi.NewHandler(srv, httpapi.WithSharedMemory(shm))
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		if strings.HasSuffix(r.URL.Path, "/infer") {
			log.set(r.Header.Get("Content-Encoding"), w.Header().Get("Content-Encoding"))
		}
	}))
	t.Cleanup(ts.Close)
	return target{name: "http", kind: "http", wire: log, obs: obs, dial: dialHTTP(strings.TrimPrefix(ts.URL, "http://"))}
}

// grpcTarget serves srv with grpcapi on a loopback port.
func grpcTarget(t *testing.T, srv *triton.Server, shm *sysshm.Registry, obs observer) target {
	log := &grpcLog{}
	g := grpc.NewServer(append(grpcapi.ServerOptions(), grpc.StatsHandler(log))...)
	grpcapi.New(srv, grpcapi.WithSharedMemory(shm)).Register(g)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = g.Serve(lis)
	}()
	t.Cleanup(func() {
		g.Stop()
		<-done
	})
	return target{name: "grpc", kind: "grpc", wire: &log.wireLog, obs: obs, dial: dialGRPC(lis.Addr().String())}
}

// grpcLog is a stats.Handler recording the encodings of ModelInfer calls.
type grpcLog struct{ wireLog }

type rpcKey struct{}

func (l *grpcLog) TagRPC(ctx context.Context, info *stats.RPCTagInfo) context.Context {
	return context.WithValue(ctx, rpcKey{}, info.FullMethodName)
}

func (l *grpcLog) HandleRPC(ctx context.Context, s stats.RPCStats) {
	if ctx.Value(rpcKey{}) != inferencepb.GRPCInferenceService_ModelInfer_FullMethodName {
		return
	}
	switch s := s.(type) {
	case *stats.InHeader:
		l.set(s.Compression, "")
	case *stats.OutHeader:
		req, _ := l.last()
		l.set(req, s.Compression)
	}
}

func (l *grpcLog) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }
func (l *grpcLog) HandleConn(context.Context, stats.ConnStats)                       {}

func dialHTTP(addr string) func(t *testing.T, opts ...client.Option) client.Conn {
	return func(t *testing.T, opts ...client.Option) client.Conn {
		t.Helper()
		c, err := client.NewHTTP(addr, opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
}

func dialGRPC(addr string) func(t *testing.T, opts ...client.Option) client.Conn {
	return func(t *testing.T, opts ...client.Option) client.Conn {
		t.Helper()
		c, err := client.NewGRPC(addr, opts...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
}

// binaryTargets build cmd/tritonserver, run it on the repository and
// return its HTTP and gRPC endpoints as targets.
func binaryTargets(t *testing.T, dir string, startup []string) []target {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "tritonserver")
	build := exec.Command("go", "build", "-o", bin, "github.com/triton-go/triton/cmd/tritonserver")
	var out bytes.Buffer
	build.Stdout, build.Stderr = &out, &out
	if err := build.Run(); err != nil {
		t.Fatalf("go build cmd/tritonserver: %v\n%s", err, out.String())
	}
	args := []string{"--model-repository=" + dir, "--model-control-mode=explicit",
		"--http-port=0", "--grpc-port=0", "--metrics-port=0",
		"--http-address=127.0.0.1", "--grpc-address=127.0.0.1", "--metrics-address=127.0.0.1",
		"--allow-client-shm=true", "--log-info=false", "--exit-drain-secs=0"}
	for _, m := range startup {
		if !slices.Contains(testOnlyModels, m) {
			args = append(args, "--load-model="+m)
		}
	}
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	lines := bufio.NewScanner(stdout)
	addr := regexp.MustCompile(`^(http|grpc|metrics) listening on .*:(\d+)$`)
	ports := map[string]string{}
	kill := time.AfterFunc(60*time.Second, func() { _ = cmd.Process.Kill() })
	for len(ports) < 3 && lines.Scan() {
		if m := addr.FindStringSubmatch(lines.Text()); m != nil {
			ports[m[1]] = m[2]
		}
	}
	kill.Stop()
	go func() {
		defer close(exited)
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	if len(ports) < 3 {
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("tritonserver did not start; stderr:\n%s", stderr.String())
	}
	return []target{
		{name: "tritonserver-http", kind: "http", binary: true, dial: dialHTTP("127.0.0.1:" + ports["http"])},
		{name: "tritonserver-grpc", kind: "grpc", binary: true, dial: dialGRPC("127.0.0.1:" + ports["grpc"])},
	}
}
