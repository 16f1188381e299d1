package client

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/grpcapi/inferencepb"
	"github.com/triton-go/triton/tensor"
)

// Infer runs req with the ModelInfer RPC. Input data goes in
// raw_input_contents, referenced from the request's tensors (protobuf
// copies it once, into the message); outputs come from
// raw_output_contents (or typed contents, from servers that send them),
// each in a buffer of its own. The request's Priority, Timeout (in
// microseconds, rounded up) and sequence fields go as Triton's reserved
// parameters; req.Parameters may hold bool, int64, uint64, float64 and
// string values, but none of the reserved names (an int64 travels as
// int64_param, a uint64 as int64_param when it fits, else uint64_param,
// which Triton refuses for custom parameters).
//
// ctx's deadline is the call's gRPC deadline, which the server applies to
// the request; when ctx ends the call is cancelled, and the server
// cancels the request. Errors carry the server's code and message. A ctx
// from [WithTiming] gets the call's marshal and unmarshal times.
func (g *GRPC) Infer(ctx context.Context, req *triton.InferRequest) (*triton.InferResponse, error) {
	tm := timerOf(ctx)
	var t0 int64
	if tm != nil {
		t0 = tm.begin()
	}
	if req == nil {
		return nil, localError(triton.InvalidArgument, about{}, errors.New("nil request"))
	}
	a := aboutRequest(req)
	msg, p, err := grpcRequest(req)
	if tm != nil {
		tm.send += now() - t0
		tm.t.Send = time.Duration(tm.send)
	}
	if err != nil {
		return nil, err
	}
	cctx, err := g.ctx(ctx, a)
	if err != nil {
		return nil, err
	}
	var r *inferencepb.ModelInferResponse
	if tm == nil {
		r, err = g.svc.ModelInfer(cctx, msg)
	} else {
		// The generated stub's call, with the messages wrapped for
		// the codec to time.
		r = new(inferencepb.ModelInferResponse)
		tm.req.msg, tm.resp.msg = msg, r
		err = g.conn.Invoke(cctx, inferencepb.GRPCInferenceService_ModelInfer_FullMethodName, &tm.req, &tm.resp, grpc.StaticMethod())
		tm.req.msg, tm.resp.msg = nil, nil
		tm.t.Send, tm.t.Recv = time.Duration(tm.send), time.Duration(tm.recv)
	}
	if err != nil {
		return nil, grpcError(ctx, a, err)
	}
	var c0 int64
	if tm != nil {
		c0 = now()
	}
	resp, _, err := grpcResponse(r, p.outputs)
	if tm != nil {
		tm.recv += now() - c0
		tm.t.Recv = time.Duration(tm.recv)
	}
	if err != nil {
		return nil, withAbout(a, err)
	}
	return resp, nil
}

// InferStream runs req on a ModelStreamInfer stream of its own and yields
// its responses as the server sends them: a decoupled model's many, any
// other model's one, each response the server marks final
// (triton_final_response) with Final set. A decoupled model's final flag
// without outputs ends the iteration without a response, as
// [triton.Server.InferStream] does. The stream asks the server to end on
// the first error with its status (the metadata triton_grpc_error: true),
// so errors carry their code; a server that answers errors in band
// instead (error_message) has them yielded with code Unknown, and the
// iteration goes on to the stream's end.
//
// ctx's deadline is the stream's; when ctx ends, or the consumer stops
// iterating, the stream is cancelled, which cancels the request on the
// server. The iterator leaves no goroutine behind. One stream per call
// keeps a request's cancellation and errors its own; the cost is a stream
// set-up (one HTTP/2 stream on the shared connection, no round trip of
// its own) per request.
func (g *GRPC) InferStream(ctx context.Context, req *triton.InferRequest) iter.Seq2[*triton.InferResponse, error] {
	return func(yield func(*triton.InferResponse, error) bool) {
		tm := timerOf(ctx)
		var t0 int64
		if tm != nil {
			t0 = tm.begin()
		}
		if req == nil {
			yield(nil, localError(triton.InvalidArgument, about{}, errors.New("nil request")))
			return
		}
		a := aboutRequest(req)
		msg, p, err := grpcRequest(req)
		if tm != nil {
			tm.send += now() - t0
			tm.t.Send = time.Duration(tm.send)
		}
		if err != nil {
			yield(nil, err)
			return
		}
		cctx, err := g.ctx(ctx, a)
		if err != nil {
			yield(nil, err)
			return
		}
		cctx, cancel := context.WithCancel(metadata.AppendToOutgoingContext(cctx, "triton_grpc_error", "true"))
		defer cancel() // ends the stream, whatever happened
		st, err := g.svc.ModelStreamInfer(cctx)
		if err != nil {
			yield(nil, grpcError(ctx, a, err))
			return
		}
		// Send fails with io.EOF when the stream has ended; Recv then
		// returns why.
		if err := streamSend(st, tm, msg); err != nil && !errors.Is(err, io.EOF) {
			yield(nil, grpcError(ctx, a, err))
			return
		}
		_ = st.CloseSend()
		for {
			r, err := streamRecv(st, tm)
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				yield(nil, grpcError(ctx, a, err))
				return
			}
			if m := r.GetErrorMessage(); m != "" {
				if !yield(nil, remoteError(triton.Unknown, a, m)) {
					return
				}
				continue
			}
			var c0 int64
			if tm != nil {
				c0 = now()
			}
			resp, final, err := grpcResponse(r.GetInferResponse(), p.outputs)
			if tm != nil {
				tm.recv += now() - c0
				tm.t.Recv = time.Duration(tm.recv)
			}
			if err != nil {
				yield(nil, withAbout(a, err))
				return
			}
			if final && len(resp.Outputs) == 0 && len(resp.Parameters) == 0 {
				return // the final flag alone
			}
			resp.Final = final
			if !yield(resp, nil) || final {
				return
			}
		}
	}
}

// inferStream is a ModelStreamInfer stream.
type inferStream = grpc.BidiStreamingClient[inferencepb.ModelInferRequest, inferencepb.ModelStreamInferResponse]

// streamSend sends msg on st, through the codec's timing when tm is set.
func streamSend(st inferStream, tm *timer, msg *inferencepb.ModelInferRequest) error {
	if tm == nil {
		return st.Send(msg)
	}
	tm.req.msg = msg
	err := st.SendMsg(&tm.req)
	tm.req.msg = nil
	tm.t.Send = time.Duration(tm.send)
	return err
}

// streamRecv receives the next response on st, through the codec's
// timing when tm is set.
func streamRecv(st inferStream, tm *timer) (*inferencepb.ModelStreamInferResponse, error) {
	if tm == nil {
		return st.Recv()
	}
	r := new(inferencepb.ModelStreamInferResponse)
	tm.resp.msg = r
	err := st.RecvMsg(&tm.resp)
	tm.resp.msg = nil
	tm.t.Recv = time.Duration(tm.recv)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// grpcRequest builds the ModelInferRequest of req.
func grpcRequest(req *triton.InferRequest) (*inferencepb.ModelInferRequest, placement, error) {
	a := aboutRequest(req)
	p, _, err := regions(req)
	if err != nil {
		return nil, p, err
	}
	msg := &inferencepb.ModelInferRequest{ModelName: req.Model, ModelVersion: version(req.Version), Id: req.ID}
	if msg.Parameters, err = grpcParameters(req, p.params); err != nil {
		return nil, p, localError(triton.InvalidArgument, a, err)
	}
	ins := make([]inferencepb.ModelInferRequest_InferInputTensor, len(req.Inputs))
	msg.Inputs = make([]*inferencepb.ModelInferRequest_InferInputTensor, len(req.Inputs))
	msg.RawInputContents = make([][]byte, 0, len(req.Inputs))
	for i, t := range req.Inputs {
		in := &ins[i]
		in.Name, in.Datatype, in.Shape = t.Name, t.DataType.String(), t.Shape
		if in.Shape == nil {
			in.Shape = []int64{}
		}
		if r, ok := p.inputs[t.Name]; ok {
			in.Parameters = regionParameters(r)
		} else {
			data := t.Data
			if data == nil {
				data = []byte{}
			}
			msg.RawInputContents = append(msg.RawInputContents, data)
		}
		msg.Inputs[i] = in
	}
	if len(req.Outputs) > 0 {
		outs := make([]inferencepb.ModelInferRequest_InferRequestedOutputTensor, len(req.Outputs))
		msg.Outputs = make([]*inferencepb.ModelInferRequest_InferRequestedOutputTensor, len(req.Outputs))
		for i, name := range req.Outputs {
			outs[i].Name = name
			if r, ok := p.outputs[name]; ok {
				outs[i].Parameters = regionParameters(r)
			}
			msg.Outputs[i] = &outs[i]
		}
	}
	return msg, p, nil
}

// regionParameters are a tensor's shared-memory parameters.
func regionParameters(r Region) map[string]*inferencepb.InferParameter {
	return map[string]*inferencepb.InferParameter{
		"shared_memory_region":    {ParameterChoice: &inferencepb.InferParameter_StringParam{StringParam: r.Name}},
		"shared_memory_offset":    {ParameterChoice: &inferencepb.InferParameter_Int64Param{Int64Param: int64(min(r.Offset, math.MaxInt64))}},
		"shared_memory_byte_size": {ParameterChoice: &inferencepb.InferParameter_Int64Param{Int64Param: int64(min(r.ByteSize, math.MaxInt64))}},
	}
}

// grpcParameters are the request's parameters as InferParameters: the
// custom ones, then the reserved ones its fields set.
func grpcParameters(req *triton.InferRequest, params map[string]any) (map[string]*inferencepb.InferParameter, error) {
	n := len(params)
	if req.SequenceID != 0 || req.SequenceIDString != "" {
		n += 3
	}
	if req.Priority != 0 {
		n++
	}
	if req.Timeout > 0 {
		n++
	}
	if n == 0 {
		return nil, nil
	}
	out := make(map[string]*inferencepb.InferParameter, n)
	for k, v := range params {
		if err := checkParameter(k, v); err != nil {
			return nil, err
		}
		if u, ok := v.(uint64); ok && u <= math.MaxInt64 {
			v = int64(u) // what Triton's server reads for a custom parameter
		}
		out[k] = inferencepb.ParameterOf(v) // checkParameter allows its kinds only
	}
	boolParam := func(b bool) *inferencepb.InferParameter {
		return &inferencepb.InferParameter{ParameterChoice: &inferencepb.InferParameter_BoolParam{BoolParam: b}}
	}
	switch {
	case req.SequenceIDString != "":
		out["sequence_id"] = &inferencepb.InferParameter{ParameterChoice: &inferencepb.InferParameter_StringParam{StringParam: req.SequenceIDString}}
	case req.SequenceID != 0:
		// The bits of the uint64, as Triton's clients send it.
		out["sequence_id"] = &inferencepb.InferParameter{ParameterChoice: &inferencepb.InferParameter_Int64Param{Int64Param: int64(req.SequenceID)}}
	}
	if req.SequenceStart {
		out["sequence_start"] = boolParam(true)
	}
	if req.SequenceEnd {
		out["sequence_end"] = boolParam(true)
	}
	if req.Priority != 0 {
		out["priority"] = &inferencepb.InferParameter{ParameterChoice: &inferencepb.InferParameter_Uint64Param{Uint64Param: req.Priority}}
	}
	if us := timeoutMicros(req.Timeout); us > 0 {
		out["timeout"] = &inferencepb.InferParameter{ParameterChoice: &inferencepb.InferParameter_Int64Param{Int64Param: us}}
	}
	return out, nil
}

// finalKey is the response parameter that marks a request's last
// response on a stream.
const finalKey = "triton_final_response"

// grpcResponse converts a ModelInferResponse; final reports its
// triton_final_response parameter, which is not among the response's
// Parameters. The outputs in regions are listed without Data.
func grpcResponse(r *inferencepb.ModelInferResponse, regions map[string]Region) (resp *triton.InferResponse, final bool, err error) {
	ver, _ := strconv.ParseInt(r.GetModelVersion(), 10, 64)
	resp = &triton.InferResponse{Model: r.GetModelName(), Version: ver, ID: r.GetId()}
	raw := r.GetRawOutputContents()
	outs := r.GetOutputs()
	if len(raw) > 0 && len(raw) != len(outs) {
		return nil, false, &triton.Error{Code: triton.Internal, Err: fmt.Errorf("client: malformed inference response: %d outputs, %d raw_output_contents", len(outs), len(raw))}
	}
	resp.Outputs = make([]tensor.Tensor, len(outs))
	for i, o := range outs {
		t := tensor.Tensor{Name: o.GetName(), DataType: tensor.ParseDataType(o.GetDatatype()), Shape: tensor.Shape(o.GetShape())}
		if t.Shape == nil {
			t.Shape = tensor.Shape{}
		}
		_, inRegion := regions[t.Name]
		switch {
		case inRegion:
			// Written to shared memory: no data (an empty raw entry).
		case len(raw) > 0:
			t.Data = raw[i]
			if t.Data == nil {
				t.Data = []byte{}
			}
		case o.GetContents() != nil:
			if t.Data, err = typedContents(t.DataType, o.GetContents()); err != nil {
				return nil, false, &triton.Error{Code: triton.Internal, Err: fmt.Errorf("client: output '%s': %w", t.Name, err)}
			}
		}
		resp.Outputs[i] = t
	}
	for k, p := range r.GetParameters() {
		if k == finalKey {
			final = p.GetBoolParam()
			continue
		}
		v, ok := p.Value()
		if !ok {
			continue
		}
		if resp.Parameters == nil {
			resp.Parameters = make(map[string]any, len(r.GetParameters()))
		}
		resp.Parameters[k] = v
	}
	return resp, final, nil
}

// typedContents converts an output's typed contents to tensor bytes.
func typedContents(dt tensor.DataType, c *inferencepb.InferTensorContents) ([]byte, error) {
	le := binary.LittleEndian
	var out []byte
	switch dt {
	case tensor.Bool:
		for _, v := range c.GetBoolContents() {
			out = append(out, b2u8(v))
		}
	case tensor.Int8, tensor.Int16, tensor.Int32:
		for _, v := range c.GetIntContents() {
			out = appendUint(out, uint64(v), dt.Size())
		}
	case tensor.Int64:
		for _, v := range c.GetInt64Contents() {
			out = le.AppendUint64(out, uint64(v))
		}
	case tensor.Uint8, tensor.Uint16, tensor.Uint32:
		for _, v := range c.GetUintContents() {
			out = appendUint(out, uint64(v), dt.Size())
		}
	case tensor.Uint64:
		for _, v := range c.GetUint64Contents() {
			out = le.AppendUint64(out, v)
		}
	case tensor.FP32:
		for _, v := range c.GetFp32Contents() {
			out = le.AppendUint32(out, math.Float32bits(v))
		}
	case tensor.FP64:
		for _, v := range c.GetFp64Contents() {
			out = le.AppendUint64(out, math.Float64bits(v))
		}
	case tensor.Bytes:
		for _, v := range c.GetBytesContents() {
			out = tensor.AppendElement(out, v)
		}
	default:
		return nil, fmt.Errorf("%s has no typed contents", dt)
	}
	if out == nil {
		out = []byte{}
	}
	return out, nil
}
