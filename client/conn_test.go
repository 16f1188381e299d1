package client_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/client"
	"github.com/triton-go/triton/internal/testenv"
	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/sysshm"
	"github.com/triton-go/triton/tensor"
)

// TestConn runs one table of cases against every target: client.Local on
// an in-process server; client.NewHTTP and client.NewGRPC against the
// httpapi and grpcapi adapters serving that same server on loopback ports;
// and both clients against the real cmd/tritonserver binary, built by the
// test and serving the same repository (not with -short). Cases that need
// a backend the binary does not compile in are skipped there; cases with
// ONNX models need the ONNX Runtime library.
func TestConn(t *testing.T) {
	dir, startup := writeRepo(t)
	obs := observer{make(chan triton.RequestStats, 256)}
	srv := newServer(t, dir, startup, obs)
	shm := sysshm.NewRegistry()
	t.Cleanup(func() { _ = shm.Close() })
	targets := []target{localTarget(srv, obs), httpTarget(t, srv, shm, obs), grpcTarget(t, srv, shm, obs)}
	if testing.Short() {
		t.Log("-short: not running against cmd/tritonserver")
	} else {
		targets = append(targets, binaryTargets(t, dir, startup)...)
	}
	for _, tg := range targets {
		t.Run(tg.name, func(t *testing.T) {
			conn := tg.dial(t)
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					if c.needs&needTestBackend != 0 && tg.binary {
						t.Skip("needs a test-only Go backend, which tritonserver does not compile in")
					}
					if c.needs&needORT != 0 {
						testenv.NeedLibrary(t)
					}
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					defer cancel()
					c.run(&env{T: t, conn: conn, tg: tg, ctx: ctx})
				})
			}
		})
	}
}

// env is what a case runs with.
type env struct {
	*testing.T
	conn client.Conn
	tg   target
	ctx  context.Context
}

// dial opens another connection to the target, with opts.
func (e *env) dial(opts ...client.Option) client.Conn { return e.tg.dial(e.T, opts...) }

// infer runs req and fails the test on an error.
func (e *env) infer(conn client.Conn, req *triton.InferRequest) *triton.InferResponse {
	e.Helper()
	resp, err := conn.Infer(e.ctx, req)
	if err != nil {
		e.Fatalf("Infer: %v", err)
	}
	return resp
}

type need uint8

const (
	needTestBackend need = 1 << iota // a Go backend of this test only: in-process servers
	needORT                          // the ONNX Runtime library
)

var cases = []struct {
	name  string
	needs need
	run   func(e *env)
}{
	{"infer/INT32", needTestBackend, func(e *env) {
		resp := e.infer(e.conn, simpleRequest(e, 2))
		wantInt32s(e, resp, "OUTPUT0", tensor.Shape{2, 16}, seq(32, func(i int) int32 { return int32(i) + 1 }))
		wantInt32s(e, resp, "OUTPUT1", tensor.Shape{2, 16}, seq(32, func(i int) int32 { return int32(i) - 1 }))
	}},
	{"infer/INT32 ONNX", needORT, func(e *env) {
		in := int32s(e, "INPUT0", tensor.Shape{2, 3}, -1, 0, 1, math.MaxInt32, math.MinInt32, 7)
		resp := e.infer(e.conn, &triton.InferRequest{Model: "identity_int32", Inputs: []tensor.Tensor{in}})
		wantInt32s(e, resp, "OUTPUT0", tensor.Shape{2, 3}, []int32{-1, 0, 1, math.MaxInt32, math.MinInt32, 7})
	}},
	{"infer/FP32", 0, func(e *env) {
		imgs := images(1)
		resp := e.infer(e.conn, pixelsRequest(e, "pixels", imgs))
		wantPixels(e, resp, imgs)
	}},
	{"infer/BYTES", 0, func(e *env) {
		in := texts(e, "hello", "", "a\x00b\xff", strings.Repeat("xy", 1000))
		resp := e.infer(e.conn, &triton.InferRequest{Model: "text_reverse", Inputs: []tensor.Tensor{in}})
		wantStrings(e, resp, "REVERSED", "olleh", "", "\xffb\x00a", strings.Repeat("yx", 1000))
	}},
	{"batch", 0, func(e *env) {
		imgs := images(3)
		resp := e.infer(e.conn, pixelsRequest(e, "pixels", imgs))
		wantPixels(e, resp, imgs)
	}},
	{"outputs subset", needTestBackend, func(e *env) {
		req := simpleRequest(e, 1)
		req.Outputs = []string{"OUTPUT1"}
		resp := e.infer(e.conn, req)
		if len(resp.Outputs) != 1 || resp.Outputs[0].Name != "OUTPUT1" {
			e.Fatalf("outputs %v, want only OUTPUT1", names(resp))
		}
		wantInt32s(e, resp, "OUTPUT1", tensor.Shape{1, 16}, seq(16, func(i int) int32 { return int32(i) - 1 }))
	}},
	{"outputs subset ONNX", needORT, func(e *env) {
		x, y := make([]float32, 16), make([]float32, 16)
		for i := range x {
			x[i], y[i] = float32(i)*1.5, 0.25
		}
		req := &triton.InferRequest{Model: "add_sub", Outputs: []string{"OUTPUT1"}, Inputs: []tensor.Tensor{
			must(tensor.From("INPUT0", tensor.Shape{1, 16}, x)), must(tensor.From("INPUT1", tensor.Shape{1, 16}, y))}}
		resp := e.infer(e.conn, req)
		if len(resp.Outputs) != 1 {
			e.Fatalf("outputs %v, want only OUTPUT1", names(resp))
		}
		got := view[float32](e, resp, "OUTPUT1", tensor.Shape{1, 16})
		for i := range got {
			if want := x[i] - y[i]; got[i] != want {
				e.Fatalf("OUTPUT1[%d] = %v, want %v", i, got[i], want)
			}
		}
	}},
	{"request ID", 0, func(e *env) {
		resp := e.infer(e.conn, &triton.InferRequest{Model: "text_reverse", ID: "req-42", Inputs: []tensor.Tensor{texts(e, "x")}})
		if resp.ID != "req-42" || resp.Model != "text_reverse" || resp.Version != 1 {
			e.Errorf("response id %q model %q version %d, want req-42 text_reverse 1", resp.ID, resp.Model, resp.Version)
		}
		resp = e.infer(e.conn, &triton.InferRequest{Model: "text_reverse", Inputs: []tensor.Tensor{texts(e, "x")}})
		if resp.ID != "" {
			e.Errorf("response id %q for a request without one", resp.ID)
		}
	}},
	{"version", 0, func(e *env) {
		resp := e.infer(e.conn, &triton.InferRequest{Model: "text_reverse", Version: 1, Inputs: []tensor.Tensor{texts(e, "ab")}})
		wantStrings(e, resp, "REVERSED", "ba")
		_, err := e.conn.Infer(e.ctx, &triton.InferRequest{Model: "text_reverse", Version: 9, Inputs: []tensor.Tensor{texts(e, "ab")}})
		wantError(e, err, triton.NotFound, "text_reverse")
	}},
	{"parameters", needTestBackend, func(e *env) {
		params := map[string]any{"s": "x y", "i": int64(-3), "b": true, "f": 2.5, "whole": 2.0, "big": int64(math.MaxInt64)}
		resp := e.infer(e.conn, &triton.InferRequest{Model: "params", Parameters: params,
			Inputs: []tensor.Tensor{int32s(e, "INPUT0", tensor.Shape{1}, 5)}})
		if len(resp.Parameters) != len(params) {
			e.Errorf("response parameters %v, want %v", resp.Parameters, params)
		}
		for k, v := range params {
			if got := resp.Parameters[k]; got != v {
				e.Errorf("response parameter %q = %v (%T), want %v (%T)", k, got, got, v, v)
			}
		}
	}},
	{"reserved parameter", 0, func(e *env) {
		if e.tg.kind == "local" {
			e.Skip("the in-process server hands every parameter to the model")
		}
		_, err := e.conn.Infer(e.ctx, &triton.InferRequest{Model: "text_reverse", Parameters: map[string]any{"priority": int64(1)},
			Inputs: []tensor.Tensor{texts(e, "x")}})
		wantError(e, err, triton.InvalidArgument, "'priority' is reserved")
		_, err = e.conn.Infer(e.ctx, &triton.InferRequest{Model: "text_reverse", Parameters: map[string]any{"n": 3},
			Inputs: []tensor.Tensor{texts(e, "x")}})
		wantError(e, err, triton.InvalidArgument, "unsupported type int")
	}},
	{"unknown model", 0, func(e *env) {
		req := &triton.InferRequest{Model: "no_such", ID: "r1", Inputs: []tensor.Tensor{texts(e, "x")}}
		_, err := e.conn.Infer(e.ctx, req)
		wantError(e, err, triton.InvalidArgument, "Request for unknown model: 'no_such' is not found")
		if e2, ok := errors.AsType[*triton.Error](err); !ok || e2.RequestID != "r1" {
			e.Errorf("error %#v: want a *triton.Error with request ID r1", err)
		}
		for _, err := range e.conn.InferStream(e.ctx, req) {
			wantError(e, err, triton.InvalidArgument, "unknown model")
		}
		_, err = e.conn.ModelMetadata(e.ctx, "no_such", 0)
		wantError(e, err, triton.InvalidArgument, "unknown model")
	}},
	{"bad input", 0, func(e *env) {
		_, err := e.conn.Infer(e.ctx, &triton.InferRequest{Model: "text_reverse",
			Inputs: []tensor.Tensor{int32s(e, "TEXT", tensor.Shape{1}, 1)}})
		wantError(e, err, triton.InvalidArgument, "TEXT")
		_, err = e.conn.Infer(e.ctx, &triton.InferRequest{Model: "text_reverse",
			Inputs: []tensor.Tensor{texts(e, "x")}, Outputs: []string{"NOPE"}})
		wantError(e, err, triton.InvalidArgument, "NOPE")
	}},
	{"deadline", 0, func(e *env) {
		// pixels_wait keeps a lone request in its queue for a minute.
		ctx, cancel := context.WithTimeout(e.ctx, 300*time.Millisecond)
		defer cancel()
		start := time.Now()
		req := pixelsRequest(e, "pixels_wait", images(1))
		req.ID = "deadline-" + e.tg.name
		_, err := e.conn.Infer(ctx, req)
		wantError(e, err, triton.DeadlineExceeded)
		if !errors.Is(err, context.DeadlineExceeded) {
			e.Errorf("error %v does not wrap context.DeadlineExceeded", err)
		}
		if d := time.Since(start); d > 20*time.Second {
			e.Errorf("Infer returned after %v", d)
		}
		if e.tg.obs.ch != nil {
			// The server let the request go (gRPC: its deadline; HTTP: the
			// connection closing), long before the queue delay.
			if r := e.tg.obs.saw(e, req.ID); r != triton.FailureCanceled {
				e.Errorf("the server's failure reason: %v, want CANCELED", r)
			}
		}
	}},
	{"cancellation", 0, func(e *env) {
		ctx, cancel := context.WithCancel(e.ctx)
		defer cancel()
		stop := time.AfterFunc(200*time.Millisecond, cancel)
		defer stop.Stop()
		req := pixelsRequest(e, "pixels_wait", images(1))
		req.ID = "cancel-" + e.tg.name
		_, err := e.conn.Infer(ctx, req)
		wantError(e, err, triton.Cancelled)
		if e.tg.obs.ch != nil {
			// The server cancelled the request in its queue.
			if r := e.tg.obs.saw(e, req.ID); r != triton.FailureCanceled {
				e.Errorf("the server's failure reason: %v, want CANCELED", r)
			}
		}
	}},
	{"queue timeout", 0, func(e *env) {
		// The request's Timeout is Triton's "timeout" parameter: the queue
		// policy rejects the request once it has waited that long.
		req := pixelsRequest(e, "pixels_wait", images(1))
		req.Timeout = 50 * time.Millisecond
		_, err := e.conn.Infer(e.ctx, req)
		wantError(e, err, triton.Unavailable, "Request timeout expired")
	}},
	{"stream/one response", 0, func(e *env) {
		var got []*triton.InferResponse
		for resp, err := range e.conn.InferStream(e.ctx, &triton.InferRequest{Model: "text_reverse", Inputs: []tensor.Tensor{texts(e, "abc")}}) {
			if err != nil {
				e.Fatal(err)
			}
			got = append(got, resp)
		}
		if len(got) != 1 || !got[0].Final {
			e.Fatalf("%d responses (final: %v), want one final", len(got), len(got) > 0 && got[0].Final)
		}
		wantStrings(e, got[0], "REVERSED", "cba")
	}},
	{"stream/decoupled", 0, func(e *env) {
		req := repeatRequest(e, []int32{10, 20, 30}, []uint32{0, 0, 0})
		var outs []int32
		var idx []uint32
		for resp, err := range e.conn.InferStream(e.ctx, req) {
			if e.tg.kind == "http" {
				wantError(e, err, triton.Unsupported, "decoupled")
				return
			}
			if err != nil {
				e.Fatal(err)
			}
			outs = append(outs, view[int32](e, resp, "OUT", tensor.Shape{1})...)
			idx = append(idx, view[uint32](e, resp, "IDX", tensor.Shape{1})...)
		}
		if e.tg.kind == "http" {
			e.Fatal("no error for a decoupled model over HTTP")
		}
		if !slices.Equal(outs, []int32{10, 20, 30}) || !slices.Equal(idx, []uint32{0, 1, 2}) {
			e.Errorf("OUT %v IDX %v, want [10 20 30] [0 1 2]", outs, idx)
		}
	}},
	{"stream/cancellation", 0, func(e *env) {
		// The second response comes after a minute: cancel after the first.
		ctx, cancel := context.WithCancel(e.ctx)
		defer cancel()
		n := 0
		var last error
		for resp, err := range e.conn.InferStream(ctx, repeatRequest(e, []int32{1, 2}, []uint32{0, 60000})) {
			if err != nil {
				last = err
				continue
			}
			n++
			if resp.Final {
				e.Error("a final response before the second")
			}
			cancel()
		}
		if e.tg.kind == "http" {
			wantError(e, last, triton.Unsupported)
			return
		}
		if n != 1 {
			e.Errorf("%d responses, want 1", n)
		}
		wantError(e, last, triton.Cancelled)
	}},
	{"stream/break", 0, func(e *env) {
		if e.tg.kind == "http" {
			e.Skip("HTTP does not stream")
		}
		start := time.Now()
		for _, err := range e.conn.InferStream(e.ctx, repeatRequest(e, []int32{1, 2}, []uint32{0, 60000})) {
			if err != nil {
				e.Fatal(err)
			}
			break // stops the request; the iterator must return at once
		}
		if d := time.Since(start); d > 20*time.Second {
			e.Errorf("the stream ended %v after the consumer stopped", d)
		}
	}},
	{"health", 0, func(e *env) {
		for _, c := range []struct {
			what string
			call func() (bool, error)
			want bool
		}{
			{"ServerLive", func() (bool, error) { return e.conn.ServerLive(e.ctx) }, true},
			{"ServerReady", func() (bool, error) { return e.conn.ServerReady(e.ctx) }, true},
			{"ModelReady(text_reverse)", func() (bool, error) { return e.conn.ModelReady(e.ctx, "text_reverse", 0) }, true},
			{"ModelReady(text_reverse, 1)", func() (bool, error) { return e.conn.ModelReady(e.ctx, "text_reverse", 1) }, true},
			{"ModelReady(text_reverse, 7)", func() (bool, error) { return e.conn.ModelReady(e.ctx, "text_reverse", 7) }, false},
			{"ModelReady(no_such)", func() (bool, error) { return e.conn.ModelReady(e.ctx, "no_such", 0) }, false},
		} {
			got, err := c.call()
			if err != nil || got != c.want {
				e.Errorf("%s = %v, %v; want %v", c.what, got, err, c.want)
			}
		}
	}},
	{"metadata", 0, func(e *env) {
		sm, err := e.conn.ServerMetadata(e.ctx)
		if err != nil {
			e.Fatal(err)
		}
		if sm.Name != "triton" || sm.Version == "" {
			e.Errorf("server metadata %+v", sm)
		}
		for _, ext := range []string{"model_repository", "binary_tensor_data", "statistics", "system_shared_memory"} {
			if !slices.Contains(sm.Extensions, ext) {
				e.Errorf("extensions %v lack %s", sm.Extensions, ext)
			}
		}
		md, err := e.conn.ModelMetadata(e.ctx, "pixels", 0)
		if err != nil {
			e.Fatal(err)
		}
		want := triton.ModelMetadata{Name: "pixels", Versions: []string{"1"}, Platform: "pixels",
			Inputs:  []triton.TensorMetadata{{Name: "IMAGE", DataType: "UINT8", Shape: []int64{-1, 28, 28}}},
			Outputs: []triton.TensorMetadata{{Name: "PIXELS", DataType: "FP32", Shape: []int64{-1, 1, 28, 28}}}}
		if fmt.Sprint(md) != fmt.Sprint(want) {
			e.Errorf("metadata\n%+v, want\n%+v", md, want)
		}
		md, err = e.conn.ModelMetadata(e.ctx, "text_reverse", 1)
		if err != nil {
			e.Fatal(err)
		}
		if md.Name != "text_reverse" || len(md.Inputs) != 1 || md.Inputs[0].DataType != "BYTES" || fmt.Sprint(md.Inputs[0].Shape) != "[-1]" {
			e.Errorf("metadata of text_reverse version 1: %+v", md)
		}
	}},
	{"config", 0, func(e *env) {
		cfg, err := e.conn.ModelConfig(e.ctx, "pixels_wait", 0)
		if err != nil {
			e.Fatal(err)
		}
		if cfg.GetName() != "pixels_wait" || cfg.GetBackend() != "pixels" || cfg.GetMaxBatchSize() != 8 {
			e.Errorf("config name %q backend %q max_batch_size %d", cfg.GetName(), cfg.GetBackend(), cfg.GetMaxBatchSize())
		}
		if in := cfg.GetInput(); len(in) != 1 || in[0].GetName() != "IMAGE" || in[0].GetDataType() != modelconfig.DataType_TYPE_UINT8 || fmt.Sprint(in[0].GetDims()) != "[28 28]" {
			e.Errorf("config input %v", in)
		}
		db := cfg.GetDynamicBatching()
		if db.GetMaxQueueDelayMicroseconds() != 60000000 || !db.GetDefaultQueuePolicy().GetAllowTimeoutOverride() {
			e.Errorf("config dynamic_batching %v", db)
		}
		_, err = e.conn.ModelConfig(e.ctx, "no_such", 0)
		wantError(e, err, triton.InvalidArgument, "no_such")
	}},
	{"statistics", 0, func(e *env) {
		stats := func() triton.ModelStats {
			e.Helper()
			st, err := e.conn.ModelStatistics(e.ctx, "text_reverse", 0)
			if err != nil {
				e.Fatal(err)
			}
			if len(st) != 1 || st[0].Name != "text_reverse" || st[0].Version != 1 {
				e.Fatalf("statistics %+v, want one entry for text_reverse version 1", st)
			}
			return st[0]
		}
		before := stats()
		e.infer(e.conn, &triton.InferRequest{Model: "text_reverse", Inputs: []tensor.Tensor{texts(e, "s")}})
		after := stats()
		for _, c := range []struct {
			what          string
			before, after uint64
		}{
			{"success", before.Success.Count, after.Success.Count},
			{"queue", before.Queue.Count, after.Queue.Count},
			{"compute_infer", before.ComputeInfer.Count, after.ComputeInfer.Count},
			{"inference_count", before.InferenceCount, after.InferenceCount},
			{"execution_count", before.ExecutionCount, after.ExecutionCount},
		} {
			if c.after != c.before+1 {
				e.Errorf("%s went from %d to %d, want +1", c.what, c.before, c.after)
			}
		}
		if after.Success.Total <= before.Success.Total || after.LastInference.IsZero() || after.Fail.Count != before.Fail.Count {
			e.Errorf("success %v → %v, last inference %v, fail %d → %d", before.Success, after.Success, after.LastInference, before.Fail.Count, after.Fail.Count)
		}
		all, err := e.conn.ModelStatistics(e.ctx, "", 0)
		if err != nil {
			e.Fatal(err)
		}
		if !slices.ContainsFunc(all, func(s triton.ModelStats) bool { return s.Name == "pixels" }) {
			e.Errorf("statistics of all models lack pixels: %d entries", len(all))
		}
	}},
	{"repository", 0, func(e *env) {
		repo := e.conn.(client.Repository)
		wantLazy := func(ready bool) {
			e.Helper()
			idx, err := repo.Index(e.ctx)
			if err != nil {
				e.Fatal(err)
			}
			got := slices.ContainsFunc(idx, func(s triton.ModelState) bool { return s.Name == "lazy" && s.State == "READY" && s.Version == 1 })
			if got != ready || !slices.ContainsFunc(idx, func(s triton.ModelState) bool { return s.Name == "text_reverse" && s.State == "READY" }) {
				e.Errorf("index %+v: lazy ready %v, want %v", idx, got, ready)
			}
			if r, err := e.conn.ModelReady(e.ctx, "lazy", 0); err != nil || r != ready {
				e.Errorf("ModelReady(lazy) = %v, %v; want %v", r, err, ready)
			}
		}
		wantLazy(false)
		if err := repo.Load(e.ctx, "lazy", nil); err != nil {
			e.Fatal(err)
		}
		wantLazy(true)
		resp := e.infer(e.conn, &triton.InferRequest{Model: "lazy", Inputs: []tensor.Tensor{texts(e, "on")}})
		wantStrings(e, resp, "REVERSED", "no")
		override := `{"name":"lazy","backend":"reverse","max_batch_size":0,
			"input":[{"name":"TEXT","data_type":"TYPE_STRING","dims":[-1]}],
			"output":[{"name":"REVERSED","data_type":"TYPE_STRING","dims":[-1]}],
			"parameters":{"note":{"string_value":"overridden"}}}`
		if err := repo.Load(e.ctx, "lazy", &triton.LoadOptions{Config: override, Files: map[string][]byte{"1/model.txt": []byte("\x00\xff")}}); err != nil {
			e.Fatal(err)
		}
		cfg, err := e.conn.ModelConfig(e.ctx, "lazy", 0)
		if err != nil {
			e.Fatal(err)
		}
		if v := cfg.GetParameters()["note"].GetStringValue(); v != "overridden" {
			e.Errorf("config parameter note = %q after the override", v)
		}
		if err := repo.Unload(e.ctx, "lazy", nil); err != nil {
			e.Fatal(err)
		}
		wantLazy(false)
		_, err = e.conn.Infer(e.ctx, &triton.InferRequest{Model: "lazy", Inputs: []tensor.Tensor{texts(e, "on")}})
		if code := triton.CodeOf(err); code != triton.Unavailable && code != triton.NotFound {
			e.Errorf("Infer on an unloaded model: %v, want Unavailable or NotFound", err)
		}
		err = repo.Load(e.ctx, "no_such", nil)
		wantError(e, err, triton.CodeOf(err), "failed to load 'no_such'")
		if err == nil || triton.CodeOf(err) == triton.Unknown {
			e.Errorf("Load(no_such): %v", err)
		}
	}},
	{"shared memory", 0, func(e *env) {
		if _, err := os.Stat("/dev/shm"); err != nil {
			e.Skip("no /dev/shm")
		}
		sm := e.conn.(client.SystemSharedMemory)
		in := newSHM(e, 2*784)
		out := newSHM(e, 2*3136)
		if err := sm.RegisterSystemSharedMemory(e.ctx, "in", in.Key(), 0, 2*784); err != nil {
			e.Fatal(err)
		}
		e.Cleanup(func() { _ = sm.UnregisterSystemSharedMemory(context.Background(), "") })
		if err := sm.RegisterSystemSharedMemory(e.ctx, "out", out.Key(), 3136, 3136); err != nil {
			e.Fatal(err)
		}
		err := sm.RegisterSystemSharedMemory(e.ctx, "in", in.Key(), 0, 784)
		if c := triton.CodeOf(err); c != triton.AlreadyExists && c != triton.InvalidArgument { // HTTP answers both 400
			e.Errorf("registering a region twice: %v", err)
		}
		st, err := sm.SystemSharedMemoryStatus(e.ctx, "")
		if err != nil {
			e.Fatal(err)
		}
		want := []sysshm.Region{{Name: "in", Key: in.Key(), Offset: 0, ByteSize: 2 * 784}, {Name: "out", Key: out.Key(), Offset: 3136, ByteSize: 3136}}
		if !slices.Equal(st, want) {
			e.Errorf("status %+v, want %+v", st, want)
		}

		imgs := images(1)
		copy(in.Bytes()[784:], imgs)
		req := pixelsRequest(e, "pixels", imgs)
		req.Inputs[0].Data = nil
		client.InputInRegion(req, "IMAGE", client.Region{Name: "in", Offset: 784, ByteSize: 784})
		client.OutputInRegion(req, "PIXELS", client.Region{Name: "out", ByteSize: 3136})
		resp := e.infer(e.conn, req)
		if len(resp.Outputs) != 1 {
			e.Fatalf("outputs %v", names(resp))
		}
		if o := resp.Outputs[0]; o.Name != "PIXELS" || o.DataType != tensor.FP32 || !slices.Equal(o.Shape, tensor.Shape{1, 1, 28, 28}) || o.Data != nil {
			e.Fatalf("output in shared memory: %s %s %v with %d bytes of data, want PIXELS FP32 [1 1 28 28] without", o.Name, o.DataType, o.Shape, len(o.Data))
		}
		resp.Outputs[0].Data = slices.Clone(out.Bytes()[3136:])
		wantPixels(e, resp, imgs)

		// A region too small for the output.
		req = pixelsRequest(e, "pixels", imgs)
		client.OutputInRegion(req, "PIXELS", client.Region{Name: "out", ByteSize: 100})
		_, err = e.conn.Infer(e.ctx, req)
		wantError(e, err, triton.InvalidArgument, "should be at least 3136 bytes")

		if err := sm.UnregisterSystemSharedMemory(e.ctx, "in"); err != nil {
			e.Fatal(err)
		}
		if st, err := sm.SystemSharedMemoryStatus(e.ctx, ""); err != nil || len(st) != 1 || st[0].Name != "out" {
			e.Errorf("status after unregistering in: %+v, %v", st, err)
		}
		_, err = sm.SystemSharedMemoryStatus(e.ctx, "in")
		wantError(e, err, triton.NotFound, "in")
		if err := sm.UnregisterSystemSharedMemory(e.ctx, ""); err != nil {
			e.Fatal(err)
		}
		if st, err := sm.SystemSharedMemoryStatus(e.ctx, ""); err != nil || len(st) != 0 {
			e.Errorf("status after unregistering all: %+v, %v", st, err)
		}
	}},
	{"compression", 0, func(e *env) {
		codings := []client.Compression{client.Gzip}
		if e.tg.kind == "http" {
			codings = append(codings, client.Deflate)
		}
		for _, c := range codings {
			conn := e.dial(client.WithCompression(c, c))
			imgs := images(4) // 3 KiB in, 12 KiB out: compressed by httpapi
			wantPixels(e, e.infer(conn, pixelsRequest(e, "pixels", imgs)), imgs)
			if e.tg.wire != nil {
				req, resp := e.tg.wire.last()
				if req != string(c) || resp != string(c) {
					e.Errorf("%s: the server saw a request in %q and answered in %q", c, req, resp)
				}
			}
		}
		if e.tg.kind == "grpc" {
			_, err := client.NewGRPC("127.0.0.1:1", client.WithCompression(client.Deflate, client.NoCompression))
			wantError(e, err, triton.InvalidArgument, "gzip only")
		}
	}},
	{"JSON tensors", 0, func(e *env) {
		conn := e.dial(client.WithJSONTensors())
		resp := e.infer(conn, &triton.InferRequest{Model: "text_reverse", Inputs: []tensor.Tensor{texts(e, "hello", "", `"q"\`, "\t<\x01>")}})
		wantStrings(e, resp, "REVERSED", "olleh", "", `\"q"`, ">\x01<\t")
		imgs := images(2)
		wantPixels(e, e.infer(conn, pixelsRequest(e, "pixels", imgs)), imgs)
		if haveORT() {
			in := int32s(e, "INPUT0", tensor.Shape{1, 3}, math.MinInt32, 0, math.MaxInt32)
			resp := e.infer(conn, &triton.InferRequest{Model: "identity_int32", Inputs: []tensor.Tensor{in}, Outputs: []string{"OUTPUT0"}})
			wantInt32s(e, resp, "OUTPUT0", tensor.Shape{1, 3}, []int32{math.MinInt32, 0, math.MaxInt32})
		}
	}},
	{"timing", 0, func(e *env) {
		// The remote clients fill a Timing with parts of the call (each
		// call starting afresh: the stale hour below goes); Local
		// leaves it zero.
		var tm client.Timing
		ctx := client.WithTiming(e.ctx, &tm)
		if client.ContextTiming(ctx) != &tm || client.ContextTiming(e.ctx) != nil {
			e.Fatal("ContextTiming does not return the Timing of WithTiming")
		}
		remote := e.tg.kind != "local"
		check := func(what string, call func()) {
			e.Helper()
			tm = client.Timing{}
			if remote {
				tm = client.Timing{Send: time.Hour, Recv: time.Hour}
			}
			start := time.Now()
			call()
			total := time.Since(start)
			switch {
			case !remote && tm != (client.Timing{}):
				e.Errorf("%s: Local reported %+v, want nothing", what, tm)
			case remote && (tm.Send <= 0 || tm.Recv <= 0 || tm.Send+tm.Recv > total):
				e.Errorf("%s: %+v in a call of %v: want both positive and within the call", what, tm, total)
			}
		}
		imgs := images(2)
		check("Infer", func() {
			resp, err := e.conn.Infer(ctx, pixelsRequest(e, "pixels", imgs))
			if err != nil {
				e.Fatal(err)
			}
			wantPixels(e, resp, imgs)
		})
		check("InferStream", func() {
			for resp, err := range e.conn.InferStream(ctx, pixelsRequest(e, "pixels", imgs)) {
				if err != nil {
					e.Fatal(err)
				}
				wantPixels(e, resp, imgs)
			}
		})
		tm = client.Timing{Send: time.Hour, Recv: time.Hour}
		_, err := e.conn.Infer(ctx, &triton.InferRequest{Model: "no_such", Inputs: []tensor.Tensor{texts(e, "x")}})
		wantError(e, err, triton.InvalidArgument, "unknown model")
		if remote && (tm.Send <= 0 || tm.Send >= time.Hour || tm.Recv >= time.Hour) {
			e.Errorf("failed call: %+v, want its Send and what it received", tm)
		}
	}},
	{"closed", 0, func(e *env) {
		conn := e.dial()
		if err := conn.Close(); err != nil {
			e.Fatal(err)
		}
		_, err := conn.Infer(e.ctx, &triton.InferRequest{Model: "text_reverse", Inputs: []tensor.Tensor{texts(e, "x")}})
		wantError(e, err, triton.Unavailable, "closed")
		if _, err := conn.ServerLive(e.ctx); triton.CodeOf(err) != triton.Unavailable {
			e.Errorf("ServerLive after Close: %v", err)
		}
		if err := conn.Close(); err != nil {
			e.Errorf("second Close: %v", err)
		}
	}},
}

// Tensors and checks.

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func int32s(t testing.TB, name string, shape tensor.Shape, vals ...int32) tensor.Tensor {
	t.Helper()
	ts, err := tensor.From(name, shape, vals)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func texts(t testing.TB, s ...string) tensor.Tensor {
	t.Helper()
	ts, err := tensor.FromStrings("TEXT", tensor.Shape{int64(len(s))}, s)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

func seq(n int, f func(i int) int32) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

// simpleRequest asks simple for INPUT0 = 0, 1, ... and INPUT1 = 1.
func simpleRequest(t testing.TB, batch int) *triton.InferRequest {
	n := batch * 16
	return &triton.InferRequest{Model: "simple", Inputs: []tensor.Tensor{
		int32s(t, "INPUT0", tensor.Shape{int64(batch), 16}, seq(n, func(i int) int32 { return int32(i) })...),
		int32s(t, "INPUT1", tensor.Shape{int64(batch), 16}, seq(n, func(int) int32 { return 1 })...),
	}}
}

// images returns n 28×28 grey images, one after the other.
func images(n int) []byte {
	b := make([]byte, n*784)
	for i := range b {
		b[i] = byte(i*7 + i/784*31)
	}
	return b
}

func pixelsRequest(t testing.TB, model string, imgs []byte) *triton.InferRequest {
	t.Helper()
	in, err := tensor.New("IMAGE", tensor.Uint8, tensor.Shape{int64(len(imgs) / 784), 28, 28}, imgs)
	if err != nil {
		t.Fatal(err)
	}
	return &triton.InferRequest{Model: model, Inputs: []tensor.Tensor{in}}
}

func repeatRequest(t testing.TB, vals []int32, delays []uint32) *triton.InferRequest {
	t.Helper()
	return &triton.InferRequest{Model: "repeat_int32", Inputs: []tensor.Tensor{
		int32s(t, "IN", tensor.Shape{int64(len(vals))}, vals...),
		must(tensor.From("DELAY", tensor.Shape{int64(len(delays))}, delays)),
		must(tensor.From("WAIT", tensor.Shape{1}, []uint32{0})),
	}}
}

func names(resp *triton.InferResponse) []string {
	var out []string
	for _, o := range resp.Outputs {
		out = append(out, o.Name)
	}
	return out
}

// view returns an output's elements after checking its shape.
func view[T tensor.Element](t testing.TB, resp *triton.InferResponse, name string, shape tensor.Shape) []T {
	t.Helper()
	out, ok := resp.Output(name)
	if !ok {
		t.Fatalf("no output %s among %v", name, names(resp))
	}
	if !slices.Equal(out.Shape, shape) {
		t.Fatalf("output %s has shape %v, want %v", name, out.Shape, shape)
	}
	v, err := tensor.View[T](out)
	if err != nil {
		t.Fatalf("output %s: %v", name, err)
	}
	return v
}

func wantInt32s(t testing.TB, resp *triton.InferResponse, name string, shape tensor.Shape, want []int32) {
	t.Helper()
	if got := view[int32](t, resp, name, shape); !slices.Equal(got, want) {
		t.Errorf("%s = %v, want %v", name, got, want)
	}
}

func wantStrings(t testing.TB, resp *triton.InferResponse, name string, want ...string) {
	t.Helper()
	out, ok := resp.Output(name)
	if !ok {
		t.Fatalf("no output %s among %v", name, names(resp))
	}
	got, err := tensor.Strings(out)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s = %q, want %q", name, got, want)
	}
}

// wantPixels checks PIXELS against the images, each byte / 255.
func wantPixels(t testing.TB, resp *triton.InferResponse, imgs []byte) {
	t.Helper()
	got := view[float32](t, resp, "PIXELS", tensor.Shape{int64(len(imgs) / 784), 1, 28, 28})
	for i, p := range imgs {
		if want := float32(p) / 255; got[i] != want {
			t.Fatalf("PIXELS[%d] = %v, want %v", i, got[i], want)
		}
	}
}

// wantError checks an error's code and that its message holds every part.
func wantError(t testing.TB, err error, code triton.Code, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %v", code)
	}
	if _, ok := errors.AsType[*triton.Error](err); !ok {
		t.Errorf("error %v is a %T, not a *triton.Error", err, err)
	}
	if got := triton.CodeOf(err); got != code {
		t.Errorf("code %v, want %v (error: %v)", got, code, err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not mention %q", err, p)
		}
	}
}

var shmCount atomic.Int64

// newSHM creates a shared-memory object removed when the test ends.
func newSHM(t testing.TB, size int) *client.SharedMemory {
	t.Helper()
	m, err := client.CreateSharedMemory(fmt.Sprintf("/triton-go-client-test-%d-%d", os.Getpid(), shmCount.Add(1)), size)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Error(err)
		}
	})
	return m
}
