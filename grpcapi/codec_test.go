package grpcapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/grpcapi/inferencepb"
	"github.com/triton-go/triton/internal/testmodels"
)

// testCodec is the service's codec over pool, passing tensors of min bytes
// or more by reference.
func testCodec(pool mem.BufferPool, min int) codec {
	return codec{fallback: encoding.GetCodecV2(grpcproto.Name), pool: pool, min: min}
}

// randomRequest is a ModelInferRequest with some of every field, raw
// entries of the sizes given.
func randomRequest(rng *rand.Rand, sizes ...int) *inferencepb.ModelInferRequest {
	param := func() *inferencepb.InferParameter {
		switch rng.IntN(4) {
		case 0:
			return &inferencepb.InferParameter{ParameterChoice: &inferencepb.InferParameter_Int64Param{Int64Param: rng.Int64()}}
		case 1:
			return &inferencepb.InferParameter{ParameterChoice: &inferencepb.InferParameter_StringParam{StringParam: fmt.Sprint(rng.IntN(100))}}
		case 2:
			return &inferencepb.InferParameter{ParameterChoice: &inferencepb.InferParameter_BoolParam{BoolParam: true}}
		}
		return &inferencepb.InferParameter{ParameterChoice: &inferencepb.InferParameter_DoubleParam{DoubleParam: rng.Float64()}}
	}
	r := &inferencepb.ModelInferRequest{ModelName: "m" + fmt.Sprint(rng.IntN(10)), ModelVersion: "1", Id: fmt.Sprint(rng.Uint64())}
	if rng.IntN(2) == 0 {
		r.Parameters = map[string]*inferencepb.InferParameter{"sequence_id": param(), "p": param()}
	}
	for i := range sizes {
		in := &inferencepb.ModelInferRequest_InferInputTensor{Name: fmt.Sprintf("INPUT%d", i), Datatype: "FP32", Shape: []int64{1, int64(sizes[i] / 4)}}
		if rng.IntN(3) == 0 {
			in.Parameters = map[string]*inferencepb.InferParameter{"x": param()}
		}
		r.Inputs = append(r.Inputs, in)
		raw := make([]byte, sizes[i])
		for k := range raw {
			raw[k] = byte(rng.Uint32())
		}
		r.RawInputContents = append(r.RawInputContents, raw)
	}
	if rng.IntN(2) == 0 {
		r.Outputs = []*inferencepb.ModelInferRequest_InferRequestedOutputTensor{{Name: "OUTPUT0", Parameters: map[string]*inferencepb.InferParameter{"classification": param()}}}
	}
	return r
}

// codecCorpus is encoded requests for the decoding tests: well-formed ones
// with tensors of many sizes, and variations protobuf treats specially
// (unknown fields of every wire type, raw_input_contents with the wrong
// wire type, fields out of order, repeated scalars, truncations, bad
// UTF-8, random bytes).
func codecCorpus(t testing.TB) [][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	var corpus [][]byte
	add := func(b []byte) { corpus = append(corpus, b) }
	for _, sizes := range [][]int{nil, {0}, {64, 64}, {1, 7, 0, 3}, {40000}, {minAlias, 5}, {100000, 0, 70000}} {
		b, err := proto.Marshal(randomRequest(rng, sizes...))
		if err != nil {
			t.Fatal(err)
		}
		add(b)
		// Unknown fields, of each wire type, before and after.
		u := protowire.AppendTag(nil, 99, protowire.VarintType)
		u = protowire.AppendVarint(u, 5)
		u = protowire.AppendTag(u, 98, protowire.Fixed32Type)
		u = protowire.AppendFixed32(u, 7)
		u = protowire.AppendTag(u, 97, protowire.BytesType)
		u = protowire.AppendBytes(u, []byte("unknown"))
		u = protowire.AppendTag(u, 96, protowire.StartGroupType)
		u = protowire.AppendTag(u, 96, protowire.EndGroupType)
		add(append(slices.Clone(u), b...))
		add(append(slices.Clone(b), u...))
		// raw_input_contents as a varint: an unknown field to protobuf.
		v := protowire.AppendTag(slices.Clone(b), rawInputField, protowire.VarintType)
		add(protowire.AppendVarint(v, 3))
		// A second model_name (the last one wins) and an entry before it.
		w := protowire.AppendTag(slices.Clone(b), rawInputField, protowire.BytesType)
		w = protowire.AppendBytes(w, bytes.Repeat([]byte{9}, 50000))
		w = protowire.AppendTag(w, 1, protowire.BytesType)
		add(protowire.AppendString(w, "second"))
		// Truncated, and flipped bytes.
		for _, cut := range []int{1, 2, len(b) / 2, len(b) - 1} {
			if cut > 0 && cut < len(b) {
				add(b[:cut])
			}
		}
		for range 4 {
			if len(b) > 0 {
				f := slices.Clone(b)
				f[rng.IntN(len(f))] ^= byte(1 + rng.IntN(255))
				add(f)
			}
		}
	}
	// A non-minimal varint length, invalid UTF-8 in model_name, field 0,
	// an overlong varint.
	add([]byte{0x3a, 0x83, 0x00, 1, 2, 3})
	add([]byte{0x0a, 0x02, 0xff, 0xfe})
	add([]byte{0x02, 0x00})
	add(append([]byte{0x3a}, bytes.Repeat([]byte{0xff}, 11)...))
	for range 20 {
		r := make([]byte, rng.IntN(64))
		for k := range r {
			r[k] = byte(rng.Uint32())
		}
		add(r)
	}
	return corpus
}

// TestCodecDecodesAsProtobuf: every message of the corpus decodes through
// the codec (tensors by reference whatever their size, or from the usual
// threshold; from the transport's buffers in chunks of many sizes) exactly
// as proto.Unmarshal decodes it, or fails where it fails; tensors passed by
// reference lie in the request's buffer, those of 64 bytes or more 8-byte
// aligned.
func TestCodecDecodesAsProtobuf(t *testing.T) {
	for i, data := range codecCorpus(t) {
		want := new(inferencepb.ModelInferRequest)
		wantErr := proto.Unmarshal(data, want)
		for _, min := range []int{0, minAlias} {
			chunkSizes := []int{1000, 16384, len(data) + 1}
			if len(data) < 4096 {
				chunkSizes = append(chunkSizes, 1, 7)
			}
			for _, chunk := range chunkSizes {
				r := new(received)
				err := testCodec(arenas, min).Unmarshal(chunks(data, chunk), r)
				if err == nil {
					err = r.malformed
				}
				if (err != nil) != (wantErr != nil) {
					t.Fatalf("message %d, min %d, chunks of %d: error %v, protobuf's %v", i, min, chunk, err, wantErr)
				}
				if err != nil {
					continue
				}
				if !proto.Equal(&r.ModelInferRequest, want) {
					t.Fatalf("message %d, min %d, chunks of %d: decoded\n%v\nprotobuf decodes\n%v", i, min, chunk, &r.ModelInferRequest, want)
				}
				if r.held != nil {
					h := r.held.ReadOnlyData()
					for k, e := range r.RawInputContents {
						p := uintptr(unsafe.Pointer(unsafe.SliceData(e)))
						if len(e) > 0 && ((len(e) >= alignFrom && p%rawAlign != 0) || reference(e, r.held).Len() != len(e) || !inside(e, h)) {
							t.Errorf("message %d: entry %d (%d bytes) at %#x is not an aligned slice of the request's buffer", i, k, len(e), p)
						}
						if cap(e) != len(e) {
							t.Errorf("message %d: entry %d has capacity %d beyond its %d bytes", i, k, cap(e), len(e))
						}
					}
				} else if min == 0 && len(want.GetRawInputContents()) > 0 && len(want.GetRawInputContents()[0]) > 0 && isPlain(data) {
					t.Errorf("message %d: tensors not passed by reference", i)
				}
				r.release()
			}
		}
	}
}

// isPlain reports whether every top-level field of data is a valid
// length-delimited one (the messages the codec lays out itself).
func isPlain(data []byte) bool {
	for len(data) > 0 {
		num, typ, n := protowire.ConsumeTag(data)
		if n < 0 || typ != protowire.BytesType || !num.IsValid() {
			return false
		}
		data = data[n:]
		_, n = protowire.ConsumeBytes(data)
		if n < 0 {
			return false
		}
		data = data[n:]
	}
	return true
}

// inside reports whether e lies in h's memory.
func inside(e, h []byte) bool {
	p, start := uintptr(unsafe.Pointer(unsafe.SliceData(e))), uintptr(unsafe.Pointer(unsafe.SliceData(h)))
	return p >= start && p+uintptr(len(e)) <= start+uintptr(len(h))
}

// randomResponse is a ModelInferResponse with raw entries of the sizes
// given and at most one parameter (so that its encoding is deterministic).
func randomResponse(rng *rand.Rand, sizes ...int) *inferencepb.ModelInferResponse {
	m := &inferencepb.ModelInferResponse{ModelName: "m", ModelVersion: "3", Id: fmt.Sprint(rng.Uint64())}
	if rng.IntN(2) == 0 {
		m.Parameters = map[string]*inferencepb.InferParameter{"triton_final_response": {ParameterChoice: &inferencepb.InferParameter_BoolParam{BoolParam: true}}}
	}
	for i, n := range sizes {
		m.Outputs = append(m.Outputs, &inferencepb.ModelInferResponse_InferOutputTensor{Name: fmt.Sprintf("OUTPUT%d", i), Datatype: "UINT8", Shape: []int64{int64(n)}})
		raw := make([]byte, n)
		for k := range raw {
			raw[k] = byte(rng.Uint32())
		}
		m.RawOutputContents = append(m.RawOutputContents, raw)
	}
	return m
}

// TestCodecEncodesAsProtobuf: the service's responses, plain and in stream
// responses, encode through the codec to the bytes proto.Marshal makes,
// with the large outputs referenced rather than copied.
func TestCodecEncodesAsProtobuf(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	c := testCodec(arenas, minAlias)
	for _, sizes := range [][]int{nil, {0}, {16}, {2000, 0, 1}, {minAlias}, {100000, 3, 50000}} {
		m := randomResponse(rng, sizes...)
		stream := &inferencepb.ModelStreamInferResponse{InferResponse: m}
		failed := &inferencepb.ModelStreamInferResponse{ErrorMessage: "failed", InferResponse: &inferencepb.ModelInferResponse{ModelName: "m"}}
		for _, msg := range []proto.Message{m, stream, failed, &inferencepb.ModelStreamInferResponse{ErrorMessage: "x"}} {
			want, err := proto.Marshal(msg)
			if err != nil {
				t.Fatal(err)
			}
			out, err := c.Marshal(&outgoing{Message: msg})
			if err != nil {
				t.Fatal(err)
			}
			if got := out.Materialize(); !bytes.Equal(got, want) {
				t.Errorf("%T with outputs %v: encoded %d bytes, protobuf %d, different", msg, sizes, len(got), len(want))
			}
			for k, raw := range m.RawOutputContents {
				if len(raw) >= inlineOutput && (msg == m || msg == stream) && !slices.ContainsFunc(out, func(b mem.Buffer) bool {
					return unsafe.SliceData(b.ReadOnlyData()) == unsafe.SliceData(raw)
				}) {
					t.Errorf("%T: output %d (%d bytes) was copied", msg, k, len(raw))
				}
			}
			out.Free()
		}
	}
}

// TestCodecKnowsTheMessages: the messages the codec lays out have the
// fields it knows of, so that a change of the .proto cannot go unnoticed
// (appendResponse copies every field of a response but its tensors).
func TestCodecKnowsTheMessages(t *testing.T) {
	fields := func(m proto.Message) []string {
		var s []string
		fs := m.ProtoReflect().Descriptor().Fields()
		for i := range fs.Len() {
			s = append(s, fmt.Sprintf("%d:%s", fs.Get(i).Number(), fs.Get(i).Name()))
		}
		return s
	}
	for _, c := range []struct {
		m    proto.Message
		want []string
	}{
		{&inferencepb.ModelInferResponse{}, []string{"1:model_name", "2:model_version", "3:id", "4:parameters", "5:outputs", "6:raw_output_contents"}},
		{&inferencepb.ModelStreamInferResponse{}, []string{"1:error_message", "2:infer_response"}},
	} {
		if got := fields(c.m); !slices.Equal(got, c.want) {
			t.Errorf("%T has fields %v, the codec knows %v", c.m, got, c.want)
		}
	}
	d := (&inferencepb.ModelInferRequest{}).ProtoReflect().Descriptor().Fields().ByNumber(rawInputField)
	if d == nil || d.Name() != "raw_input_contents" || d.Kind() != protoreflect.BytesKind || !d.IsList() {
		t.Errorf("ModelInferRequest field %d is %v, not repeated bytes raw_input_contents", rawInputField, d)
	}
}

// countingPool is a mem.BufferPool that counts what comes back to it.
type countingPool struct {
	gets, puts atomic.Int32
}

func (p *countingPool) Get(n int) *[]byte {
	p.gets.Add(1)
	b := make([]byte, n)
	return &b
}

func (p *countingPool) Put(*[]byte) { p.puts.Add(1) }

// TestCodecOwnership: a request's buffer goes back to the pool exactly
// once: when its call fails, when its response has been encoded (no output
// in it), or once the transport has freed the encoded buffers that
// reference it (an output that is its input).
func TestCodecOwnership(t *testing.T) {
	data, err := proto.Marshal(randomRequest(rand.New(rand.NewPCG(5, 6)), 4096, 8192))
	if err != nil {
		t.Fatal(err)
	}
	decode := func(t *testing.T, p *countingPool) *received {
		r := new(received)
		if err := testCodec(p, 1024).Unmarshal(chunks(data, 1000), r); err != nil {
			t.Fatal(err)
		}
		if r.held == nil || p.gets.Load() != 1 {
			t.Fatalf("tensors not in a buffer of the pool (%d gets)", p.gets.Load())
		}
		return r
	}
	t.Run("failed", func(t *testing.T) {
		p := new(countingPool)
		r := decode(t, p)
		r.release()
		r.release()
		if p.puts.Load() != 1 {
			t.Errorf("%d puts, want 1", p.puts.Load())
		}
	})
	t.Run("answered", func(t *testing.T) {
		p := new(countingPool)
		r := decode(t, p)
		resp := randomResponse(rand.New(rand.NewPCG(7, 8)), 50000)
		o := r.answer(resp, resp.RawOutputContents)
		if r.held != nil {
			t.Fatal("the request kept its buffer")
		}
		out, err := testCodec(p, 1024).Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		if p.puts.Load() != 1 {
			t.Errorf("%d puts after encoding, want 1", p.puts.Load())
		}
		out.Free()
		if p.puts.Load() != 1 {
			t.Errorf("%d puts, want 1", p.puts.Load())
		}
	})
	t.Run("mirrored", func(t *testing.T) {
		p := new(countingPool)
		r := decode(t, p)
		resp := &inferencepb.ModelInferResponse{ModelName: "m", RawOutputContents: slices.Clone(r.RawInputContents)}
		o := r.answer(resp, resp.RawOutputContents)
		out, err := testCodec(p, 1024).Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		if p.puts.Load() != 0 {
			t.Fatal("the buffer went back while the encoded response references it")
		}
		want, _ := proto.Marshal(resp)
		if !bytes.Equal(out.Materialize(), want) {
			t.Error("encoded response differs from protobuf's")
		}
		out.Free()
		if p.puts.Load() != 1 {
			t.Errorf("%d puts after the transport freed the response, want 1", p.puts.Load())
		}
	})
}

// TestArenaClasses: a buffer of the pool is at least as long as asked and
// at most 25% longer, and every size class has one size.
func TestArenaClasses(t *testing.T) {
	sizes := map[int]int{}
	for _, n := range []int{1, 8, 9, 10, 11, 15, 16, 17, 100, 1000, 4096, 4097, 1 << 20, 16<<20 + 300, maxMessageSize, maxMessageSize + maxMessageSize/2} {
		c, size := class(n)
		if size < n || (n > 8 && size > n+n/4) {
			t.Errorf("class of %d bytes: %d bytes", n, size)
		}
		if s, ok := sizes[c]; ok && s != size {
			t.Errorf("class %d: sizes %d and %d", c, s, size)
		}
		sizes[c] = size
		if n > 1<<25 {
			continue
		}
		b := arenas.Get(n)
		if len(*b) != n || cap(*b) != size {
			t.Errorf("Get(%d): len %d cap %d, want cap %d", n, len(*b), cap(*b), size)
		}
		arenas.Put(b)
	}
}

// mirrorService is the service over a server with "id", an identity model
// (FP32 [-1], batching): its output is its input's memory.
func mirrorService(t *testing.T) *Service {
	t.Helper()
	srv := testmodels.NewServer(t, map[string]string{
		"id/config.pbtxt": `name: "id" backend: "mirror" max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ -1 ] } ]`,
		"id/1/model": "",
	}, triton.WithBackend("mirror", testmodels.Mirror))
	return New(srv)
}

// mirrorRequest is an encoded request to "id" with n bytes of tensor,
// and the response the model answers it with.
func mirrorRequest(t *testing.T, id string, n int) (data []byte, want *inferencepb.ModelInferResponse) {
	t.Helper()
	raw := make([]byte, n)
	for i := range raw {
		raw[i] = byte(i + len(id))
	}
	shape := []int64{1, int64(n / 4)}
	data, err := proto.Marshal(&inferencepb.ModelInferRequest{
		ModelName: "id", Id: id,
		Inputs:           []*inferencepb.ModelInferRequest_InferInputTensor{{Name: "INPUT0", Datatype: "FP32", Shape: shape}},
		RawInputContents: [][]byte{raw},
	})
	if err != nil {
		t.Fatal(err)
	}
	return data, &inferencepb.ModelInferResponse{
		ModelName: "id", ModelVersion: "1", Id: id,
		Outputs:           []*inferencepb.ModelInferResponse_InferOutputTensor{{Name: "OUTPUT0", Datatype: "FP32", Shape: shape}},
		RawOutputContents: [][]byte{raw},
	}
}

// checkEncoded checks an encoded response against want.
func checkEncoded(t *testing.T, out mem.BufferSlice, want proto.Message) {
	t.Helper()
	got := want.ProtoReflect().New().Interface()
	if err := proto.Unmarshal(out.Materialize(), got); err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got, want) {
		t.Errorf("response\n%v\nwant\n%v", got, want)
	}
}

// TestModelInferHandler: Register serves ModelInfer with the service's
// handler, which receives a large request into the codec's buffer and
// hands that buffer to its response (an identity model's output is a
// slice of it), or gives it back when the call fails; behind an
// interceptor that answers with a message of its own the buffer is left
// to the garbage collector.
func TestModelInferHandler(t *testing.T) {
	i := slices.IndexFunc(serviceDesc.Methods, func(m grpc.MethodDesc) bool { return m.MethodName == "ModelInfer" })
	if i < 0 || reflect.ValueOf(serviceDesc.Methods[i].Handler).Pointer() != reflect.ValueOf(modelInferHandler).Pointer() {
		t.Fatal("Register does not serve ModelInfer with modelInferHandler")
	}
	s := mirrorService(t)
	data, want := mirrorRequest(t, "a", 64<<10)
	call := func(t *testing.T, data []byte, interceptor grpc.UnaryServerInterceptor) (any, *countingPool, error) {
		p := new(countingPool)
		c := testCodec(p, minAlias)
		reply, err := modelInferHandler(s, context.Background(), func(v any) error { return c.Unmarshal(chunks(data, 16384), v) }, interceptor)
		if p.gets.Load() != 1 {
			t.Fatalf("%d buffers taken from the pool, want 1", p.gets.Load())
		}
		return reply, p, err
	}
	pass := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		return h(ctx, req)
	}
	for name, interceptor := range map[string]grpc.UnaryServerInterceptor{"direct": nil, "interceptor": pass} {
		t.Run(name, func(t *testing.T) {
			reply, p, err := call(t, data, interceptor)
			if err != nil {
				t.Fatal(err)
			}
			o, ok := reply.(*outgoing)
			if !ok || o.held == nil {
				t.Fatalf("reply %T does not carry the request's buffer", reply)
			}
			out, err := testCodec(p, minAlias).Marshal(o)
			if err != nil {
				t.Fatal(err)
			}
			checkEncoded(t, out, want)
			if p.puts.Load() != 0 {
				t.Fatal("the request's buffer went back while the encoded response references it")
			}
			out.Free()
			if p.puts.Load() != 1 {
				t.Errorf("%d puts once the response was written, want 1", p.puts.Load())
			}
		})
	}
	t.Run("failed", func(t *testing.T) {
		bad := slices.Clone(data)
		bad = protowire.AppendTag(bad, 2, protowire.BytesType) // model_version "x"
		bad = protowire.AppendString(bad, "x")
		_, p, err := call(t, bad, nil)
		if status.Code(err) != codes.InvalidArgument {
			t.Fatalf("version x: %v, want InvalidArgument", err)
		}
		if p.puts.Load() != 1 {
			t.Errorf("%d puts after the failed call, want 1", p.puts.Load())
		}
	})
	t.Run("replaced", func(t *testing.T) {
		replace := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			resp, err := h(ctx, req)
			if err != nil {
				return nil, err
			}
			return proto.Clone(resp.(proto.Message)), nil
		}
		reply, p, err := call(t, data, replace)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := reply.(*outgoing); ok {
			t.Fatal("the interceptor's own answer took the request's buffer")
		}
		if !proto.Equal(reply.(proto.Message), want) || p.puts.Load() != 0 {
			t.Errorf("answer %v, %d puts; want the identity's answer and the buffer left alone", reply, p.puts.Load())
		}
	})
}

// fakeStream is a ModelStreamInfer call without a transport: it hands the
// service its requests through the codec, as the transport's buffers, and
// keeps what the codec encodes of its responses, as the transport does
// until it has written them.
type fakeStream struct {
	grpc.ServerStream // unused methods
	c                 codec
	reqs              [][]byte
	mu                sync.Mutex
	sent              []mem.BufferSlice
}

func (f *fakeStream) Context() context.Context { return context.Background() }

func (f *fakeStream) RecvMsg(m any) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.reqs) == 0 {
		return io.EOF
	}
	data := f.reqs[0]
	f.reqs = f.reqs[1:]
	return f.c.Unmarshal(chunks(data, 16384), m)
}

func (f *fakeStream) SendMsg(m any) error {
	out, err := f.c.Marshal(m)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, out)
	return nil
}

// TestStreamInferOwnership: each large request of a stream is received
// into the codec's buffer, which goes back to the pool once its response
// has been written, or at once for a request that fails.
func TestStreamInferOwnership(t *testing.T) {
	s := mirrorService(t)
	p := new(countingPool)
	f := &fakeStream{c: testCodec(p, minAlias)}
	want := map[string]*inferencepb.ModelInferResponse{}
	for i := range 6 {
		data, w := mirrorRequest(t, fmt.Sprint(i), 40<<10+4*i)
		w.Parameters = map[string]*inferencepb.InferParameter{"triton_final_response": {ParameterChoice: &inferencepb.InferParameter_BoolParam{BoolParam: true}}}
		want[w.Id] = w
		f.reqs = append(f.reqs, data)
	}
	bad, _ := mirrorRequest(t, "bad", 40<<10)
	f.reqs = append(f.reqs, protowire.AppendString(protowire.AppendTag(bad, 2, protowire.BytesType), "x"))
	if err := s.streamInfer(f); err != nil {
		t.Fatal(err)
	}
	if p.gets.Load() != 7 || p.puts.Load() != 1 {
		t.Fatalf("%d buffers taken, %d back before the responses were written; want 7 and 1 (the failed request's)", p.gets.Load(), p.puts.Load())
	}
	if len(f.sent) != 7 {
		t.Fatalf("%d responses, want 7", len(f.sent))
	}
	for _, out := range f.sent {
		var r inferencepb.ModelStreamInferResponse
		if err := proto.Unmarshal(out.Materialize(), &r); err != nil {
			t.Fatal(err)
		}
		if id := r.GetInferResponse().GetId(); id == "bad" {
			if r.GetErrorMessage() == "" {
				t.Error("the failed request was answered without an error message")
			}
		} else if !proto.Equal(r.GetInferResponse(), want[id]) || r.GetErrorMessage() != "" {
			t.Errorf("response %q: %v", id, &r)
		}
		out.Free()
	}
	if p.puts.Load() != 7 {
		t.Errorf("%d buffers back once the responses were written, want 7", p.puts.Load())
	}
}

// BenchmarkCodec decodes a request with one tensor, as the transport hands
// it over (16 KiB buffers), and encodes the answer of an identity model
// (its output is the input's memory), through grpc-go's protobuf codec and
// through the service's, for a 64-byte and a 16 MiB tensor. No transport:
// what the codecs themselves cost.
//
//	go test -run '^$' -bench Codec -benchmem ./grpcapi/
func BenchmarkCodec(b *testing.B) {
	protoCodec := encoding.GetCodecV2(grpcproto.Name)
	for _, n := range []int{64, 16 << 20} {
		raw := make([]byte, n)
		data, err := proto.Marshal(&inferencepb.ModelInferRequest{
			ModelName:        "id",
			Inputs:           []*inferencepb.ModelInferRequest_InferInputTensor{{Name: "INPUT0", Datatype: "FP32", Shape: []int64{1, int64(n / 4)}}},
			RawInputContents: [][]byte{raw},
		})
		if err != nil {
			b.Fatal(err)
		}
		in := chunks(data, 16384)
		answer := func(req *inferencepb.ModelInferRequest) *inferencepb.ModelInferResponse {
			return &inferencepb.ModelInferResponse{ModelName: "id", ModelVersion: "1",
				Outputs:           []*inferencepb.ModelInferResponse_InferOutputTensor{{Name: "OUTPUT0", Datatype: "FP32", Shape: req.Inputs[0].Shape}},
				RawOutputContents: req.RawInputContents}
		}
		b.Run(fmt.Sprintf("proto/%d", n), func(b *testing.B) {
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				req := new(inferencepb.ModelInferRequest)
				if err := protoCodec.Unmarshal(in, req); err != nil {
					b.Fatal(err)
				}
				out, err := protoCodec.Marshal(answer(req))
				if err != nil {
					b.Fatal(err)
				}
				out.Free()
			}
		})
		b.Run(fmt.Sprintf("codec/%d", n), func(b *testing.B) {
			c := testCodec(arenas, minAlias)
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				r := new(received)
				if err := c.Unmarshal(in, r); err != nil {
					b.Fatal(err)
				}
				resp := answer(&r.ModelInferRequest)
				out, err := c.Marshal(r.answer(resp, resp.RawOutputContents))
				if err != nil {
					b.Fatal(err)
				}
				out.Free()
			}
		})
	}
}

// TestArenaHugeNotPooled checks that the pool of requests' buffers lets
// buffers above maxPooled go rather than keep them.
func TestArenaHugeNotPooled(t *testing.T) {
	for _, n := range []int{maxPooled + 1, 2 * maxPooled} {
		c, size := class(n)
		b := arenas.Get(n)
		if len(*b) != n {
			t.Fatalf("Get(%d): %d bytes", n, len(*b))
		}
		arenas.Put(b)
		exact := make([]byte, size) // a buffer of the class's very size
		arenas.Put(&exact)
		if got := arenas.classes[c].Get(); got != nil {
			t.Errorf("a buffer of %d bytes was pooled", cap(*got.(*[]byte)))
		}
	}
}
