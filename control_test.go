package triton_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/tensor"
)

// diskRepo is a model repository in a temporary folder that tests change
// while a server serves it.
type diskRepo struct {
	t   *testing.T
	dir string
}

func newDiskRepo(t *testing.T) *diskRepo { return &diskRepo{t: t, dir: t.TempDir()} }

func (r *diskRepo) write(name, content string) {
	r.t.Helper()
	p := filepath.Join(r.dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func (r *diskRepo) remove(name string) {
	r.t.Helper()
	if err := os.RemoveAll(filepath.Join(r.dir, filepath.FromSlash(name))); err != nil {
		r.t.Fatal(err)
	}
}

// counting is a backend that answers INPUT0 with the model version (as
// INT32) and counts loads and closes, so tests can see reloads happen (or
// not). A version whose folder has a file named "fail" fails to load.
type counting struct {
	loads, closes atomic.Int32
	seen          sync.Map // files the models saw in their version folder
}

func (c *counting) Load(_ context.Context, spec *backend.ModelSpec) (backend.Model, error) {
	c.loads.Add(1)
	if vfs, err := spec.VersionFS(); err == nil {
		if data, err := fs.ReadFile(vfs, "weights.txt"); err == nil {
			c.seen.Store(spec.Name, string(data))
		}
		if _, err := fs.Stat(vfs, "fail"); err == nil {
			return nil, fmt.Errorf("version %d refuses to load", spec.Version)
		}
	}
	v := int32(spec.Version)
	return &countingModel{c: c, f: backend.Func(func(_ context.Context, b *backend.Batch) error {
		for _, r := range b.Requests {
			shape := r.Inputs[0].Shape // [1], or [batch, 1] when the model batches
			vals := make([]int32, r.BatchSize)
			for i := range vals {
				vals[i] = v
			}
			out, err := tensor.From("OUTPUT0", shape, vals)
			if err != nil {
				return err
			}
			r.SetOutput(out)
		}
		return nil
	})}, nil
}

type countingModel struct {
	c *counting
	f backend.Func
}

func (m *countingModel) NewInstance(context.Context, backend.InstanceSpec) (backend.Instance, error) {
	return m.f, nil
}
func (m *countingModel) Close() error { m.c.closes.Add(1); return nil }

func explicit(extra ...triton.Option) []triton.Option {
	return append([]triton.Option{triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit})}, extra...)
}

// serveExplicit serves dir with the counting backend c in explicit model
// control, loading the startup models named; the server is closed when
// the test ends.
func serveExplicit(t *testing.T, dir string, c *counting, startup ...string) *triton.Server {
	t.Helper()
	opts := explicit(triton.WithBackend("counting", c))
	if len(startup) > 0 {
		opts = append(opts, triton.WithStartupModels(startup...))
	}
	srv, err := triton.NewFromDir(dir, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

func servesVersion(t *testing.T, srv *triton.Server, model string, want int32) {
	t.Helper()
	resp, err := srv.Infer(context.Background(), oneInputRequest(t, model, "", 0))
	if err != nil {
		t.Fatalf("Infer %s: %v", model, err)
	}
	if got := outputInt32(t, resp, "OUTPUT0")[0]; got != want {
		t.Fatalf("%s served version %d, want %d", model, got, want)
	}
}

func state(srv *triton.Server, model string) []string {
	var out []string
	for _, st := range srv.Index(context.Background()) {
		if st.Name == model {
			out = append(out, fmt.Sprintf("%d:%s", st.Version, st.State))
		}
	}
	return out
}

// TestExplicitLoadUnload runs in a synctest bubble, to see the retired
// version close in the background.
func TestExplicitLoadUnload(t *testing.T) { synctest.Test(t, testExplicitLoadUnload) }

func testExplicitLoadUnload(t *testing.T) {
	repo := newDiskRepo(t)
	repo.write("m/config.pbtxt", oneInput("counting", 1, ""))
	repo.write("m/1/x", "")
	repo.write("other/config.pbtxt", oneInput("counting", 1, ""))
	repo.write("other/1/x", "")
	c := &counting{}
	srv := serveExplicit(t, repo.dir, c)
	ctx := context.Background()

	if got := state(srv, "m"); !slices.Equal(got, []string{"0:"}) {
		t.Fatalf("before loading: %v", got)
	}
	if !srv.Ready(ctx) {
		t.Error("explicit mode with nothing loaded must be ready")
	}
	_, err := srv.Infer(ctx, oneInputRequest(t, "m", "", 0))
	wantError(t, err, triton.InvalidArgument, "Request for unknown model: 'm' is not found")

	if err := srv.Load(ctx, "m", nil); err != nil {
		t.Fatal(err)
	}
	servesVersion(t, srv, "m", 1)
	if got := state(srv, "m"); !slices.Equal(got, []string{"1:READY"}) {
		t.Errorf("loaded: %v", got)
	}
	// Loading again without changes does nothing.
	if err := srv.Load(ctx, "m", nil); err != nil || c.loads.Load() != 1 {
		t.Fatalf("unchanged reload: %v, %d loads", err, c.loads.Load())
	}
	// A new version appears: latest policy serves it, the old one closes.
	repo.write("m/2/x", "")
	if err := srv.Load(ctx, "m", nil); err != nil {
		t.Fatal(err)
	}
	servesVersion(t, srv, "m", 2)
	synctest.Wait() // the retired version closes in the background
	if c.closes.Load() != 1 {
		t.Fatalf("%d closes after the reload, want the retired version's", c.closes.Load())
	}

	if err := srv.Unload(ctx, "m", nil); err != nil {
		t.Fatal(err)
	}
	if c.closes.Load() != 2 {
		t.Errorf("%d closes after unload, want 2", c.closes.Load())
	}
	_, err = srv.Infer(ctx, oneInputRequest(t, "m", "", 0))
	wantError(t, err, triton.NotFound, "has no available versions")
	// Both versions served once: both are listed "unloaded", as in Triton.
	if got := state(srv, "m"); !slices.Equal(got, []string{"1:UNAVAILABLE", "2:UNAVAILABLE"}) {
		t.Errorf("after unload: %v", got)
	}
	for _, st := range srv.Index(ctx) {
		if st.Name == "m" && st.Reason != "unloaded" {
			t.Errorf("after unload: %+v, want reason unloaded", st)
		}
	}
	if !srv.Ready(ctx) {
		t.Error("a model unloaded on purpose must not make the server unready")
	}
	// Load after unload works again.
	if err := srv.Load(ctx, "m", nil); err != nil {
		t.Fatal(err)
	}
	servesVersion(t, srv, "m", 2)
}

func TestLoadErrors(t *testing.T) {
	repo := newDiskRepo(t)
	repo.write("m/config.pbtxt", oneInput("counting", 1, ""))
	repo.write("m/1/x", "")
	c := &counting{}
	srv := serveExplicit(t, repo.dir, c)
	ctx := context.Background()
	cfgJSON := func(extra string) string {
		return `{"backend": "counting", "input": [{"name": "INPUT0", "data_type": "TYPE_INT32", "dims": [1]}],
		  "output": [{"name": "OUTPUT0", "data_type": "TYPE_INT32", "dims": [1]}]` + extra + `}`
	}
	for _, tc := range []struct {
		name  string
		model string
		opts  *triton.LoadOptions
		code  triton.Code
		parts []string
	}{
		{"unknown model", "nope", nil, triton.NotFound, []string{"failed to load 'nope'", "no model folder"}},
		{"parent", "..", nil, triton.InvalidArgument, []string{"not a model name"}},
		{"path", "m/1", nil, triton.InvalidArgument, []string{"not a model name"}},
		{"escape", "../m", nil, triton.InvalidArgument, []string{"not a model name"}},
		{"hidden", ".git", nil, triton.InvalidArgument, []string{"not a model name"}},
		{"empty", "", nil, triton.InvalidArgument, []string{"empty model name"}},
		{"malformed json", "m", &triton.LoadOptions{Config: `{"backend": `}, triton.InvalidArgument, []string{"malformed config override"}},
		{"unknown json field", "m", &triton.LoadOptions{Config: `{"max_batch": 3}`}, triton.InvalidArgument, []string{"malformed config override"}},
		{"rename", "m", &triton.LoadOptions{Config: `{"name": "other"}`}, triton.InvalidArgument, []string{"cannot rename"}},
		{"files without config", "m", &triton.LoadOptions{Files: map[string][]byte{"1/weights.txt": []byte("w")}}, triton.InvalidArgument, []string{"need a config override"}},
		// As in Triton, a leading '/' is inside the model folder: the
		// folder then has no version.
		{"absolute file", "m", &triton.LoadOptions{Config: cfgJSON(""), Files: map[string][]byte{"/etc/passwd": []byte("x")}}, triton.InvalidArgument,
			[]string{"at least one version must be available"}},
		{"invalid override", "m", &triton.LoadOptions{Config: cfgJSON(`, "max_batch_size": -1`)}, triton.InvalidArgument, []string{"'max_batch_size' must be non-negative"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := srv.Load(ctx, tc.model, tc.opts)
			wantError(t, err, tc.code, tc.parts...)
		})
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(repo.dir), "evil")); err == nil {
		t.Fatal("a file override was written outside the repository")
	}
	err := srv.Unload(ctx, "nope", nil)
	wantError(t, err, triton.NotFound, "not loaded")
	err = srv.Unload(ctx, "../x", nil)
	wantError(t, err, triton.InvalidArgument, "not a model name")

	// Load and Unload need explicit mode.
	plain := newServer(t, map[string]string{"m/config.pbtxt": oneInput("counting", 1, ""), "m/1/x": ""}, triton.WithBackend("counting", c))
	wantError(t, plain.Load(ctx, "m", nil), triton.Unavailable, "explicit model load / unload is not allowed")
	wantError(t, plain.Unload(ctx, "m", nil), triton.Unavailable, "explicit model load / unload is not allowed")
}

// TestLoadFileOverridePlacement: file overrides that cannot be placed in
// a model folder fail the load as Triton fails it, with the code and text
// its client example simple_grpc_model_control.py checks (INTERNAL,
// "failed to poll from model repository"); the rule broken is the cause
// and is logged.
func TestLoadFileOverridePlacement(t *testing.T) {
	repo := newDiskRepo(t)
	repo.write("m/config.pbtxt", oneInput("counting", 1, ""))
	repo.write("m/1/x", "")
	core, logs := observer.New(zapcore.ErrorLevel)
	srv, err := triton.NewFromDir(repo.dir, explicit(triton.WithBackend("counting", &counting{}), triton.WithLogger(zap.New(core)))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	cfg := `{"backend": "counting", "input": [{"name": "INPUT0", "data_type": "TYPE_INT32", "dims": [1]}],
	  "output": [{"name": "OUTPUT0", "data_type": "TYPE_INT32", "dims": [1]}]}`
	const want = "failed to load 'm', failed to poll from model repository"
	for _, tc := range []struct {
		name  string
		files map[string][]byte
		cause string
	}{
		// The example's case: one path element longer than NAME_MAX.
		{"name too long", map[string][]byte{strings.Repeat("A", 256): []byte("a")}, "failed to open binary file for write m/AAA"},
		{"name too long in a version", map[string][]byte{"1/" + strings.Repeat("n", 256): []byte("x")}, "failed to open binary file for write m/1/nnn"},
		{"path too long", map[string][]byte{strings.Repeat("d/", 2100) + "x": []byte("x")}, ": File name too long"},
		{"file escapes", map[string][]byte{"../../evil": []byte("x")}, "Invalid file parameter 'file:../../evil' with normalized path '../../evil' must stay within model directory."},
		{"dotdot inside", map[string][]byte{"1/../../x": []byte("x")}, "Invalid file parameter 'file:1/../../x' with normalized path '../x' must stay within model directory."},
		{"the folder itself", map[string][]byte{"1/..": []byte("x")}, "failed to open binary file for write m: Is a directory"},
		{"NUL in a name", map[string][]byte{"1/a\x00b": []byte("x")}, "Invalid file parameter 'file:1/a\x00b': a file name cannot contain a NUL byte"},
		{"a file where a folder is", map[string][]byte{"1": []byte("x"), "1/model.onnx": []byte("y")}, "Invalid file parameter 'file:1/model.onnx', directory has been created as a file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs.TakeAll()
			err := srv.Load(context.Background(), "m", &triton.LoadOptions{Config: cfg, Files: tc.files})
			e, ok := errors.AsType[*triton.Error](err)
			if !ok {
				t.Fatalf("error %v (%T), want a *triton.Error", err, err)
			}
			if e.Code != triton.Internal || e.Message() != want {
				t.Errorf("got %v %q, want Internal %q", e.Code, e.Message(), want)
			}
			if cause := errors.Unwrap(e.Err); cause == nil || !strings.Contains(cause.Error(), tc.cause) {
				t.Errorf("cause %v, want one saying %q", cause, tc.cause)
			}
			entries := logs.TakeAll()
			if len(entries) != 1 || !strings.Contains(fmt.Sprint(entries[0].ContextMap()["error"]), tc.cause) {
				t.Errorf("logged %v, want one entry with the cause", entries)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(repo.dir), "evil")); err == nil {
		t.Fatal("a file override was written outside the repository")
	}
}

func TestLoadOverrides(t *testing.T) {
	repo := newDiskRepo(t)
	repo.write("m/config.pbtxt", oneInput("counting", 1, ""))
	repo.write("m/1/weights.txt", "from disk")
	c := &counting{}
	srv := serveExplicit(t, repo.dir, c, "m")
	ctx := context.Background()
	if got, _ := c.seen.Load("m"); got != "from disk" {
		t.Fatalf("backend saw %v", got)
	}
	override := `{"backend": "counting", "max_batch_size": 4,
	  "input": [{"name": "INPUT0", "data_type": "TYPE_INT32", "dims": [1]}],
	  "output": [{"name": "OUTPUT0", "data_type": "TYPE_INT32", "dims": [1]}]}`
	err := srv.Load(ctx, "m", &triton.LoadOptions{Config: override, Files: map[string][]byte{"3/weights.txt": []byte("from the request")}})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := c.seen.Load("m"); got != "from the request" {
		t.Errorf("backend saw %v, want the overriding file", got)
	}
	cfg, err := srv.ModelConfig("m", 0)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GetMaxBatchSize() != 4 {
		t.Errorf("config after the override: %v", cfg)
	}
	resp, err := srv.Infer(ctx, &triton.InferRequest{Model: "m", Inputs: []tensor.Tensor{int32s(t, "INPUT0", tensor.Shape{1, 1}, 0)}})
	if err != nil || resp.Version != 3 {
		t.Fatalf("override version: %v %v", resp, err)
	}
	// A load without override goes back to the repository's files.
	if err := srv.Load(ctx, "m", nil); err != nil {
		t.Fatal(err)
	}
	servesVersion(t, srv, "m", 1)
	if got, _ := c.seen.Load("m"); got != "from disk" {
		t.Errorf("after reloading from the repository the backend saw %v", got)
	}
}

func TestFailedReloadKeepsServing(t *testing.T) {
	repo := newDiskRepo(t)
	repo.write("m/config.pbtxt", oneInput("counting", 1, ""))
	repo.write("m/1/x", "")
	c := &counting{}
	srv := serveExplicit(t, repo.dir, c, "*")
	ctx := context.Background()
	// A config that fails after it was read (a validation error): the
	// error goes to the caller; the index lists what serves, READY, and
	// nothing beside it, and the server stays ready, as in Triton.
	repo.write("m/config.pbtxt", oneInput("counting", 1, "max_batch_size: -5"))
	err := srv.Load(ctx, "m", nil)
	wantError(t, err, triton.InvalidArgument, "'max_batch_size' must be non-negative")
	servesVersion(t, srv, "m", 1)
	if got := state(srv, "m"); !slices.Equal(got, []string{"1:READY"}) {
		t.Errorf("index after a failed reload: %v, want only the serving version", got)
	}
	if !srv.Ready(ctx) {
		t.Error("not ready while every model serves")
	}
	// A config that cannot be parsed: the same.
	repo.write("m/config.pbtxt", "not a config")
	wantError(t, srv.Load(ctx, "m", nil), triton.InvalidArgument, "config.pbtxt")
	if got := state(srv, "m"); !slices.Equal(got, []string{"1:READY"}) {
		t.Errorf("index after a reload with a broken config: %v", got)
	}
	// A new version that fails to load is listed UNAVAILABLE with its
	// reason beside the version that serves, and the server is not ready.
	repo.write("m/config.pbtxt", oneInput("counting", 1, `version_policy: { all: {} }`))
	repo.write("m/2/fail", "")
	wantError(t, srv.Load(ctx, "m", nil), triton.Internal, "version 2 refuses to load")
	servesVersion(t, srv, "m", 1)
	var reason string
	for _, st := range srv.Index(ctx) {
		if st.Name == "m" && st.Version == 2 {
			reason = st.State + " " + st.Reason
		}
	}
	if got := state(srv, "m"); !slices.Equal(got, []string{"1:READY", "2:UNAVAILABLE"}) || !strings.Contains(reason, "UNAVAILABLE") || !strings.Contains(reason, "refuses to load") {
		t.Errorf("index after a new version failed: %v (%s)", got, reason)
	}
	if srv.Ready(ctx) {
		t.Error("ready with a version that failed to load")
	}
	repo.remove("m/2/fail")
	repo.write("m/config.pbtxt", oneInput("counting", 2, ""))
	if err := srv.Load(ctx, "m", nil); err != nil {
		t.Fatal(err)
	}
	if !srv.Ready(ctx) {
		t.Error("not ready after a successful reload")
	}
	if got := state(srv, "m"); !slices.Equal(got, []string{"1:UNAVAILABLE", "2:READY"}) {
		t.Errorf("index after the reload to version 2: %v, want version 1 unloaded", got)
	}
}

// TestReloadUnderTraffic reloads a model again and again (changing its
// config and versions) while goroutines call it: not one request may fail.
func TestReloadUnderTraffic(t *testing.T) {
	repo := newDiskRepo(t)
	repo.write("m/config.pbtxt", oneInput("counting", 1, ""))
	repo.write("m/1/x", "")
	c := &counting{}
	srv := serveExplicit(t, repo.dir, c, "m")
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var ok, failed atomic.Int64
	for range 16 {
		wg.Go(func() {
			for ctx.Err() == nil {
				if _, err := srv.Infer(context.Background(), oneInputRequest(t, "m", "", 0)); err != nil {
					failed.Add(1)
					t.Error(err)
					return
				}
				ok.Add(1)
			}
		})
	}
	for i := range 30 {
		repo.write("m/config.pbtxt", oneInput("counting", 1+i%3, ""))
		if i%2 == 0 {
			repo.write(fmt.Sprintf("m/%d/x", i+2), "")
		}
		if err := srv.Load(context.Background(), "m", nil); err != nil {
			t.Fatal(err)
		}
	}
	stop()
	wg.Wait()
	if failed.Load() != 0 || ok.Load() == 0 {
		t.Fatalf("%d requests failed, %d succeeded during reloads", failed.Load(), ok.Load())
	}
	if c.loads.Load() != 31 {
		t.Errorf("%d loads, want 31", c.loads.Load())
	}
}

// TestUnloadDrains: a request running when Unload starts finishes; a new
// one is refused while the model unloads. In a synctest bubble, so that
// the test can wait for the unload to reach the running request.
func TestUnloadDrains(t *testing.T) { synctest.Test(t, testUnloadDrains) }

func testUnloadDrains(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	slow := backend.Func(func(ctx context.Context, b *backend.Batch) error {
		close(started)
		<-release
		return mirror(ctx, b)
	})
	files := map[string]string{"m/config.pbtxt": oneInput("slow", 1, ""), "m/1/x": ""}
	srv := newServer(t, files, explicit(triton.WithBackend("slow", slow), triton.WithStartupModels("m"))...)
	running := goInfer(srv, context.Background(), oneInputRequest(t, "m", "running", 5))
	<-started
	unloaded := make(chan error, 1)
	go func() { unloaded <- srv.Unload(context.Background(), "m", nil) }()
	synctest.Wait() // Unload waits for the running request
	if got := state(srv, "m"); !slices.Equal(got, []string{"1:UNLOADING"}) {
		t.Fatalf("while unloading: %v, want 1:UNLOADING", got)
	}
	select {
	case err := <-unloaded:
		t.Fatalf("Unload returned (%v) while a request was running", err)
	default:
	}
	_, err := srv.Infer(context.Background(), oneInputRequest(t, "m", "new", 1))
	wantError(t, err, triton.Unavailable, "being unloaded")
	if srv.ModelReady(context.Background(), "m", 0) {
		t.Error("an unloading model reported ready")
	}
	close(release)
	if r := <-running; r.err != nil {
		t.Fatalf("the in-flight request failed: %v", r.err)
	}
	if err := <-unloaded; err != nil {
		t.Fatal(err)
	}
}

func TestConcurrentLoadUnload(t *testing.T) {
	repo := newDiskRepo(t)
	repo.write("m/config.pbtxt", oneInput("counting", 1, ""))
	repo.write("m/1/x", "")
	c := &counting{}
	srv := serveExplicit(t, repo.dir, c)
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			if i%2 == 0 {
				_ = srv.Load(context.Background(), "m", nil)
			} else {
				_ = srv.Unload(context.Background(), "m", nil)
			}
		})
	}
	wg.Wait()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if l, cl := c.loads.Load(), c.closes.Load(); l != cl {
		t.Errorf("%d models loaded, %d closed", l, cl)
	}
}

// TestCloseDuringLoad: a load blocked in the backend is cancelled by Close,
// and nothing it made outlives the server.
func TestCloseDuringLoad(t *testing.T) {
	entered := make(chan struct{})
	blocking := &blockingLoad{entered: entered}
	files := map[string]string{"m/config.pbtxt": oneInput("blocking", 1, ""), "m/1/x": ""}
	srv, err := triton.New(append([]triton.Option{triton.WithRepository(mapFS(files))}, explicit(triton.WithBackend("blocking", blocking))...)...)
	if err != nil {
		t.Fatal(err)
	}
	loaded := make(chan error, 1)
	go func() { loaded <- srv.Load(context.Background(), "m", nil) }()
	<-entered
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	err = <-loaded
	if c := triton.CodeOf(err); c != triton.Unavailable && c != triton.Cancelled {
		t.Fatalf("load during close: %v", err)
	}
}

type blockingLoad struct{ entered chan struct{} }

func (b *blockingLoad) Load(ctx context.Context, _ *backend.ModelSpec) (backend.Model, error) {
	close(b.entered)
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestPollMode runs in a synctest bubble: the poll interval passes on the
// bubble's clock, and the test changes the repository between polls, half
// an interval away from them, so that each time.Sleep(poll) lets exactly
// one poll run to its end.
func TestPollMode(t *testing.T) { synctest.Test(t, testPollMode) }

func testPollMode(t *testing.T) {
	const poll = 10 * time.Millisecond
	repo := newDiskRepo(t)
	repo.write("m/config.pbtxt", oneInput("counting", 1, ""))
	repo.write("m/1/x", "")
	c := &counting{}
	srv, err := triton.NewFromDir(repo.dir, triton.WithBackend("counting", c),
		triton.WithModelControl(triton.ModelControl{Mode: triton.ControlPoll, PollInterval: poll}))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	servesVersion(t, srv, "m", 1)
	ctx := context.Background()
	time.Sleep(poll / 2) // the polls come at poll, 2·poll, …; the test acts in between

	// A new model folder being written: its contents change at every poll
	// for a while; it must not load until they settle, and then load at
	// the first poll that sees them unchanged.
	repo.write("n/config.pbtxt", oneInput("counting", 1, ""))
	for i := range 5 {
		repo.write("n/1/weights.txt", strings.Repeat("w", i))
		time.Sleep(poll)
		if _, loaded := c.seen.Load("n"); loaded || srv.ModelReady(ctx, "n", 1) {
			t.Fatalf("poll %d: a model folder still being written was loaded", i+1)
		}
	}
	time.Sleep(poll)
	if !srv.ModelReady(ctx, "n", 1) {
		t.Fatalf("the new model did not load once its files stopped changing: %v", state(srv, "n"))
	}
	if got, _ := c.seen.Load("n"); got != "wwww" {
		t.Errorf("the new model loaded weights %q, want the last ones written", got)
	}

	// A new version: reloaded, once it has been seen unchanged.
	repo.write("m/2/x", "")
	time.Sleep(poll)
	servesVersion(t, srv, "m", 1)
	time.Sleep(poll)
	servesVersion(t, srv, "m", 2)
	// A broken config: the old version keeps serving, READY in the index
	// with nothing beside it (as in Triton); version 1, dropped by the
	// reload to 2, is listed unloaded.
	repo.write("m/config.pbtxt", "this is not a config")
	time.Sleep(8 * poll)
	servesVersion(t, srv, "m", 2)
	if got := state(srv, "m"); !slices.Equal(got, []string{"1:UNAVAILABLE", "2:READY"}) {
		t.Errorf("index after the failed reload: %v", got)
	}
	// A removed model: unloaded once it has been missing at two polls.
	repo.remove("n")
	time.Sleep(poll)
	if !srv.ModelReady(ctx, "n", 1) {
		t.Fatal("the removed model was unloaded at the first poll that missed it")
	}
	time.Sleep(poll)
	if srv.ModelReady(ctx, "n", 0) {
		t.Fatalf("the removed model is still ready after two polls missed it: %v", state(srv, "n"))
	}
	_, err = srv.Infer(ctx, oneInputRequest(t, "n", "", 0))
	wantError(t, err, triton.NotFound, "has no available versions")
	if n := c.loads.Load(); n != 3 {
		t.Errorf("%d loads, want 3 (m, n, m version 2)", n)
	}
}

// TestDrainPeriod runs in a synctest bubble: the drain period passes on
// the bubble's clock.
func TestDrainPeriod(t *testing.T) { synctest.Test(t, testDrainPeriod) }

func testDrainPeriod(t *testing.T) {
	files := map[string]string{"m/config.pbtxt": oneInput("gofunc", 1, ""), "m/1/x": ""}
	srv, err := triton.New(triton.WithRepository(mapFS(files)), triton.WithBackend("gofunc", mirror), triton.WithDrainPeriod(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	begun := time.Now()
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(context.Background()) }()
	synctest.Wait() // Shutdown waits for the drain period
	if srv.Ready(context.Background()) {
		t.Error("ready while draining")
	}
	if !srv.Live() {
		t.Error("not live while draining")
	}
	if _, err := srv.Infer(context.Background(), oneInputRequest(t, "m", "", 1)); err != nil {
		t.Errorf("request during the drain period: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if d := time.Since(begun); d != 100*time.Millisecond {
		t.Errorf("Shutdown took %v, want the drain period, 100ms", d)
	}
	_, err = srv.Infer(context.Background(), oneInputRequest(t, "m", "", 1))
	wantError(t, err, triton.Unavailable, "server closed")
}

// TestDrain runs in a synctest bubble: after Drain the server is not ready
// and still serves; Shutdown then closes it without waiting the drain
// period again, on the bubble's clock.
func TestDrain(t *testing.T) { synctest.Test(t, testDrain) }

func testDrain(t *testing.T) {
	files := map[string]string{"m/config.pbtxt": oneInput("gofunc", 1, ""), "m/1/x": ""}
	srv, err := triton.New(triton.WithRepository(mapFS(files)), triton.WithBackend("gofunc", mirror), triton.WithDrainPeriod(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	srv.Drain()
	if srv.Ready(ctx) || !srv.Live() {
		t.Errorf("after Drain: ready %v, live %v; want not ready and live", srv.Ready(ctx), srv.Live())
	}
	if _, err := srv.Infer(ctx, oneInputRequest(t, "m", "", 1)); err != nil {
		t.Errorf("request after Drain: %v", err)
	}
	begun := time.Now()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(begun); d != 0 {
		t.Errorf("Shutdown after Drain took %v, want no second drain period", d)
	}
	_, err = srv.Infer(ctx, oneInputRequest(t, "m", "", 1))
	wantError(t, err, triton.Unavailable, "server closed")
}

func TestWarmup(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{} // instance/sample → executions
	warmed := &perInstance{exec: func(inst string, b *backend.Batch) error {
		r := b.Requests[0]
		mu.Lock()
		seen[inst+"/"+r.ID]++
		mu.Unlock()
		in, _ := r.Input("INPUT0")
		if v, _ := tensor.View[int32](in); r.ID == "warmup from-file" && (len(v) != 2 || v[0] != 7 || v[1] != 7) {
			return fmt.Errorf("file data %v", v)
		}
		if r.ID == "warmup bad" {
			return fmt.Errorf("this sample breaks the model")
		}
		out := in
		out.Name = "OUTPUT0"
		r.SetOutput(out)
		return nil
	}}
	cfg := func(extra string) string {
		return `backend: "warmed" max_batch_size: 4
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
instance_group [ { count: 2 kind: KIND_CPU } ]
model_warmup [
  { name: "zeros" batch_size: 2 count: 3 inputs { key: "INPUT0" value: { data_type: TYPE_INT32 dims: [ 1 ] zero_data: true } } },
  { name: "from-file" batch_size: 2 inputs { key: "INPUT0" value: { data_type: TYPE_INT32 dims: [ 1 ] input_data_file: "seven.bin" } } }
` + extra + `]`
	}
	seven := string([]byte{7, 0, 0, 0})
	files := map[string]string{"m/config.pbtxt": cfg(""), "m/1/x": "", "m/warmup/seven.bin": seven}
	srv := newServer(t, files, triton.WithBackend("warmed", warmed))
	mu.Lock()
	for _, inst := range []string{"m_0_0", "m_0_1"} {
		if seen[inst+"/warmup zeros"] != 3 || seen[inst+"/warmup from-file"] != 1 {
			t.Errorf("instance %s warm-up runs: %v", inst, seen)
		}
	}
	mu.Unlock()
	if _, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "m", Inputs: []tensor.Tensor{int32s(t, "INPUT0", tensor.Shape{1, 1}, 1)}}); err != nil {
		t.Fatal(err)
	}

	bad := map[string]string{"m/config.pbtxt": cfg(`, { name: "bad" batch_size: 1 inputs { key: "INPUT0" value: { data_type: TYPE_INT32 dims: [ 1 ] zero_data: true } } }`), "m/1/x": "", "m/warmup/seven.bin": seven}
	_, err := triton.New(triton.WithRepository(mapFS(bad)), triton.WithBackend("warmed", warmed))
	wantError(t, err, triton.Internal, "warm-up sample 'bad' failed", "this sample breaks the model")
	missing := map[string]string{"m/config.pbtxt": cfg(""), "m/1/x": ""}
	_, err = triton.New(triton.WithRepository(mapFS(missing)), triton.WithBackend("warmed", warmed))
	wantError(t, err, triton.InvalidArgument, "model_warmup", "seven.bin")
}

// perInstance is a backend whose instances know their names.
type perInstance struct {
	exec func(inst string, b *backend.Batch) error
}

func (p *perInstance) Load(context.Context, *backend.ModelSpec) (backend.Model, error) { return p, nil }
func (p *perInstance) NewInstance(_ context.Context, s backend.InstanceSpec) (backend.Instance, error) {
	return backend.Func(func(_ context.Context, b *backend.Batch) error { return p.exec(s.Name, b) }), nil
}
func (p *perInstance) Close() error { return nil }

// TestCloseRetiringVersion: requests queued in a version retiring after a
// reload drain gracefully under Shutdown, and are answered at once with
// Unavailable under Close, which still waits for the execution running.
func TestCloseRetiringVersion(t *testing.T) {
	for _, c := range []struct {
		name     string
		batching string // the model's dynamic_batching, or none
		shutdown bool
	}{
		{"close, waiting for the instance", "", false},
		{"close, queued in the batcher", "dynamic_batching { }", false},
		{"shutdown, waiting for the instance", "", true},
		{"shutdown, queued in the batcher", "dynamic_batching { }", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testCloseRetiringVersion(t, c.batching, c.shutdown) })
		})
	}
}

func testCloseRetiringVersion(t *testing.T, batching string, shutdown bool) {
	g := newGated(true)
	srv, err := triton.New(append(explicit(triton.WithBackend("gated", g), triton.WithStartupModels("m")),
		triton.WithRepository(mapFS(batchingModel(1, batching))))...)
	if err != nil {
		t.Fatal(err)
	}
	// One request runs (held by the backend), two queue behind it.
	first := occupy(t, srv, g)
	queued := []chan result{goInfer(srv, context.Background(), rowsRequest(t, "a", 1, 2, 10)), goInfer(srv, context.Background(), rowsRequest(t, "b", 1, 2, 20))}
	synctest.Wait()
	// A reload publishes a new version; the old one retires with them.
	override := `{"backend": "gated", "max_batch_size": 8, "input": [{"name": "INPUT0", "data_type": "TYPE_INT32", "dims": [-1]}], "output": [{"name": "OUTPUT0", "data_type": "TYPE_INT32", "dims": [-1]}]}`
	if err := srv.Load(context.Background(), "m", &triton.LoadOptions{Config: override}); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() {
		if shutdown {
			stopped <- srv.Shutdown(context.Background())
		} else {
			stopped <- srv.Close()
		}
	}()
	synctest.Wait()
	if len(stopped) > 0 {
		t.Fatal("the server stopped while a request was running")
	}
	if shutdown {
		for _, ch := range queued {
			if len(ch) > 0 {
				t.Fatalf("Shutdown answered a queued request of the retiring version: %v", (<-ch).err)
			}
		}
		for range 2 {
			g.release <- struct{}{} // the first request, then the queued ones
		}
		if !strings.Contains(batching, "dynamic") {
			g.release <- struct{}{} // one at a time without a batcher
		}
	} else {
		for _, ch := range queued {
			select {
			case r := <-ch:
				wantError(t, r.err, triton.Unavailable, "server closed")
			default:
				t.Fatal("Close left a request queued in the retiring version waiting")
			}
		}
		g.release <- struct{}{}
	}
	if r := <-first; r.err != nil {
		t.Fatalf("the running request: %v", r.err)
	}
	if shutdown {
		for _, ch := range queued {
			if r := <-ch; r.err != nil {
				t.Fatalf("a request drained by Shutdown: %v", r.err)
			}
		}
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}

// gatedLoad is a backend whose Load waits for release (or its ctx), then
// serves like Mirror.
type gatedLoad struct{ release chan struct{} }

func (g *gatedLoad) Load(ctx context.Context, spec *backend.ModelSpec) (backend.Model, error) {
	select {
	case <-g.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return mirror.Load(ctx, spec)
}

// TestReadyDuringLoads runs in a synctest bubble, whose Wait returns once
// a load waits in its backend or an unload waits for a request: the
// server's readiness does not flap while models load, reload and unload
// in explicit mode (Triton's server#7014).
func TestReadyDuringLoads(t *testing.T) { synctest.Test(t, testReadyDuringLoads) }

func testReadyDuringLoads(t *testing.T) {
	gate := &gatedLoad{release: make(chan struct{})}
	executing, finish := make(chan struct{}), make(chan struct{})
	held := backend.Func(func(ctx context.Context, b *backend.Batch) error {
		close(executing)
		<-finish
		return mirror(ctx, b)
	})
	srv := newServer(t, map[string]string{
		"a/config.pbtxt": oneInput("mirror", 1, ""), "a/1/m": "",
		"b/config.pbtxt": oneInput("gated", 1, ""), "b/1/m": "",
		"c/config.pbtxt": oneInput("held", 1, ""), "c/1/m": "",
	}, append(explicit(triton.WithBackend("mirror", mirror), triton.WithBackend("gated", gate), triton.WithBackend("held", held)),
		triton.WithStartupModels("a", "c"))...)
	ctx := context.Background()
	if !srv.Ready(ctx) {
		t.Fatal("not ready after start-up")
	}
	load := func(opts *triton.LoadOptions) chan error {
		done := make(chan error, 1)
		go func() { done <- srv.Load(ctx, "b", opts) }()
		synctest.Wait() // the load waits in the backend
		return done
	}
	for _, what := range []string{"a first load", "a reload"} {
		var opts *triton.LoadOptions
		if what == "a reload" { // a new config: an unchanged folder would not be loaded again
			opts = &triton.LoadOptions{Config: `{"backend": "gated", "max_batch_size": 4}`}
		}
		done := load(opts)
		if !srv.Ready(ctx) {
			t.Errorf("not ready during %s of b", what)
		}
		select {
		case gate.release <- struct{}{}:
		case err := <-done:
			t.Fatalf("%s of b ended before its backend's Load: %v", what, err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if !srv.Ready(ctx) || !srv.ModelReady(ctx, "b", 1) {
			t.Fatalf("after %s of b: server ready %v, b ready %v", what, srv.Ready(ctx), srv.ModelReady(ctx, "b", 1))
		}
	}

	// An unload waits for c's request in flight; the server stays ready.
	inferred := make(chan error, 1)
	go func() {
		_, err := srv.Infer(ctx, oneInputRequest(t, "c", "", 1))
		inferred <- err
	}()
	<-executing
	unloaded := make(chan error, 1)
	go func() { unloaded <- srv.Unload(ctx, "c", nil) }()
	synctest.Wait() // the unload waits for the request
	if !srv.Ready(ctx) {
		t.Error("not ready while c is unloaded")
	}
	close(finish)
	if err := <-inferred; err != nil {
		t.Fatal(err)
	}
	if err := <-unloaded; err != nil {
		t.Fatal(err)
	}
	if !srv.Ready(ctx) || srv.ModelReady(ctx, "c", 1) {
		t.Fatalf("after c's unload: server ready %v, c ready %v", srv.Ready(ctx), srv.ModelReady(ctx, "c", 1))
	}
}
