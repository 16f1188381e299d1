package grpcapi_test

import (
	"bytes"
	"compress/zlib"
	"context"
	"fmt"
	"io"
	"runtime"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	grpcgzip "google.golang.org/grpc/encoding/gzip"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/stats"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/triton-go/triton/grpcapi"
	"github.com/triton-go/triton/grpcapi/inferencepb"
)

// TestDeflateIsZlib checks that gRPC's "deflate" is the zlib format: the
// registered compressor reads what the standard library's zlib writes and
// writes what it reads, over and over (its writers and readers are
// pooled).
func TestDeflateIsZlib(t *testing.T) {
	c := encoding.GetCompressor("deflate")
	if c == nil {
		t.Fatal(`no "deflate" compressor registered`)
	}
	for i := range 5 {
		msg := bytes.Repeat([]byte{byte(i), 'a', 'b', 'c'}, 1000*(i+1))
		var std bytes.Buffer
		zw := zlib.NewWriter(&std)
		zw.Write(msg)
		zw.Close()
		r, err := c.Decompress(bytes.NewReader(std.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(r)
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("round %d: inflating zlib: %d bytes, %v", i, len(got), err)
		}
		r.(io.Closer).Close()

		var ours bytes.Buffer
		w, err := c.Compress(&ours)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(msg)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		zr, err := zlib.NewReader(&ours)
		if err != nil {
			t.Fatalf("round %d: our deflate is not zlib: %v", i, err)
		}
		got, err = io.ReadAll(zr)
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("round %d: zlib reading ours: %d bytes, %v", i, len(got), err)
		}
	}
	// Not zlib (a gzip header), and a bad checksum: errors, not garbage.
	if _, err := c.Decompress(bytes.NewReader([]byte{0x1f, 0x8b, 8, 0})); err == nil {
		t.Error("a gzip stream decompressed as deflate")
	}
	var std bytes.Buffer
	zw := zlib.NewWriter(&std)
	zw.Write([]byte("hello"))
	zw.Close()
	b := std.Bytes()
	b[len(b)-1] ^= 1
	if r, err := c.Decompress(bytes.NewReader(b)); err == nil {
		if _, err := io.ReadAll(r); err == nil {
			t.Error("a bad Adler-32 went unnoticed")
		}
	}
}

// payloads records a client's payload sizes and the response headers.
type payloads struct {
	mu       sync.Mutex
	in, out  []stats.RPCStats
	encoding []string // grpc-encoding of each response header
}

func (p *payloads) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (p *payloads) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}
func (p *payloads) HandleConn(context.Context, stats.ConnStats) {}
func (p *payloads) HandleRPC(_ context.Context, s stats.RPCStats) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch s := s.(type) {
	case *stats.InPayload:
		p.in = append(p.in, s)
	case *stats.OutPayload:
		p.out = append(p.out, s)
	case *stats.InHeader:
		p.encoding = append(p.encoding, s.Compression)
	}
}

// last returns the last payload received and sent, and the last
// response's encoding.
func (p *payloads) last(t *testing.T) (in, out *stats.InPayload, enc string) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.in) == 0 || len(p.encoding) == 0 {
		t.Fatalf("no response seen (%d payloads, %d headers)", len(p.in), len(p.encoding))
	}
	in = p.in[len(p.in)-1].(*stats.InPayload)
	if len(p.out) > 0 {
		o := p.out[len(p.out)-1].(*stats.OutPayload)
		out = &stats.InPayload{Length: o.Length, CompressedLength: o.CompressedLength}
	}
	return in, out, p.encoding[len(p.encoding)-1]
}

// zerosRequest asks nb_INT32, an identity model, for n zeros: a message
// that compresses well.
func zerosRequest(n int) *inferencepb.ModelInferRequest {
	return &inferencepb.ModelInferRequest{
		ModelName:        "nb_INT32",
		Inputs:           []*inferencepb.ModelInferRequest_InferInputTensor{in("INPUT0", "INT32", int64(n))},
		RawInputContents: [][]byte{make([]byte, 4*n)},
	}
}

// TestDeflateCalls calls with deflate-compressed requests, as Triton's
// clients may: ServerLive and ModelInfer (small and large) are served, and
// the response comes back in deflate.
func TestDeflateCalls(t *testing.T) {
	f := newFixture(t, setup{})
	var p payloads
	conn := f.dial(t, grpc.WithDefaultCallOptions(grpc.UseCompressor("deflate")), grpc.WithStatsHandler(&p))
	c := inferencepb.NewGRPCInferenceServiceClient(conn)
	ctx := t.Context()

	live, err := c.ServerLive(ctx, &inferencepb.ServerLiveRequest{})
	if err != nil || !live.GetLive() {
		t.Fatalf("ServerLive with deflate: %v, %v", live, err)
	}
	resp, err := c.ModelInfer(ctx, simpleRequest())
	if err != nil {
		t.Fatalf("ModelInfer with deflate: %v", err)
	}
	if raw := resp.GetRawOutputContents(); len(raw) != 2 || raw[0][4*15] != 16 || raw[1][4*15] != 14 {
		t.Fatalf("ModelInfer with deflate: wrong outputs %v", raw)
	}
	for _, n := range []int{1 << 10, 1 << 16} { // below and above the codec's by-reference size
		req := zerosRequest(n)
		resp, err := c.ModelInfer(ctx, req)
		if err != nil {
			t.Fatalf("ModelInfer of %d zeros with deflate: %v", n, err)
		}
		if !bytes.Equal(resp.GetRawOutputContents()[0], req.RawInputContents[0]) {
			t.Fatalf("%d zeros: wrong output", n)
		}
		in, out, enc := p.last(t)
		if enc != "deflate" || in.CompressedLength >= in.Length/10 || out.CompressedLength >= out.Length/10 {
			t.Errorf("%d zeros: response in %q, %d bytes compressed of %d; request %d of %d", n, enc, in.CompressedLength, in.Length, out.CompressedLength, out.Length)
		}
	}
}

// bomb is a ModelInferRequest whose raw_input_contents entry is n zero
// bytes, encoded by bombCodec from one zero buffer referenced over and
// over, so that the client never holds the message: only its compressed
// form, which is about a thousandth of it.
type bomb struct{ n int }

// bombCodec is the client's codec for a bomb (and protobuf for the rest).
type bombCodec struct{}

var zeros = make([]byte, 1<<20)

func (bombCodec) Marshal(v any) (mem.BufferSlice, error) {
	b, ok := v.(*bomb)
	if !ok {
		return encoding.GetCodecV2(grpcproto.Name).Marshal(v)
	}
	head, err := proto.Marshal(&inferencepb.ModelInferRequest{
		ModelName: "nb_UINT8",
		Inputs:    []*inferencepb.ModelInferRequest_InferInputTensor{in("INPUT0", "UINT8", int64(b.n))},
	})
	if err != nil {
		return nil, err
	}
	head = protowire.AppendTag(head, 7, protowire.BytesType)
	head = protowire.AppendVarint(head, uint64(b.n))
	out := mem.BufferSlice{mem.SliceBuffer(head)}
	for left := b.n; left > 0; left -= len(zeros) {
		out = append(out, mem.SliceBuffer(zeros[:min(left, len(zeros))]))
	}
	return out, nil
}

func (bombCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return encoding.GetCodecV2(grpcproto.Name).Unmarshal(data, v)
}

func (bombCodec) Name() string { return grpcproto.Name }

// TestDecompressionBomb sends a compressed ModelInfer of 32 MiB (32 KiB
// on the wire) to a server whose message limit is 1 MiB: it is
// refused RESOURCE_EXHAUSTED having inflated about the limit, not the
// bomb, and the server goes on serving.
func TestDecompressionBomb(t *testing.T) {
	const limit, size = 1 << 20, 32 << 20
	f := newFixture(t, setup{grpc: []grpc.ServerOption{grpc.MaxRecvMsgSize(limit)}})
	for _, name := range []string{"deflate", grpcgzip.Name} {
		t.Run(name, func(t *testing.T) {
			conn := f.dial(t, grpc.WithDefaultCallOptions(grpc.UseCompressor(name)))
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			var resp inferencepb.ModelInferResponse
			err := conn.Invoke(t.Context(), inferencepb.GRPCInferenceService_ModelInfer_FullMethodName, &bomb{n: size}, &resp, grpc.ForceCodecV2(bombCodec{}))
			runtime.ReadMemStats(&after)
			wantStatus(t, err, codes.ResourceExhausted, "after decompression larger than max 1048576")
			// Client and server together: the compressor's state, the
			// compressed message and the inflated megabyte.
			alloc := after.TotalAlloc - before.TotalAlloc
			if alloc > size/2 {
				t.Errorf("refusing the bomb allocated %d MiB", alloc>>20)
			}
			t.Logf("a %d MiB bomb refused at %d MiB: %.1f MiB allocated in all", size>>20, limit>>20, float64(alloc)/(1<<20))
			if _, err := inferencepb.NewGRPCInferenceServiceClient(conn).ServerLive(t.Context(), &inferencepb.ServerLiveRequest{}); err != nil {
				t.Errorf("after the bomb: %v", err)
			}
		})
	}
}

// TestInferResponseCompressionLevel checks the encodings of ModelInfer's
// and ModelStreamInfer's responses for each level, to a client that
// accepts gzip and deflate (grpc-go's client advertises every registered
// compressor), as grpc-core chooses them: none is identity even for a
// gzip request, low gzip, medium and high deflate. Without the option a
// response is in its request's encoding (grpc-go's default).
func TestInferResponseCompressionLevel(t *testing.T) {
	for _, tc := range []struct {
		level, request, want string
	}{
		{"", "", ""},
		{"", "gzip", "gzip"},
		{"none", "", "identity"},
		{"NONE", "gzip", "identity"},
		{"low", "", "gzip"},
		{"medium", "", "deflate"},
		{"high", "", "deflate"},
		{"High", "gzip", "deflate"},
	} {
		t.Run(tc.level+"/"+tc.request, func(t *testing.T) {
			var svc []grpcapi.Option
			if tc.level != "" {
				svc = append(svc, grpcapi.WithInferResponseCompressionLevel(tc.level))
			}
			f := newFixture(t, setup{svc: svc})
			var p payloads
			opts := []grpc.DialOption{grpc.WithStatsHandler(&p)}
			if tc.request != "" {
				opts = append(opts, grpc.WithDefaultCallOptions(grpc.UseCompressor(tc.request)))
			}
			c := inferencepb.NewGRPCInferenceServiceClient(f.dial(t, opts...))
			req := zerosRequest(1 << 14)

			resp, err := c.ModelInfer(t.Context(), req)
			if err != nil || !bytes.Equal(resp.GetRawOutputContents()[0], req.RawInputContents[0]) {
				t.Fatalf("ModelInfer: %v", err)
			}
			in, _, enc := p.last(t)
			checkEncoding(t, "ModelInfer", enc, in, tc.want)

			stream, err := c.ModelStreamInfer(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if err := stream.Send(req); err != nil {
				t.Fatal(err)
			}
			sr, err := stream.Recv()
			if err != nil || !bytes.Equal(sr.GetInferResponse().GetRawOutputContents()[0], req.RawInputContents[0]) {
				t.Fatalf("ModelStreamInfer: %v, %v", sr.GetErrorMessage(), err)
			}
			stream.CloseSend()
			if _, err := stream.Recv(); err != io.EOF {
				t.Fatalf("stream end: %v", err)
			}
			in, _, enc = p.last(t)
			checkEncoding(t, "ModelStreamInfer", enc, in, tc.want)

			// Other calls keep grpc-go's default.
			if _, err := c.ServerLive(t.Context(), &inferencepb.ServerLiveRequest{}); err != nil {
				t.Fatal(err)
			}
			if _, _, enc := p.last(t); enc != tc.request {
				t.Errorf("ServerLive answered in %q, want %q", enc, tc.request)
			}
		})
	}
}

// checkEncoding checks a response's encoding, named in its header (want
// "": none named) and seen in its payload's size.
func checkEncoding(t *testing.T, rpc, enc string, in *stats.InPayload, want string) {
	t.Helper()
	compressed := in.CompressedLength < in.Length/10
	if wantCompressed := want == "gzip" || want == "deflate"; compressed != wantCompressed || enc != want {
		t.Errorf("%s: response of %d bytes came as %d in %q, want %q", rpc, in.Length, in.CompressedLength, enc, want)
	}
}

func TestInferResponseCompressionLevelInvalid(t *testing.T) {
	srv := newFixture(t, setup{}).srv
	defer func() {
		if r := recover(); r == nil {
			t.Error("New accepted level \"max\"")
		}
	}()
	grpcapi.New(srv, grpcapi.WithInferResponseCompressionLevel("max"))
}

// BenchmarkDecompressionBomb measures what refusing bombs costs the
// process (client and server) at ServerOptions' limit, 2 GiB - 1 bytes:
// deflate-compressed ModelInfer calls of 3 GiB of zeros each (3 MiB on the
// wire), one or four at once. It is a measurement, not a timed test; run
// each case alone and read the process's peak RSS beside it:
//
//	go test -run '^$' -bench 'DecompressionBomb/1$' -benchtime 1x ./grpcapi/
func BenchmarkDecompressionBomb(b *testing.B) {
	for _, n := range []int{1, 4} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			f := newFixture(b, setup{})
			conn := f.dial(b, grpc.WithDefaultCallOptions(grpc.UseCompressor("deflate")))
			for b.Loop() {
				var before, after, collected runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				var wg sync.WaitGroup
				errs := make([]error, n)
				for i := range n {
					wg.Go(func() {
						var resp inferencepb.ModelInferResponse
						errs[i] = conn.Invoke(b.Context(), inferencepb.GRPCInferenceService_ModelInfer_FullMethodName, &bomb{n: 3 << 30}, &resp, grpc.ForceCodecV2(bombCodec{}))
					})
				}
				wg.Wait()
				runtime.ReadMemStats(&after)
				runtime.GC()
				runtime.GC()
				runtime.ReadMemStats(&collected)
				for _, err := range errs {
					wantStatus(b, err, codes.ResourceExhausted, "after decompression larger than max")
				}
				b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/(1<<20), "MiB-alloc/op")
				b.ReportMetric(float64(after.HeapSys)/(1<<20), "MiB-heap-sys")
				b.ReportMetric(float64(collected.HeapInuse)/(1<<20), "MiB-heap-after-2GC")
			}
		})
	}
}
