package grpcapi_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/grpcapi/inferencepb"
	"github.com/triton-go/triton/tensor"
)

type inferStream = grpc.BidiStreamingClient[inferencepb.ModelInferRequest, inferencepb.ModelStreamInferResponse]

// openStream starts a ModelStreamInfer call.
func openStream(t *testing.T, ctx context.Context, f *fixture) inferStream {
	t.Helper()
	stream, err := f.client.ModelStreamInfer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return stream
}

func send(t *testing.T, stream inferStream, req *inferencepb.ModelInferRequest) {
	t.Helper()
	if err := stream.Send(req); err != nil {
		t.Fatalf("Send: %v", err)
	}
}

func recv(t *testing.T, stream inferStream) *inferencepb.ModelStreamInferResponse {
	t.Helper()
	resp, err := stream.Recv()
	if err != nil {
		t.Fatalf("Recv: %v", err)
	}
	return resp
}

// wantFinal checks the triton_final_response parameter of a stream
// response.
func wantFinal(t *testing.T, r *inferencepb.ModelInferResponse) {
	t.Helper()
	p, ok := r.GetParameters()["triton_final_response"]
	if !ok || len(r.GetParameters()) != 1 {
		t.Fatalf("response parameters %v, want only triton_final_response", r.GetParameters())
	}
	if v, ok := p.GetParameterChoice().(*inferencepb.InferParameter_BoolParam); !ok || !v.BoolParam {
		t.Errorf("triton_final_response = %v, want bool_param true", p)
	}
}

// wantEOF closes the sending side and expects the stream to end cleanly.
func wantEOF(t *testing.T, stream inferStream) {
	t.Helper()
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if r, err := stream.Recv(); err != io.EOF {
		t.Fatalf("Recv after the last response: %v, %v; want io.EOF", r, err)
	}
}

// jitter is a model that sleeps a little, differently for each request,
// and answers its input [sequence, index]; it records the order in which
// each sequence's requests ran.
type jitter struct {
	mu    sync.Mutex
	order map[int32][]int32
}

func (j *jitter) backend() backend.Func {
	return func(ctx context.Context, b *backend.Batch) error {
		for _, r := range b.Requests {
			in, _ := r.Input("INPUT0")
			v, err := tensor.View[int32](in)
			if err != nil {
				return err
			}
			j.mu.Lock()
			j.order[v[0]] = append(j.order[v[0]], v[1])
			j.mu.Unlock()
			time.Sleep(time.Duration((v[0]*7+v[1]*13)%5) * 300 * time.Microsecond)
			o := in
			o.Name = "OUTPUT0"
			r.SetOutput(o)
		}
		return nil
	}
}

// TestModelStreamInferSequences interleaves requests of several sequences
// (integer and string ids) and requests outside any: each sequence's
// requests run and are answered in order, and every request is answered
// once, with its id, model and version, before the stream ends.
func TestModelStreamInferSequences(t *testing.T) {
	files := repo()
	files["jitter/config.pbtxt"] = `name: "jitter" backend: "jitter" max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 2 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 2 ] } ]
instance_group [ { count: 8 kind: KIND_CPU } ]`
	files["jitter/1/model"] = ""
	j := &jitter{order: map[int32][]int32{}}
	f := newFixture(t, setup{files: files, server: []triton.Option{triton.WithBackend("jitter", j.backend())}})
	stream := openStream(t, t.Context(), f)

	const perSeq = 20
	seqIDs := []any{1, 2, 3, "str-seq"} // sequence k has the value k+1 in INPUT0[0]; 0: no sequence
	var sent int
	for i := range perSeq {
		for k, id := range append(slices.Clone(seqIDs), nil) {
			p := params("sequence_id", id, "sequence_start", i == 0, "sequence_end", i == perSeq-1)
			if id == nil {
				p = nil
			}
			seq := int32(k + 1)
			if id == nil {
				seq = 0
			}
			send(t, stream, &inferencepb.ModelInferRequest{
				ModelName: "jitter", Id: fmt.Sprintf("%d-%d", seq, i), Parameters: p,
				Inputs:           []*inferencepb.ModelInferRequest_InferInputTensor{in("INPUT0", "INT32", 2)},
				RawInputContents: [][]byte{raw(seq, int32(i))},
			})
			sent++
		}
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	answered := map[int32][]int32{}
	for range sent {
		resp := recv(t, stream)
		if resp.GetErrorMessage() != "" {
			t.Fatalf("error %q", resp.GetErrorMessage())
		}
		r := resp.GetInferResponse()
		wantFinal(t, r)
		var seq, i int32
		if _, err := fmt.Sscanf(r.GetId(), "%d-%d", &seq, &i); err != nil {
			t.Fatalf("id %q: %v", r.GetId(), err)
		}
		if r.GetModelName() != "jitter" || r.GetModelVersion() != "1" || !bytes.Equal(r.GetRawOutputContents()[0], raw(seq, i)) {
			t.Errorf("response %q: %q %q %v", r.GetId(), r.GetModelName(), r.GetModelVersion(), r.GetRawOutputContents())
		}
		answered[seq] = append(answered[seq], i)
	}
	if r, err := stream.Recv(); err != io.EOF {
		t.Fatalf("Recv after the last response: %v, %v; want io.EOF", r, err)
	}
	inOrder := make([]int32, perSeq)
	for i := range inOrder {
		inOrder[i] = int32(i)
	}
	for seq := range int32(len(seqIDs) + 1) {
		got := answered[seq]
		if seq == 0 {
			slices.Sort(got) // outside sequences: any order
		}
		if !slices.Equal(got, inOrder) {
			t.Errorf("sequence %d answered in order %v", seq, got)
		}
		if j.mu.Lock(); seq > 0 && !slices.Equal(j.order[seq], inOrder) {
			t.Errorf("sequence %d ran in order %v", seq, j.order[seq])
		}
		j.mu.Unlock()
	}
}

// TestModelStreamInferConcurrent checks that a request does not wait for
// one sent before it that is still running, and that a client closing its
// side still gets every answer.
func TestModelStreamInferConcurrent(t *testing.T) {
	f := newFixture(t, setup{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	stream := openStream(t, ctx, f)
	send(t, stream, blockRequest("blocked"))
	waitStarted(t, f.block)
	req := simpleRequest()
	req.Id = "quick"
	send(t, stream, req)
	if r := recv(t, stream).GetInferResponse(); r.GetId() != "quick" || len(r.GetRawOutputContents()) != 2 {
		t.Fatalf("first response %q with %d outputs, want the simple model's", r.GetId(), len(r.GetRawOutputContents()))
	}
	cancel()
	if _, err := stream.Recv(); err == nil {
		t.Fatal("Recv after cancel succeeded")
	} else {
		wantStatus(t, err, codes.Canceled)
	}
	waitBlocked(t, f.block, context.Canceled)
}

// TestModelStreamInferInBandError checks that failed requests are answered
// in band and the stream goes on.
func TestModelStreamInferInBandError(t *testing.T) {
	f := newFixture(t, setup{})
	stream := openStream(t, t.Context(), f)
	send(t, stream, &inferencepb.ModelInferRequest{ModelName: "nope", ModelVersion: "3", Id: "bad"})
	bad := recv(t, stream)
	missing := simpleRequest()
	missing.Id, missing.RawInputContents = "missing", missing.RawInputContents[:1]
	send(t, stream, missing)
	incomplete := recv(t, stream)
	good := simpleRequest()
	good.Id = "good"
	send(t, stream, good)
	ok := recv(t, stream)
	wantEOF(t, stream)

	for _, tc := range []struct {
		resp                *inferencepb.ModelStreamInferResponse
		id, model, ver, msg string
	}{
		{bad, "bad", "nope", "3", "Request for unknown model: 'nope' is not found"},
		{incomplete, "missing", "simple", "", "unable to find data for input tensor 'INPUT1' for model 'simple' in request."},
	} {
		r := tc.resp.GetInferResponse()
		if tc.resp.GetErrorMessage() != tc.msg {
			t.Errorf("error_message %q, want %q", tc.resp.GetErrorMessage(), tc.msg)
		}
		if r.GetId() != tc.id || r.GetModelName() != tc.model || r.GetModelVersion() != tc.ver || len(r.GetOutputs()) != 0 || len(r.GetRawOutputContents()) != 0 {
			t.Errorf("error response %v, want only id %q, model %q, version %q", r, tc.id, tc.model, tc.ver)
		}
		wantFinal(t, r)
	}
	if ok.GetErrorMessage() != "" || ok.GetInferResponse().GetId() != "good" || len(ok.GetInferResponse().GetOutputs()) != 2 {
		t.Errorf("good response %v", ok)
	}
	wantFinal(t, ok.GetInferResponse())
}

// TestModelStreamInferGRPCError checks that with triton_grpc_error the
// first failure ends the stream with its status and cancels the requests
// still running.
func TestModelStreamInferGRPCError(t *testing.T) {
	f := newFixture(t, setup{})
	ctx := metadata.AppendToOutgoingContext(t.Context(), "triton_grpc_error", "true")
	stream := openStream(t, ctx, f)
	good := simpleRequest()
	send(t, stream, good)
	if r := recv(t, stream); r.GetErrorMessage() != "" {
		t.Fatalf("error %q", r.GetErrorMessage())
	}
	send(t, stream, blockRequest("blocked"))
	waitStarted(t, f.block)
	send(t, stream, &inferencepb.ModelInferRequest{ModelName: "nope", Id: "bad"})
	_, err := stream.Recv()
	wantStatus(t, err, codes.InvalidArgument, "Request for unknown model: 'nope' is not found")
	waitBlocked(t, f.block, context.Canceled)

	// A version that does not exist: NOT_FOUND.
	stream = openStream(t, ctx, f)
	bad := simpleRequest()
	bad.ModelVersion = "9"
	send(t, stream, bad)
	_, err = stream.Recv()
	wantStatus(t, err, codes.NotFound, "Request for unknown model: 'simple' version 9 is not found")
}

// TestModelStreamInferCancel checks that a client cancelling the stream
// cancels the requests in flight, including those queued behind a running
// request of their sequence, and ends the call.
func TestModelStreamInferCancel(t *testing.T) {
	f := newFixture(t, setup{})
	ctx, cancel := context.WithCancel(t.Context())
	stream := openStream(t, ctx, f)
	for i := range 3 {
		req := blockRequest(fmt.Sprint(i))
		req.Parameters = params("sequence_id", 77)
		send(t, stream, req)
	}
	send(t, stream, blockRequest("other")) // outside the sequence: waits for the block model's one instance
	waitStarted(t, f.block)
	cancel()
	_, err := stream.Recv()
	wantStatus(t, err, codes.Canceled)
	waitBlocked(t, f.block, context.Canceled)
}

// TestModelStreamInferDecoupled checks that decoupled models, refused by
// ModelInfer, are served on the stream.
func TestModelStreamInferDecoupled(t *testing.T) {
	f := newFixture(t, setup{})
	stream := openStream(t, t.Context(), f)
	send(t, stream, &inferencepb.ModelInferRequest{
		ModelName: "decoupled", Id: "d", Parameters: params("triton_enable_empty_final_response", true),
		Inputs:           []*inferencepb.ModelInferRequest_InferInputTensor{in("INPUT0", "INT32", 1)},
		RawInputContents: [][]byte{raw[int32](9)},
	})
	resp := recv(t, stream)
	r := resp.GetInferResponse()
	if resp.GetErrorMessage() != "" || r.GetId() != "d" || !bytes.Equal(r.GetRawOutputContents()[0], raw[int32](9)) {
		t.Fatalf("response %v", resp)
	}
	wantFinal(t, r)
	wantEOF(t, stream)
}

// TestModelStreamInferMany sends more requests than the stream keeps in
// flight, reading concurrently; every one is answered.
func TestModelStreamInferMany(t *testing.T) {
	f := newFixture(t, setup{})
	stream := openStream(t, t.Context(), f)
	const n = 3000
	errc := make(chan error, 1)
	go func() {
		for i := range n {
			err := stream.Send(&inferencepb.ModelInferRequest{
				ModelName: "nb_INT32", Id: fmt.Sprint(i),
				Inputs:           []*inferencepb.ModelInferRequest_InferInputTensor{in("INPUT0", "INT32", 1)},
				RawInputContents: [][]byte{raw(int32(i))},
			})
			if err != nil {
				errc <- err
				return
			}
		}
		errc <- stream.CloseSend()
	}()
	seen := make([]bool, n)
	for range n {
		r := recv(t, stream).GetInferResponse()
		var i int
		if _, err := fmt.Sscan(r.GetId(), &i); err != nil || i < 0 || i >= n || seen[i] {
			t.Fatalf("response id %q", r.GetId())
		}
		seen[i] = true
		if got := int32(binary.LittleEndian.Uint32(r.GetRawOutputContents()[0])); got != int32(i) {
			t.Fatalf("response %d holds %d", i, got)
		}
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if r, err := stream.Recv(); err != io.EOF {
		t.Fatalf("Recv after the last response: %v, %v; want io.EOF", r, err)
	}
}

// TestModelStreamInferLargeTensors: on one stream, concurrent requests
// with tensors the codec passes by reference (some of them in a sequence,
// answered in order) all come back intact, each with its own contents.
func TestModelStreamInferLargeTensors(t *testing.T) {
	f := newFixture(t, setup{})
	stream := openStream(t, context.Background(), f)
	reqs := map[string]*inferencepb.ModelInferRequest{}
	for i := range 12 {
		req := largeRequest(i, 48<<10+8*i)
		if i%3 == 0 {
			req.Parameters = params("sequence_id", int64(7))
		}
		reqs[req.Id] = req
		send(t, stream, req)
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	for range len(reqs) {
		r := recv(t, stream)
		if r.GetErrorMessage() != "" {
			t.Fatalf("in-band error %q", r.GetErrorMessage())
		}
		req, ok := reqs[r.GetInferResponse().GetId()]
		if !ok {
			t.Fatalf("response to unknown or answered request %q", r.GetInferResponse().GetId())
		}
		delete(reqs, req.Id)
		if err := checkLarge(r.GetInferResponse(), req); err != nil {
			t.Error(err)
		}
		wantFinal(t, r.GetInferResponse())
	}
	if _, err := stream.Recv(); err != io.EOF {
		t.Errorf("after the last response: %v, want EOF", err)
	}
}

// TestModelStreamInferIterative: a Triton client streams one request,
// without a sequence id, to a decoupled iterative sequence model that
// reschedules it; every iteration's response comes back on the stream,
// the last one final.
func TestModelStreamInferIterative(t *testing.T) {
	files := repo()
	files["tokens/config.pbtxt"] = `name: "tokens" backend: "tokens" max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
model_transaction_policy { decoupled: true }
sequence_batching {
  iterative_sequence: true
  control_input [ { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] } ]
}`
	files["tokens/1/model"] = ""
	made := map[uint64]int32{} // by sequence (one instance: executions do not overlap)
	tokens := backend.Func(func(ctx context.Context, b *backend.Batch) error {
		for _, r := range b.Requests {
			n, _ := r.Input("INPUT0")
			start, _ := r.Input("START")
			if start.Data[0] == 1 {
				made[r.SequenceID] = 0
			}
			made[r.SequenceID]++
			k := made[r.SequenceID]
			out, _ := tensor.From("OUTPUT0", tensor.Shape{1}, []int32{k})
			last := k >= int32(binary.LittleEndian.Uint32(n.Data))
			if err := r.Sender().Send(ctx, backend.Response{Outputs: []tensor.Tensor{out}, Final: last}); err != nil {
				return err
			}
			if !last {
				r.Reschedule()
			}
		}
		return nil
	})
	f := newFixture(t, setup{files: files, server: []triton.Option{triton.WithBackend("tokens", tokens)}})
	stream := openStream(t, t.Context(), f)
	send(t, stream, &inferencepb.ModelInferRequest{ModelName: "tokens", Id: "t",
		Inputs:           []*inferencepb.ModelInferRequest_InferInputTensor{in("INPUT0", "INT32", 1)},
		RawInputContents: [][]byte{raw[int32](5)},
	})
	for i := int32(1); i <= 5; i++ {
		resp := recv(t, stream)
		r := resp.GetInferResponse()
		if resp.GetErrorMessage() != "" || r.GetId() != "t" || !bytes.Equal(r.GetRawOutputContents()[0], raw(i)) {
			t.Fatalf("response %d: %v", i, resp)
		}
		if final := r.GetParameters()["triton_final_response"].GetBoolParam(); final != (i == 5) {
			t.Errorf("response %d: triton_final_response %v", i, final)
		}
	}
	wantEOF(t, stream)
}
