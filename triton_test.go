package triton_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/tensor"
)

// TestEndToEndOnDisk loads a repository written to disk, with several
// models and versions, and serves them.
func TestEndToEndOnDisk(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("simple/config.pbtxt", simpleConfig)
	for _, v := range []string{"1", "2", "3"} {
		write("simple/"+v+"/model.txt", "")
	}
	write("simple/notaversion/x", "")
	write("simple/007/x", "")
	write("multi/config.pbtxt", oneInput("versioned", 1, `name: "multi" version_policy: { all: {} }`))
	write("multi/1/x", "")
	write("multi/4/x", "")
	write("pinned/config.pbtxt", oneInput("versioned", 1, `version_policy: { specific: { versions: [ 1, 3 ] } }`))
	for _, v := range []string{"1", "2", "3"} {
		write("pinned/"+v+"/x", "")
	}

	// versioned answers with the version that ran, read from a file in the
	// version folder through the spec, to show backends see their files.
	versioned := &versionBackend{}
	srv, err := triton.NewFromDir(dir, triton.WithBackend("gofunc", addSub), triton.WithBackend("versioned", versioned))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	if !srv.Live() || !srv.Ready(context.Background()) {
		t.Fatal("server not live and ready")
	}
	// latest{1} by default: only version 3 of simple.
	resp, err := srv.Infer(context.Background(), simpleRequest(t, 2))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Version != 3 {
		t.Errorf("simple ran version %d, want 3", resp.Version)
	}
	for _, tc := range []struct {
		model   string
		version int64
		want    int64 // 0: not loaded
	}{
		{"multi", 0, 4}, {"multi", 1, 1}, {"multi", 4, 4},
		{"pinned", 0, 3}, {"pinned", 1, 1}, {"pinned", 2, 0}, {"pinned", 3, 3},
		{"simple", 1, 0}, {"simple", 3, 3},
	} {
		req := &triton.InferRequest{Model: tc.model, Version: tc.version, Inputs: []tensor.Tensor{int32s(t, "INPUT0", tensor.Shape{1}, 0)}}
		if tc.model == "simple" {
			req = simpleRequest(t, 1)
			req.Version = tc.version
		}
		resp, err := srv.Infer(context.Background(), req)
		if tc.want == 0 {
			wantError(t, err, triton.NotFound, "is not found")
			continue
		}
		if err != nil {
			t.Errorf("%s v%d: %v", tc.model, tc.version, err)
			continue
		}
		if resp.Version != tc.want {
			t.Errorf("%s v%d ran version %d, want %d", tc.model, tc.version, resp.Version, tc.want)
		}
		if tc.model != "simple" {
			if got := outputInt32(t, resp, "OUTPUT0")[0]; int64(got) != tc.want {
				t.Errorf("%s v%d: backend says it is version %d", tc.model, tc.version, got)
			}
		}
	}
	if got := versioned.dirs.Load(); got != 4 {
		t.Errorf("backend saw %d local version folders, want 4", got)
	}
	md, err := srv.ModelMetadata("multi", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(md.Versions, []string{"1", "4"}) {
		t.Errorf("multi versions %v", md.Versions)
	}
	if err := srv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

type versionBackend struct{ dirs atomic.Int32 }

func (vb *versionBackend) Load(_ context.Context, spec *backend.ModelSpec) (backend.Model, error) {
	if d := spec.VersionDir(); d != "" {
		if _, err := os.Stat(d); err == nil {
			vb.dirs.Add(1)
		}
	}
	if _, err := spec.VersionFS(); err != nil {
		return nil, err
	}
	v := int32(spec.Version)
	return backend.Func(func(_ context.Context, b *backend.Batch) error {
		out, err := tensor.From("OUTPUT0", tensor.Shape{1}, []int32{v})
		if err != nil {
			return err
		}
		return b.SetOutput(out)
	}), nil
}

func TestMetadataAndConfig(t *testing.T) {
	srv := newServer(t, simpleRepo(), triton.WithBackend("gofunc", addSub))
	md, err := srv.ModelMetadata("simple", 0)
	if err != nil {
		t.Fatal(err)
	}
	if md.Name != "simple" || md.Platform != "gofunc" || !slices.Equal(md.Versions, []string{"1"}) {
		t.Errorf("metadata %+v", md)
	}
	if len(md.Inputs) != 2 || md.Inputs[0].Name != "INPUT0" || md.Inputs[0].DataType != "INT32" || !slices.Equal(md.Inputs[0].Shape, []int64{-1, 16}) {
		t.Errorf("inputs %+v", md.Inputs)
	}
	cfg, err := srv.ModelConfig("simple", 1)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GetName() != "simple" || cfg.GetMaxBatchSize() != 8 || cfg.GetVersionPolicy().GetLatest().GetNumVersions() != 1 {
		t.Errorf("config %v", cfg)
	}
	// The accessor returns a copy.
	cfg.MaxBatchSize = 1
	again, _ := srv.ModelConfig("simple", 0)
	if again.GetMaxBatchSize() != 8 {
		t.Error("changing the returned config changed the server's")
	}
	_, err = srv.ModelMetadata("nope", 0)
	wantError(t, err, triton.InvalidArgument, "Request for unknown model: 'nope' is not found")
	_, err = srv.ModelConfig("simple", 2)
	wantError(t, err, triton.NotFound, "version 2 is not found")
	meta := srv.Metadata()
	if meta.Name != "triton" || meta.Version == "" {
		t.Errorf("server metadata %+v", meta)
	}
}

func TestLoadFailures(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		parts []string
	}{
		{"unknown backend", map[string]string{"m/config.pbtxt": `backend: "nosuch"`, "m/1/x": ""},
			[]string{"unknown backend 'nosuch' for model 'm'", "github.com/triton-go/triton/backend/nosuch"}},
		{"unknown platform", map[string]string{"m/config.pbtxt": `platform: "caffe2_netdef"`, "m/1/x": ""},
			[]string{"m/config.pbtxt", "caffe2_netdef"}},
		{"syntax", map[string]string{"m/config.pbtxt": "backend: \"gofunc\"\nmax_batch_size: [", "m/1/x": ""},
			[]string{"m/config.pbtxt:2"}},
		{"unknown field", map[string]string{"m/config.pbtxt": `backend: "gofunc" max_batch: 3`, "m/1/x": ""},
			[]string{"m/config.pbtxt", "max_batch"}},
		{"name mismatch", map[string]string{"m/config.pbtxt": `name: "other" backend: "gofunc"`, "m/1/x": ""},
			[]string{"m/config.pbtxt", "'other'"}},
		{"bad dims", map[string]string{"m/config.pbtxt": `backend: "gofunc" input [ { name: "A" data_type: TYPE_FP32 dims: [ 0 ] } ]`, "m/1/x": ""},
			[]string{"m/config.pbtxt", "input[0].dims", "dimension must be integer >= 1, or -1"}},
		{"duplicate input", map[string]string{"m/config.pbtxt": `backend: "gofunc"
input [ { name: "A" data_type: TYPE_FP32 dims: [ 1 ] }, { name: "A" data_type: TYPE_FP32 dims: [ 1 ] } ]`, "m/1/x": ""},
			[]string{"m/config.pbtxt", "'A'"}},
		{"no versions", map[string]string{"m/config.pbtxt": `backend: "gofunc"`, "m/notversion/x": ""},
			[]string{"at least one version must be available under the version policy of model 'm'"}},
		{"strict without config", map[string]string{"m/1/model.onnx": "x"},
			[]string{"no configuration file"}},
		{"load error", map[string]string{"m/config.pbtxt": `backend: "failing"`, "m/1/x": ""},
			[]string{"failed to load 'm'", "weights are corrupt"}},
		{"load panic", map[string]string{"m/config.pbtxt": `backend: "panicking"`, "m/1/x": ""},
			[]string{"failed to load 'm'", "backend panic"}},
		{"instance error", map[string]string{"m/config.pbtxt": `backend: "noinstance"`, "m/1/x": ""},
			[]string{"failed to load 'm'", "out of memory"}},
		{"missing label file", map[string]string{"m/config.pbtxt": `backend: "gofunc" output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] label_filename: "labels.txt" } ]`, "m/1/x": ""},
			[]string{"output 'OUTPUT0': label_filename", "labels.txt"}},
		{"label file outside the model", map[string]string{"m/config.pbtxt": `backend: "gofunc" output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] label_filename: "../good/1/x" } ]`, "m/1/x": ""},
			[]string{"label_filename '../good/1/x' must be a relative path inside the model folder"}},
		{"gpu group without gpu", map[string]string{"m/config.pbtxt": `backend: "gofunc" instance_group [ { kind: KIND_GPU } ]`, "m/1/x": ""},
			[]string{"KIND_GPU"}},
	}
	failing := &loadFailer{err: errors.New("weights are corrupt")}
	opts := []triton.Option{
		triton.WithBackend("gofunc", mirror),
		triton.WithBackend("failing", failing),
		triton.WithBackend("panicking", &loadFailer{panic: true}),
		triton.WithBackend("noinstance", &loadFailer{instErr: errors.New("out of memory")}),
		triton.WithStrictConfig(true),
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"good/config.pbtxt": oneInput("gofunc", 1, ""), "good/1/x": ""}
			for k, v := range tc.files {
				files[k] = v
			}
			// Exit on error (the default): New fails and names the model.
			srv, err := triton.New(append([]triton.Option{triton.WithRepository(mapFS(files))}, opts...)...)
			if err == nil {
				srv.Close()
				t.Fatal("New succeeded")
			}
			for _, p := range append(tc.parts, `model "m"`) {
				if !strings.Contains(err.Error(), p) {
					t.Errorf("error %q does not mention %q", err, p)
				}
			}
			// Without exit on error: the good model serves, the bad one is
			// reported with its reason, the server is not ready.
			srv = newServer(t, files, append(opts, triton.WithExitOnError(false))...)
			if srv.Ready(context.Background()) {
				t.Error("server ready with a failed model")
			}
			if srv.ModelReady(context.Background(), "m", 0) {
				t.Error("failed model reported ready")
			}
			if !srv.ModelReady(context.Background(), "good", 0) {
				t.Error("good model not ready")
			}
			if _, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "good", Inputs: []tensor.Tensor{int32s(t, "INPUT0", tensor.Shape{1}, 1)}}); err != nil {
				t.Errorf("good model: %v", err)
			}
			var reason string
			for _, st := range srv.Index(context.Background()) {
				if st.Name == "m" && st.State == "UNAVAILABLE" {
					reason = st.Reason
				}
			}
			if !strings.Contains(reason, tc.parts[0]) {
				t.Errorf("index reason %q does not mention %q", reason, tc.parts[0])
			}
			_, err = srv.Infer(context.Background(), &triton.InferRequest{Model: "m"})
			wantError(t, err, triton.NotFound, "has no available versions")
		})
	}
}

type loadFailer struct {
	err     error
	panic   bool
	instErr error
}

func (l *loadFailer) Load(context.Context, *backend.ModelSpec) (backend.Model, error) {
	if l.panic {
		panic("load exploded")
	}
	if l.err != nil {
		return nil, l.err
	}
	return l, nil
}
func (l *loadFailer) NewInstance(context.Context, backend.InstanceSpec) (backend.Instance, error) {
	return nil, l.instErr
}
func (l *loadFailer) Close() error { return nil }

// completer is a backend that fills in its config from "the model file",
// as ONNX Runtime's auto-complete does.
type completer struct{ backend.Func }

func (completer) CompleteConfig(_ context.Context, spec *backend.ModelSpec) error {
	if len(spec.Config.GetInput()) == 0 {
		spec.Config.Input = []*modelconfig.ModelInput{{Name: "INPUT0", DataType: modelconfig.DataType_TYPE_FP32, Dims: []int64{2}}}
		spec.Config.Output = []*modelconfig.ModelOutput{{Name: "OUTPUT0", DataType: modelconfig.DataType_TYPE_FP32, Dims: []int64{2}}}
		spec.Config.MaxBatchSize = 4
	}
	return nil
}

func TestAutoComplete(t *testing.T) {
	files := map[string]string{"auto/1/model.onnx": "not really onnx"}
	srv := newServer(t, files, triton.WithBackend("onnxruntime", completer{mirror}))
	cfg, err := srv.ModelConfig("auto", 0)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GetBackend() != "onnxruntime" || cfg.GetPlatform() != "onnxruntime_onnx" || cfg.GetMaxBatchSize() != 4 || len(cfg.GetInput()) != 1 {
		t.Errorf("completed config: %v", cfg)
	}
	in, _ := tensor.From("INPUT0", tensor.Shape{3, 2}, make([]float32, 6))
	if _, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "auto", Inputs: []tensor.Tensor{in}}); err != nil {
		t.Fatal(err)
	}
}

func TestStartupModels(t *testing.T) {
	files := simpleRepo("other/config.pbtxt", `backend: "gofunc"`, "other/1/x", "")
	srv := newServer(t, files, triton.WithBackend("gofunc", addSub), triton.WithStartupModels("simple"))
	if !srv.ModelReady(context.Background(), "simple", 0) {
		t.Error("simple not loaded")
	}
	_, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "other"})
	wantError(t, err, triton.InvalidArgument, "Request for unknown model: 'other' is not found")

	_, err = triton.New(triton.WithRepository(mapFS(files)), triton.WithBackend("gofunc", addSub), triton.WithStartupModels("missing"))
	wantError(t, err, triton.NotFound, "failed to load 'missing'")
	_, err = triton.New(triton.WithRepository(mapFS(files)), triton.WithStartupModels("*", "simple"))
	wantError(t, err, triton.InvalidArgument, `"*" must be the only`)
}

func TestOptionErrors(t *testing.T) {
	for name, opts := range map[string][]triton.Option{
		"no repository":  nil,
		"nil fs":         {triton.WithRepository(nil)},
		"empty dir":      {triton.WithModelRepository("")},
		"nil logger":     {triton.WithRepository(mapFS(nil)), triton.WithLogger(nil)},
		"nil backend":    {triton.WithRepository(mapFS(nil)), triton.WithBackend("x", nil)},
		"empty model":    {triton.WithRepository(mapFS(nil)), triton.WithStartupModels("")},
		"missing folder": {triton.WithModelRepository(filepath.Join(t.TempDir(), "absent"))},
	} {
		t.Run(name, func(t *testing.T) {
			srv, err := triton.New(opts...)
			if err == nil {
				srv.Close()
				t.Fatal("New succeeded")
			}
			if c := triton.CodeOf(err); c != triton.InvalidArgument {
				t.Errorf("code %v: %v", c, err)
			}
		})
	}
}

var registerOnce sync.Once

func TestBackendRegistryOverride(t *testing.T) {
	const name = "registry-override-test"
	registerOnce.Do(func() {
		backend.Register(name, backend.Func(func(context.Context, *backend.Batch) error { return errors.New("global backend ran") }))
	})
	files := map[string]string{"m/config.pbtxt": oneInput(name, 1, ""), "m/1/x": ""}
	req := func() *triton.InferRequest {
		return oneInputRequest(t, "m", "", 1)
	}
	global := newServer(t, files)
	_, err := global.Infer(context.Background(), req())
	wantError(t, err, triton.Internal, "global backend ran")
	local := newServer(t, files, triton.WithBackend(name, mirror))
	if _, err := local.Infer(context.Background(), req()); err != nil {
		t.Fatalf("per-server backend: %v", err)
	}
}

// TestShutdownDrains runs in a synctest bubble: the short Shutdown's
// deadline passes on the bubble's clock, once the request is running.
func TestShutdownDrains(t *testing.T) { synctest.Test(t, testShutdownDrains) }

func testShutdownDrains(t *testing.T) {
	files := map[string]string{
		"m/config.pbtxt": oneInput("slow", 1, ""),
		"m/1/x":          "",
	}
	started, release := make(chan struct{}), make(chan struct{})
	closed := atomic.Bool{}
	slow := &closeTracker{Func: func(ctx context.Context, b *backend.Batch) error {
		close(started)
		<-release
		return mirror(ctx, b)
	}, closed: &closed}
	srv, err := triton.New(triton.WithRepository(mapFS(files)), triton.WithBackend("slow", slow))
	if err != nil {
		t.Fatal(err)
	}
	req := func() *triton.InferRequest {
		return oneInputRequest(t, "m", "", 9)
	}
	inflight := make(chan error, 1)
	go func() {
		resp, err := srv.Infer(context.Background(), req())
		if err == nil && outputInt32(t, resp, "OUTPUT0")[0] != 9 {
			err = errors.New("wrong output")
		}
		inflight <- err
	}()
	<-started

	// A short Shutdown gives up while the request runs; the model is still open.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	begun := time.Now()
	if err := srv.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want deadline exceeded", err)
	}
	if d := time.Since(begun); d != 10*time.Millisecond {
		t.Errorf("Shutdown gave up after %v, want its deadline, 10ms", d)
	}
	if closed.Load() {
		t.Fatal("model closed while a request was running")
	}
	if srv.Live() || srv.Ready(context.Background()) {
		t.Error("server live or ready while shutting down")
	}
	_, err = srv.Infer(context.Background(), req())
	wantError(t, err, triton.Unavailable, "server closed")
	if !errors.Is(err, triton.ErrServerClosed) {
		t.Errorf("error %v is not ErrServerClosed", err)
	}

	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(context.Background()) }()
	close(release)
	if err := <-inflight; err != nil {
		t.Fatalf("in-flight request failed during shutdown: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !closed.Load() {
		t.Error("model not closed after Shutdown")
	}
	if err := srv.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

type closeTracker struct {
	backend.Func
	closed *atomic.Bool
}

func (c *closeTracker) Load(context.Context, *backend.ModelSpec) (backend.Model, error) {
	return c, nil
}
func (c *closeTracker) NewInstance(context.Context, backend.InstanceSpec) (backend.Instance, error) {
	return c.Func, nil
}
func (c *closeTracker) Close() error { c.closed.Store(true); return nil }

// TestCloseAnswersQueued checks that Close fails queued requests at once
// instead of running them, and that nothing is lost. It runs in a synctest
// bubble, so that "queued" and "answered" are states the test waits for.
func TestCloseAnswersQueued(t *testing.T) { synctest.Test(t, testCloseAnswersQueued) }

func testCloseAnswersQueued(t *testing.T) {
	files := map[string]string{
		"m/config.pbtxt": oneInput("block", 1, ""),
		"m/1/x":          "",
	}
	started, release := make(chan struct{}, 1), make(chan struct{})
	var runs atomic.Int32
	block := backend.Func(func(ctx context.Context, b *backend.Batch) error {
		runs.Add(1)
		select {
		case started <- struct{}{}:
		default:
		}
		<-release
		return mirror(ctx, b)
	})
	srv, err := triton.New(triton.WithRepository(mapFS(files)), triton.WithBackend("block", block))
	if err != nil {
		t.Fatal(err)
	}
	const n = 10
	results := make(chan error, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			_, err := srv.Infer(context.Background(), oneInputRequest(t, "m", "", 1))
			results <- err
		})
	}
	<-started
	synctest.Wait() // the others wait for the instance
	st, err := srv.Stats("m", 0)
	if err != nil {
		t.Fatal(err)
	}
	if st[0].Pending != n-1 {
		t.Fatalf("%d requests waiting for the instance, want %d", st[0].Pending, n-1)
	}
	closeDone := make(chan error, 1)
	go func() { closeDone <- srv.Close() }()
	synctest.Wait() // Close answers the waiting requests, then waits for the running one
	if got := len(results); got != n-1 {
		t.Errorf("%d requests answered while one runs, want the %d waiting ones", got, n-1)
	}
	select {
	case err := <-closeDone:
		t.Fatalf("Close returned (%v) while a request was running", err)
	default:
	}
	close(release)
	if err := <-closeDone; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(results)
	ok, unavailable := 0, 0
	for err := range results {
		switch {
		case err == nil:
			ok++
		case triton.CodeOf(err) == triton.Unavailable:
			unavailable++
		default:
			t.Errorf("unexpected error %v", err)
		}
	}
	if ok != 1 || unavailable != n-1 || runs.Load() != 1 {
		t.Errorf("%d ok, %d unavailable, %d executed; want the running request ok and the %d queued ones unavailable, not executed", ok, unavailable, runs.Load(), n-1)
	}
}

// notReady is an instance whose health check fails.
type notReady struct{ backend.Func }

func (notReady) Ready(context.Context) error { return errors.New("device lost") }

func TestReadier(t *testing.T) {
	b := backend.Func(mirror)
	files := map[string]string{"m/config.pbtxt": `backend: "sick"`, "m/1/x": ""}
	sick := sickBackend{notReady{b}}
	srv := newServer(t, files, triton.WithBackend("sick", sick))
	if srv.ModelReady(context.Background(), "m", 1) || srv.Ready(context.Background()) {
		t.Error("model with an unhealthy instance reported ready")
	}
	relaxed := newServer(t, files, triton.WithBackend("sick", sick), triton.WithStrictReadiness(false))
	if !relaxed.Ready(context.Background()) {
		t.Error("server without strict readiness not ready")
	}
}

type sickBackend struct{ inst notReady }

func (s sickBackend) Load(context.Context, *backend.ModelSpec) (backend.Model, error) { return s, nil }
func (s sickBackend) NewInstance(context.Context, backend.InstanceSpec) (backend.Instance, error) {
	return s.inst, nil
}
func (s sickBackend) Close() error { return nil }

func TestConfigClonePerVersion(t *testing.T) {
	// Completing one version's config must not leak into another's.
	files := map[string]string{"m/config.pbtxt": oneInput("gofunc", 1, `version_policy: { all: {} }`), "m/1/x": "", "m/2/x": ""}
	srv := newServer(t, files, triton.WithBackend("gofunc", mirror))
	c1, _ := srv.ModelConfig("m", 1)
	c2, _ := srv.ModelConfig("m", 2)
	if !proto.Equal(c1, c2) {
		t.Error("versions of one config differ")
	}
}

// TestServerID: WithServerID names the server in its metadata; the default
// is Name; an empty id is refused.
func TestServerID(t *testing.T) {
	if got := newServer(t, simpleRepo(), triton.WithBackend("gofunc", addSub)).Metadata().Name; got != triton.Name {
		t.Errorf("default name %q, want %q", got, triton.Name)
	}
	if got := newServer(t, simpleRepo(), triton.WithBackend("gofunc", addSub), triton.WithServerID("edge-7")).Metadata().Name; got != "edge-7" {
		t.Errorf("name %q, want edge-7", got)
	}
	if _, err := triton.New(triton.WithServerID("")); err == nil {
		t.Error("WithServerID(\"\") accepted")
	}
}
