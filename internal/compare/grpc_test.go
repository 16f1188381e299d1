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

// minimalAddSub answers add_sub on a raw session, as rawAddSub does.
func minimalAddSub(s *ort.DynamicAdvancedSession) func(raw [][]byte) ([][]byte, error) {
	return func(raw [][]byte) ([][]byte, error) {
		if len(raw) != 2 || len(raw[0]) != 64 || len(raw[1]) != 64 {
			return nil, fmt.Errorf("add_sub takes two FP32 [1, 16] inputs")
		}
		sum, diff, err := rawAddSub(s, floats(raw[0]), floats(raw[1]))
		if err != nil {
			return nil, err
		}
		return [][]byte{floatBytes(sum), floatBytes(diff)}, nil
	}
}

// minimalMirror answers with the inputs themselves.
func minimalMirror(raw [][]byte) ([][]byte, error) { return raw, nil }

// floats views little-endian FP32 bytes as float32s, without a copy where
// they are aligned (protobuf's decoded bytes are).
func floats(b []byte) []float32 {
	if uintptr(unsafe.Pointer(unsafe.SliceData(b)))%4 != 0 {
		b = bytes.Clone(b)
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}

// floatBytes views float32s as their bytes.
func floatBytes(f []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(f))), 4*len(f))
}

// grpcServe serves what register adds on a grpc.Server with opts, on TCP
// loopback, and returns a client on one connection to it (as ghz uses by
// default). Everything stops when the test ends.
func grpcServe(tb testing.TB, register func(*grpc.Server), opts ...grpc.ServerOption) inferencepb.GRPCInferenceServiceClient {
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
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<30), grpc.MaxCallSendMsgSize(1<<30)))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = conn.Close()
		g.Stop()
		<-served
	})
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

// protoCodecOptions are grpcapi.ServerOptions' limits without its codec:
// ours as it was before the codec, with grpc-go's protobuf codec.
func protoCodecOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.MaxRecvMsgSize(1<<31 - 1), grpc.MaxSendMsgSize(1<<31 - 1)}
}

// grpcMinimalServe serves a minimal server answering with answer.
func grpcMinimalServe(tb testing.TB, answer func(raw [][]byte) ([][]byte, error)) inferencepb.GRPCInferenceServiceClient {
	tb.Helper()
	return grpcServe(tb, func(g *grpc.Server) {
		inferencepb.RegisterGRPCInferenceServiceServer(g, &grpcMinimal{answer: answer})
	}, protoCodecOptions()...)
}

// grpcMirrorServer serves "mirror" and "mirror1", a Go backend answering
// OUTPUTn with INPUTn, without copying: the same trivial work as
// minimalMirror, so that comparing the two leaves only the adapters.
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
		RawInputContents: [][]byte{bytes.Clone(floatBytes(a)), bytes.Clone(floatBytes(b))},
	}
}

// grpcCheckAddSub checks a gRPC answer to add_sub's request i.
func grpcCheckAddSub(i int, resp *inferencepb.ModelInferResponse) error {
	raw := resp.GetRawOutputContents()
	if len(raw) != 2 || len(resp.GetOutputs()) != 2 || resp.GetOutputs()[0].GetName() != "OUTPUT0" {
		return fmt.Errorf("request %d: %d outputs, %d raw contents", i, len(resp.GetOutputs()), len(raw))
	}
	return checkAddSub(i, floats(raw[0]), floats(raw[1]))
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
// so that only the adapters differ.
// Besides paired's req/s and ratios, a [meter] reports CPU time and bytes
// allocated per request (client and server together) and the rounds' CPU
// ratios minimal ÷ ours.
func BenchmarkGRPCAddSub(b *testing.B) {
	concurrency := []int{1, 16, 64}
	b.Run("onnx", func(b *testing.B) {
		srv := addSubServer(b, addSubConfig(2))
		minimal := grpcMinimalServe(b, minimalAddSub(rawSession(b, 1)))
		ours := grpcOurs(b, srv)
		var m meter
		paired(b, time.Second/2, concurrency,
			m.wrap(grpcAddSubContender("minimal", "add_sub", minimal)),
			m.wrap(grpcAddSubContender("ours", "add_sub", ours)))
		m.report(b, "minimal")
	})
	b.Run("mirror", func(b *testing.B) {
		minimal := grpcMinimalServe(b, minimalMirror)
		ours := grpcOurs(b, grpcMirrorServer(b, 64))
		var m meter
		paired(b, time.Second/2, concurrency,
			m.wrap(grpcAddSubContender("minimal", "mirror", minimal)),
			m.wrap(grpcAddSubContender("ours", "mirror", ours)))
		m.report(b, "minimal")
	})
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

// meter measures, for each run of a contender, the process's CPU time
// (user and system, every thread: the clients', the servers', ONNX
// Runtime's, the garbage collector's) and the bytes it allocates, per
// request. On a machine that other work shares, CPU time per request
// drifts less than throughput.
type meter struct {
	mu   sync.Mutex
	runs map[meterKey][]meterRun
}

type meterKey struct {
	name string
	c    int
}

type meterRun struct{ cpu, bytes float64 } // per request: µs, bytes

// wrap makes x's runs measured.
func (m *meter) wrap(x contender) contender {
	run := x.run
	x.run = func(c int, d time.Duration) load {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		cpu0 := processCPU()
		l := run(c, d)
		cpu := processCPU() - cpu0
		runtime.ReadMemStats(&after)
		n := l.rps * d.Seconds()
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.runs == nil {
			m.runs = map[meterKey][]meterRun{}
		}
		k := meterKey{x.name, c}
		m.runs[k] = append(m.runs[k], meterRun{cpu: float64(cpu.Microseconds()) / n, bytes: float64(after.TotalAlloc-before.TotalAlloc) / n})
		return l
	}
	return x
}

// report reports per contender and concurrency the medians of CPU µs and
// bytes allocated per request, and for contenders other than base the
// median and range of the rounds' CPU ratios base ÷ contender (above 1:
// cheaper than base; what throughput would be, were the CPU the only
// limit).
func (m *meter) report(b *testing.B, base string) {
	median := func(xs []float64) float64 {
		s := slices.Clone(xs)
		slices.Sort(s)
		return s[len(s)/2]
	}
	for k, runs := range m.runs {
		var cpu, bytes, ratio []float64
		for i, r := range runs {
			cpu, bytes = append(cpu, r.cpu), append(bytes, r.bytes)
			if bs := m.runs[meterKey{base, k.c}]; k.name != base && i < len(bs) {
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

// processCPU is the CPU time the process has used.
func processCPU() time.Duration {
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
// and 4 concurrent callers, in interleaved rounds of 2 s. A [meter] reports
// CPU time and bytes allocated per request of the whole process (the
// client included: it unmarshals each 16 MiB answer with a copy) and the
// rounds' CPU ratios before ÷ contender.
//
//	go test -run '^$' -bench 'GRPCLarge' -benchtime 6x ./internal/compare/
func BenchmarkGRPCLarge(b *testing.B) {
	srv := grpcMirrorServer(b, 4)
	before := grpcOurs(b, srv, protoCodecOptions()...)
	ours := grpcOurs(b, srv)
	minimal := grpcMinimalServe(b, minimalMirror)
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
	var m meter
	paired(b, 2*time.Second, []int{1, 4},
		m.wrap(contend("before", before)), m.wrap(contend("ours", ours)), m.wrap(contend("minimal", minimal)))
	m.report(b, "before")
}

// TestGRPCMinimal: the minimal gRPC server answers add_sub correctly on
// its raw session, and mirrors what it is sent, small and large.
func TestGRPCMinimal(t *testing.T) {
	addSubServer(t, addSubConfig(1))
	client := grpcMinimalServe(t, minimalAddSub(rawSession(t, 1)))
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
	mirror := grpcMinimalServe(t, minimalMirror)
	for _, req := range []*inferencepb.ModelInferRequest{grpcAddSubRequest("mirror", 1), grpcLargeRequest(1 << 20)} {
		resp, err := mirror.ModelInfer(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if err := grpcCheckMirror(req, resp, false); err != nil {
			t.Error(err)
		}
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
		"codec": grpcOurs(t, srv), "proto": grpcOurs(t, srv, protoCodecOptions()...),
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
