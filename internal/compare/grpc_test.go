package compare

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	ort "github.com/yalue/onnxruntime_go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/grpcapi"
	"github.com/triton-go/triton/grpcapi/inferencepb"
	"github.com/triton-go/triton/internal/testmodels"
	"github.com/triton-go/triton/tensor"
)

// grpcMinimal is the minimal grpc-go server of the gRPC comparisons: it
// implements only GRPCInferenceService.ModelInfer, for two-input requests
// in raw_input_contents, and answers with what answer makes of the inputs'
// bytes (add_sub on a raw onnxruntime_go session, or the inputs
// themselves), as the outputs OUTPUT0 and OUTPUT1 with the inputs' shapes.
type grpcMinimal struct {
	inferencepb.UnimplementedGRPCInferenceServiceServer
	answer func(raw [][]byte) ([][]byte, error)
}

// ModelInfer answers one request.
func (m *grpcMinimal) ModelInfer(_ context.Context, req *inferencepb.ModelInferRequest) (*inferencepb.ModelInferResponse, error) {
	ins, raw := req.GetInputs(), req.GetRawInputContents()
	if len(ins) != len(raw) || len(raw) == 0 || len(raw) > 2 {
		return nil, status.Errorf(codes.InvalidArgument, "want 1 or 2 inputs in raw_input_contents, got %d inputs and %d contents", len(ins), len(raw))
	}
	outs, err := m.answer(raw)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	resp := &inferencepb.ModelInferResponse{ModelName: req.GetModelName(), ModelVersion: "1", Id: req.GetId(), RawOutputContents: outs}
	for i, in := range ins {
		resp.Outputs = append(resp.Outputs, &inferencepb.ModelInferResponse_InferOutputTensor{
			Name: fmt.Sprintf("OUTPUT%d", i), Datatype: in.GetDatatype(), Shape: in.GetShape()})
	}
	return resp, nil
}

// grpcMinimalAddSub answers add_sub on a raw session, as rawAddSub does.
func grpcMinimalAddSub(s *ort.DynamicAdvancedSession) func(raw [][]byte) ([][]byte, error) {
	return func(raw [][]byte) ([][]byte, error) {
		if len(raw) != 2 || len(raw[0]) != 64 || len(raw[1]) != 64 {
			return nil, fmt.Errorf("add_sub takes two FP32 [1, 16] inputs")
		}
		sum, diff, err := rawAddSub(s, grpcFloats(raw[0]), grpcFloats(raw[1]))
		if err != nil {
			return nil, err
		}
		return [][]byte{grpcFloatBytes(sum), grpcFloatBytes(diff)}, nil
	}
}

// grpcMinimalMirror answers with the inputs themselves.
func grpcMinimalMirror(raw [][]byte) ([][]byte, error) { return raw, nil }

// grpcMinimalCore answers with what srv.Infer answers for mirror, the inputs
// taken as FP32 [1, n]: a minimal server embedding package triton, whose
// comparison with ours leaves the adapter's share alone.
func grpcMinimalCore(srv *triton.Server) func(raw [][]byte) ([][]byte, error) {
	return func(raw [][]byte) ([][]byte, error) {
		req := &triton.InferRequest{Model: "mirror"}
		for k, r := range raw {
			t, err := tensor.New(fmt.Sprintf("INPUT%d", k), tensor.FP32, tensor.Shape{1, int64(len(r) / 4)}, r)
			if err != nil {
				return nil, err
			}
			req.Inputs = append(req.Inputs, t)
		}
		resp, err := srv.Infer(context.Background(), req)
		if err != nil {
			return nil, err
		}
		outs := make([][]byte, len(resp.Outputs))
		for k, t := range resp.Outputs {
			outs[k] = t.Data
		}
		return outs, nil
	}
}

// grpcFloats views little-endian FP32 bytes as float32s, without a copy where
// they are aligned (protobuf's decoded bytes are).
func grpcFloats(b []byte) []float32 {
	if uintptr(unsafe.Pointer(unsafe.SliceData(b)))%4 != 0 {
		b = bytes.Clone(b)
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}

// grpcFloatBytes views float32s as their bytes.
func grpcFloatBytes(f []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(f))), 4*len(f))
}

// grpcListen serves what register adds on a grpc.Server with opts, on TCP
// loopback, until the test ends, and returns its address.
func grpcListen(tb testing.TB, register func(*grpc.Server), opts ...grpc.ServerOption) string {
	tb.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	g := grpc.NewServer(opts...)
	register(g)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = g.Serve(lis)
	}()
	tb.Cleanup(func() {
		g.Stop()
		<-served
	})
	return lis.Addr().String()
}

// grpcServe serves as grpcListen does and returns a client of the server
// (grpcDial).
func grpcServe(tb testing.TB, register func(*grpc.Server), opts ...grpc.ServerOption) inferencepb.GRPCInferenceServiceClient {
	tb.Helper()
	return grpcDial(tb, grpcListen(tb, register, opts...))
}

// grpcDial returns a client on one connection to addr (as ghz uses by
// default), closed when the test ends.
func grpcDial(tb testing.TB, addr string) inferencepb.GRPCInferenceServiceClient {
	tb.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<30), grpc.MaxCallSendMsgSize(1<<30)))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = conn.Close() })
	return inferencepb.NewGRPCInferenceServiceClient(conn)
}

// grpcOurs serves srv with grpcapi, with the server options of
// grpcapi.ServerOptions (the default: with its codec) or opts.
func grpcOurs(tb testing.TB, srv *triton.Server, opts ...grpc.ServerOption) inferencepb.GRPCInferenceServiceClient {
	tb.Helper()
	if opts == nil {
		opts = grpcapi.ServerOptions()
	}
	return grpcServe(tb, grpcapi.New(srv).Register, opts...)
}

// grpcProtoCodecOptions are grpcapi.ServerOptions' limits without its codec
// and stream workers: a default grpc-go server (with grpc-go's protobuf
// codec), as ours was before them.
func grpcProtoCodecOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.MaxRecvMsgSize(1<<31 - 1), grpc.MaxSendMsgSize(1<<31 - 1)}
}

// grpcMinimalServe serves a minimal server answering with answer, on a
// default grpc-go server (grpcProtoCodecOptions) unless opts are given.
func grpcMinimalServe(tb testing.TB, answer func(raw [][]byte) ([][]byte, error), opts ...grpc.ServerOption) inferencepb.GRPCInferenceServiceClient {
	tb.Helper()
	if opts == nil {
		opts = grpcProtoCodecOptions()
	}
	return grpcServe(tb, func(g *grpc.Server) {
		inferencepb.RegisterGRPCInferenceServiceServer(g, &grpcMinimal{answer: answer})
	}, opts...)
}

// grpcMirrorServer serves "mirror" and "mirror1", a Go backend answering
// OUTPUTn with INPUTn, without copying: the same trivial work as
// grpcMinimalMirror, so that comparing the two leaves only the adapters.
// mirror has add_sub's two inputs, mirror1 one; both FP32 [-1] with
// batching (max_batch_size 8, no dynamic batcher) and the instances given:
// as many as there are callers, so that no call waits for one (the minimal
// server runs every call at once), leaves the server's scheduling out of
// the comparison too.
func grpcMirrorServer(tb testing.TB, instances int) *triton.Server {
	tb.Helper()
	config := func(name string, n int) string {
		var ins, outs []string
		for i := range n {
			ins = append(ins, fmt.Sprintf(`{ name: "INPUT%d" data_type: TYPE_FP32 dims: [ -1 ] }`, i))
			outs = append(outs, fmt.Sprintf(`{ name: "OUTPUT%d" data_type: TYPE_FP32 dims: [ -1 ] }`, i))
		}
		return fmt.Sprintf("name: %q backend: \"mirror\" max_batch_size: 8\ninput [ %s ]\noutput [ %s ]\ninstance_group [ { count: %d kind: KIND_CPU } ]\n",
			name, strings.Join(ins, ", "), strings.Join(outs, ", "), instances)
	}
	return testmodels.NewServer(tb, map[string]string{
		"mirror/config.pbtxt":  config("mirror", 2),
		"mirror/1/model":       "",
		"mirror1/config.pbtxt": config("mirror1", 1),
		"mirror1/1/model":      "",
	}, triton.WithBackend("mirror", testmodels.Mirror))
}

// grpcAddSubRequest is add_sub's request i over gRPC, for model (add_sub,
// or mirror for the same bytes), in raw_input_contents.
func grpcAddSubRequest(model string, i int) *inferencepb.ModelInferRequest {
	a, b, _, _ := addSubInputs(i)
	return &inferencepb.ModelInferRequest{
		ModelName: model,
		Inputs: []*inferencepb.ModelInferRequest_InferInputTensor{
			{Name: "INPUT0", Datatype: "FP32", Shape: []int64{1, 16}},
			{Name: "INPUT1", Datatype: "FP32", Shape: []int64{1, 16}},
		},
		RawInputContents: [][]byte{bytes.Clone(grpcFloatBytes(a)), bytes.Clone(grpcFloatBytes(b))},
	}
}

// grpcCheckAddSub checks a gRPC answer to add_sub's request i.
func grpcCheckAddSub(i int, resp *inferencepb.ModelInferResponse) error {
	raw := resp.GetRawOutputContents()
	if len(raw) != 2 || len(resp.GetOutputs()) != 2 || resp.GetOutputs()[0].GetName() != "OUTPUT0" {
		return fmt.Errorf("request %d: %d outputs, %d raw contents", i, len(resp.GetOutputs()), len(raw))
	}
	return checkAddSub(i, grpcFloats(raw[0]), grpcFloats(raw[1]))
}

// grpcCheckMirror checks a gRPC answer to req by a mirror: the inputs'
// bytes come back as the outputs, in full unless spot is set (then the
// first, middle and last 64 bytes are compared).
func grpcCheckMirror(req *inferencepb.ModelInferRequest, resp *inferencepb.ModelInferResponse, spot bool) error {
	raw := resp.GetRawOutputContents()
	if len(raw) != len(req.RawInputContents) {
		return fmt.Errorf("%d raw outputs for %d inputs", len(raw), len(req.RawInputContents))
	}
	for k, want := range req.RawInputContents {
		got := raw[k]
		if len(got) != len(want) {
			return fmt.Errorf("output %d: %d bytes, want %d", k, len(got), len(want))
		}
		if spot && len(want) > 192 {
			m := len(want) / 2
			got = append(append(got[:64:64], got[m:m+64]...), got[len(got)-64:]...)
			want = append(append(want[:64:64], want[m:m+64]...), want[len(want)-64:]...)
		}
		if !bytes.Equal(got, want) {
			return fmt.Errorf("output %d differs from its input", k)
		}
	}
	return nil
}

// grpcAddSubContender calls add_sub (or the mirror) through client from
// closed-loop goroutines, goroutine g sending request g.
func grpcAddSubContender(name, model string, client inferencepb.GRPCInferenceServiceClient) contender {
	var reqs []*inferencepb.ModelInferRequest
	return contender{name: name, run: func(c int, d time.Duration) load {
		for len(reqs) < c {
			reqs = append(reqs, grpcAddSubRequest(model, len(reqs)))
		}
		return closedLoop(c, d, func(g int) error {
			resp, err := client.ModelInfer(context.Background(), reqs[g])
			if err != nil {
				return err
			}
			if model == "add_sub" {
				return grpcCheckAddSub(g, resp)
			}
			return grpcCheckMirror(reqs[g], resp, false)
		})
	}}
}

// BenchmarkGRPCAddSub compares ModelInfer of grpcapi with a minimal grpc-go
// server (only ModelInfer, from our inferencepb) on TCP loopback, one
// client connection each, add_sub's FP32 [1, 16] inputs in
// raw_input_contents, at 1, 16 and 64 concurrent callers, in interleaved
// rounds of half a second:
//
//	go test -run '^$' -bench 'GRPCAddSub' -benchtime 20x ./internal/compare/
//
// In onnx, both run add_sub on ONNX Runtime: ours through the onnxruntime
// backend (two instances, one intra-op thread each), the minimal server on
// one raw session (one intra-op thread) that every call runs concurrently
// (rawAddSub). In mirror, both answer with the inputs as the outputs (ours
// through a Go backend with 64 instances, so that no call waits for one),
// so that only the servers differ; a third contender, core, is the minimal
// server calling srv.Infer on that mirror (grpcMinimalCore), on a grpc-go
// server with grpcapi.ServerOptions as ours, so that ours against core is
// grpcapi's handlers and codec alone (ours/...-vs-core-...).
// Besides paired's req/s and ratios, a [grpcMeter] reports CPU time and bytes
// allocated per request (client and server together) and the rounds' CPU
// ratios minimal ÷ ours.
func BenchmarkGRPCAddSub(b *testing.B) {
	concurrency := []int{1, 16, 64}
	b.Run("onnx", func(b *testing.B) {
		srv := addSubServer(b, addSubConfig(2))
		minimal := grpcMinimalServe(b, grpcMinimalAddSub(rawSession(b, 1)))
		ours := grpcOurs(b, srv)
		var m grpcMeter
		paired(b, time.Second/2, concurrency,
			m.wrap(grpcAddSubContender("minimal", "add_sub", minimal)),
			m.wrap(grpcAddSubContender("ours", "add_sub", ours)))
		m.report(b, "minimal")
	})
	b.Run("mirror", func(b *testing.B) {
		srv := grpcMirrorServer(b, 64)
		minimal := grpcMinimalServe(b, grpcMinimalMirror)
		core := grpcMinimalServe(b, grpcMinimalCore(srv), grpcapi.ServerOptions()...)
		ours := grpcOurs(b, srv)
		var m grpcMeter
		paired(b, time.Second/2, concurrency,
			m.wrap(grpcAddSubContender("minimal", "mirror", minimal)),
			m.wrap(grpcAddSubContender("core", "mirror", core)),
			m.wrap(grpcAddSubContender("ours", "mirror", ours)))
		m.report(b, "minimal")
		m.versus(b, "ours", "core")
	})
}

// BenchmarkGRPCSerial makes b.N calls one after another through each
// server of BenchmarkGRPCAddSub, for counting instructions per call (the
// client's included), which unlike time does not drift with the machine's
// other work; the difference of two runs removes the set-up:
//
//	go test -c -o /tmp/compare.test ./internal/compare/ && cd internal/compare
//	for w in mirror/minimal mirror/core mirror/ours onnx/minimal onnx/ours; do for n in 100 600; do
//	  GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --callgrind-out-file=/tmp/cg-${w/\//-}-$n \
//	    /tmp/compare.test -test.run '^$' -test.bench "GRPCSerial/$w" -test.benchtime ${n}x
//	done; done
//	# per call: (Ir of the 600-call run - Ir of the 100-call run) / 500, from callgrind_annotate's totals
func BenchmarkGRPCSerial(b *testing.B) {
	srv := grpcMirrorServer(b, 64)
	onnx := addSubServer(b, addSubConfig(2))
	for _, x := range []struct {
		name, model string
		client      inferencepb.GRPCInferenceServiceClient
	}{
		{"mirror/minimal", "mirror", grpcMinimalServe(b, grpcMinimalMirror)},
		{"mirror/core", "mirror", grpcMinimalServe(b, grpcMinimalCore(srv), grpcapi.ServerOptions()...)},
		{"mirror/ours", "mirror", grpcOurs(b, srv)},
		{"onnx/minimal", "add_sub", grpcMinimalServe(b, grpcMinimalAddSub(rawSession(b, 1)))},
		{"onnx/ours", "add_sub", grpcOurs(b, onnx)},
	} {
		b.Run(x.name, func(b *testing.B) {
			req := grpcAddSubRequest(x.model, 1)
			for b.Loop() {
				resp, err := x.client.ModelInfer(context.Background(), req)
				if err == nil && x.model == "add_sub" {
					err = grpcCheckAddSub(1, resp)
				} else if err == nil {
					err = grpcCheckMirror(req, resp, false)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// grpcLargeRequest is a request to mirror1 with one FP32 [1, n/4] input
// of n bytes.
func grpcLargeRequest(n int) *inferencepb.ModelInferRequest {
	data := make([]byte, n)
	for i := range data {
		data[i] = byte(i*7 + i>>12)
	}
	return &inferencepb.ModelInferRequest{
		ModelName:        "mirror1",
		Inputs:           []*inferencepb.ModelInferRequest_InferInputTensor{{Name: "INPUT0", Datatype: "FP32", Shape: []int64{1, int64(n / 4)}}},
		RawInputContents: [][]byte{data},
	}
}

// grpcMeter measures, for each run of a contender, the process's CPU time
// (user and system, every thread: the clients', the servers', ONNX
// Runtime's, the garbage collector's) and the bytes it allocates, per
// request. On a machine that other work shares, CPU time per request
// drifts less than throughput.
type grpcMeter struct {
	mu   sync.Mutex
	runs map[grpcMeterKey][]grpcMeterRun
}

type grpcMeterKey struct {
	name string
	c    int
}

type grpcMeterRun struct{ cpu, bytes, rps float64 } // CPU µs and bytes per request, req/s

// wrap makes x's runs measured.
func (m *grpcMeter) wrap(x contender) contender {
	run := x.run
	x.run = func(c int, d time.Duration) load {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		cpu0 := grpcProcessCPU()
		l := run(c, d)
		cpu := grpcProcessCPU() - cpu0
		runtime.ReadMemStats(&after)
		n := l.rps * d.Seconds()
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.runs == nil {
			m.runs = map[grpcMeterKey][]grpcMeterRun{}
		}
		k := grpcMeterKey{x.name, c}
		m.runs[k] = append(m.runs[k], grpcMeterRun{cpu: float64(cpu.Microseconds()) / n, bytes: float64(after.TotalAlloc-before.TotalAlloc) / n, rps: l.rps})
		return l
	}
	return x
}

// report reports per contender and concurrency the medians of CPU µs and
// bytes allocated per request, and for contenders other than base the
// median and range of the rounds' CPU ratios base ÷ contender (above 1:
// cheaper than base; what throughput would be, were the CPU the only
// limit).
func (m *grpcMeter) report(b *testing.B, base string) {
	for k, runs := range m.runs {
		var cpu, bytes, ratio []float64
		for i, r := range runs {
			cpu, bytes = append(cpu, r.cpu), append(bytes, r.bytes)
			if bs := m.runs[grpcMeterKey{base, k.c}]; k.name != base && i < len(bs) {
				ratio = append(ratio, bs[i].cpu/r.cpu)
			}
		}
		prefix := fmt.Sprintf("%s/c%d-", k.name, k.c)
		b.ReportMetric(median(cpu), prefix+"cpu-µs/req")
		b.ReportMetric(median(bytes), prefix+"B/req")
		if len(ratio) > 0 {
			b.ReportMetric(median(ratio), prefix+"cpu-ratio")
			b.ReportMetric(slices.Min(ratio), prefix+"cpu-ratio-min")
			b.ReportMetric(slices.Max(ratio), prefix+"cpu-ratio-max")
		}
	}
}

// versus reports, per concurrency, the median and range of the rounds'
// ratios of name against base, in throughput (name ÷ base:
// "<name>/c<c>-vs-<base>-ratio") and in CPU time per request (base ÷ name:
// "...-vs-<base>-cpu-ratio"), for a pair that paired's ratios, all against
// its first contender, do not give.
func (m *grpcMeter) versus(b *testing.B, name, base string) {
	for k, runs := range m.runs {
		bs := m.runs[grpcMeterKey{base, k.c}]
		if k.name != name || len(bs) != len(runs) {
			continue
		}
		var rps, cpu []float64
		for i, r := range runs {
			rps, cpu = append(rps, r.rps/bs[i].rps), append(cpu, bs[i].cpu/r.cpu)
		}
		prefix := fmt.Sprintf("%s/c%d-vs-%s-", name, k.c, base)
		b.ReportMetric(median(rps), prefix+"ratio")
		b.ReportMetric(slices.Min(rps), prefix+"ratio-min")
		b.ReportMetric(slices.Max(rps), prefix+"ratio-max")
		b.ReportMetric(median(cpu), prefix+"cpu-ratio")
		b.ReportMetric(slices.Min(cpu), prefix+"cpu-ratio-min")
		b.ReportMetric(slices.Max(cpu), prefix+"cpu-ratio-max")
	}
}

// grpcProcessCPU is the CPU time the process has used.
func grpcProcessCPU() time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// BenchmarkGRPCLarge sends one 16 MiB FP32 tensor in raw_input_contents to
// a mirror, which answers with it in raw_output_contents: ours as it was
// before its codec (grpc-go's protobuf codec, which copies bytes fields
// when it unmarshals and marshals; the baseline of the ratios), ours with
// grpcapi.ServerOptions (its codec: inputs alias the received buffer,
// outputs are written from the tensors' memory), and the minimal server
// (protobuf codec), each on TCP loopback with one client connection, at 1
// and 4 concurrent callers, in interleaved rounds of 2 s. A [grpcMeter] reports
// CPU time and bytes allocated per request of the whole process (the
// client included: it unmarshals each 16 MiB answer with a copy) and the
// rounds' CPU ratios before ÷ contender.
//
//	go test -run '^$' -bench 'GRPCLarge' -benchtime 6x ./internal/compare/
func BenchmarkGRPCLarge(b *testing.B) {
	srv := grpcMirrorServer(b, 4)
	before := grpcOurs(b, srv, grpcProtoCodecOptions()...)
	ours := grpcOurs(b, srv)
	minimal := grpcMinimalServe(b, grpcMinimalMirror)
	req := grpcLargeRequest(16 << 20)
	contend := func(name string, client inferencepb.GRPCInferenceServiceClient) contender {
		return contender{name: name, run: func(c int, d time.Duration) load {
			return closedLoop(c, d, func(int) error {
				resp, err := client.ModelInfer(context.Background(), req)
				if err != nil {
					return err
				}
				return grpcCheckMirror(req, resp, true)
			})
		}}
	}
	var m grpcMeter
	paired(b, 2*time.Second, []int{1, 4},
		m.wrap(contend("before", before)), m.wrap(contend("ours", ours)), m.wrap(contend("minimal", minimal)))
	m.report(b, "before")
}

// TestGRPCMinimal: the minimal gRPC server answers add_sub correctly on
// its raw session, mirrors what it is sent, small and large, and answers
// through srv.Infer as the mirror does.
func TestGRPCMinimal(t *testing.T) {
	addSubServer(t, addSubConfig(1))
	client := grpcMinimalServe(t, grpcMinimalAddSub(rawSession(t, 1)))
	for i := range 3 {
		resp, err := client.ModelInfer(context.Background(), grpcAddSubRequest("add_sub", i))
		if err != nil {
			t.Fatal(err)
		}
		if err := grpcCheckAddSub(i, resp); err != nil {
			t.Error(err)
		}
	}
	_, err := client.ModelInfer(context.Background(), &inferencepb.ModelInferRequest{ModelName: "add_sub"})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("request without inputs: %v, want InvalidArgument", err)
	}
	mirror := grpcMinimalServe(t, grpcMinimalMirror)
	for _, req := range []*inferencepb.ModelInferRequest{grpcAddSubRequest("mirror", 1), grpcLargeRequest(1 << 20)} {
		resp, err := mirror.ModelInfer(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if err := grpcCheckMirror(req, resp, false); err != nil {
			t.Error(err)
		}
	}
	core := grpcMinimalServe(t, grpcMinimalCore(grpcMirrorServer(t, 1)))
	req := grpcAddSubRequest("mirror", 2)
	resp, err := core.ModelInfer(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if err := grpcCheckMirror(req, resp, false); err != nil {
		t.Error(err)
	}
}

// TestGRPCOurs: ours answers the comparisons' requests correctly over TCP,
// with its codec and without: add_sub on ONNX Runtime, the mirror small and
// large (1 MiB, where the codec's own paths run).
func TestGRPCOurs(t *testing.T) {
	onnx := grpcOurs(t, addSubServer(t, addSubConfig(1)))
	resp, err := onnx.ModelInfer(context.Background(), grpcAddSubRequest("add_sub", 4))
	if err != nil {
		t.Fatal(err)
	}
	if err := grpcCheckAddSub(4, resp); err != nil {
		t.Error(err)
	}
	srv := grpcMirrorServer(t, 1)
	for name, client := range map[string]inferencepb.GRPCInferenceServiceClient{
		"codec": grpcOurs(t, srv), "proto": grpcOurs(t, srv, grpcProtoCodecOptions()...),
	} {
		for _, req := range []*inferencepb.ModelInferRequest{grpcAddSubRequest("mirror", 1), grpcLargeRequest(1 << 20)} {
			resp, err := client.ModelInfer(context.Background(), req)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if err := grpcCheckMirror(req, resp, false); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
}
