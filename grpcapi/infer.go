package grpcapi

import (
	"context"
	"encoding/binary"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/grpcapi/inferencepb"
	"github.com/triton-go/triton/internal/wire"
	"github.com/triton-go/triton/sysshm"
	"github.com/triton-go/triton/tensor"
	"github.com/triton-go/triton/trace"
)

// ModelInfer runs one inference request (protocol spec §2.4). Inputs come
// from raw_input_contents (consumed in input order, skipping inputs read
// from shared memory), from typed contents, or from system shared memory;
// the request's parameters set its sequence, priority and queue timeout or
// travel to the model. The response carries every output's bytes in
// raw_output_contents, in the order of its outputs (an empty entry for an
// output written to shared memory), and never typed contents.
//
// The call's deadline and cancellation reach the inference. Decoupled
// models answer UNIMPLEMENTED, as in Triton: they need ModelStreamInfer.
func (s *Service) ModelInfer(ctx context.Context, req *inferencepb.ModelInferRequest) (*inferencepb.ModelInferResponse, error) {
	if err := s.allowed(ctx, wire.Inference); err != nil {
		return nil, err
	}
	s.compressResponses(ctx)
	resp, err := s.infer(ctx, req)
	if err != nil {
		if wait, ok := triton.RetryAfter(err); ok {
			// gRPC's retry pushback (gRFC A6): a client's retry policy
			// waits this long before its next attempt.
			_ = grpc.SetTrailer(ctx, metadata.Pairs("grpc-retry-pushback-ms", strconv.FormatInt(wait.Milliseconds(), 10)))
		}
		return nil, s.toStatus(err)
	}
	return resp, nil
}

// modelInferHandler is the service's handler of ModelInfer (see
// [Service.Register]): the request is received into a [received], and a
// response the codec should encode by reference goes back as an
// [outgoing]. Interceptors see the plain messages; the request's buffer
// goes to the response only when the response is the one ModelInfer
// answered (an interceptor's own answer may alias anything: the buffer is
// then left to the garbage collector).
func modelInferHandler(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
	s := srv.(*Service)
	tracer := s.srv.Tracer()
	var readStart time.Time
	if tracer != nil {
		readStart = time.Now()
	}
	r := new(received)
	if err := dec(r); err != nil {
		return nil, err
	}
	if r.malformed != nil {
		return nil, malformed(r.malformed)
	}
	// Traced once the model is known. Triton's gRPC stamps follow the
	// server's in the file: they are kept and stamped when the call is
	// done. grpc-go writes a unary response after the handler returns, so
	// GRPC_SEND_START is when the response is ready and GRPC_SEND_END when
	// the handler hands it to grpc-go.
	var ts *callTrace
	if tracer != nil {
		ts = s.startTrace(ctx, tracer, r.GetModelName(), readStart, time.Now())
	}
	if ts != nil {
		ctx = trace.NewContext(ctx, ts.tr)
		defer ts.done(true)
	}
	if interceptor == nil {
		resp, err := s.ModelInfer(ctx, &r.ModelInferRequest)
		ts.add(trace.GRPCSendStart)
		if err != nil {
			r.release()
			return nil, err
		}
		return r.answer(resp, resp.RawOutputContents), nil
	}
	var ours *inferencepb.ModelInferResponse
	info := &grpc.UnaryServerInfo{Server: srv, FullMethod: inferencepb.GRPCInferenceService_ModelInfer_FullMethodName}
	reply, err := interceptor(ctx, &r.ModelInferRequest, info, func(ctx context.Context, req any) (any, error) {
		resp, err := s.ModelInfer(ctx, req.(*inferencepb.ModelInferRequest))
		ours = resp
		return resp, err
	})
	ts.add(trace.GRPCSendStart)
	if err != nil {
		r.release()
		return nil, err
	}
	if resp, ok := reply.(*inferencepb.ModelInferResponse); ok && resp != nil && resp == ours {
		return r.answer(resp, resp.RawOutputContents), nil
	}
	return reply, nil
}

// inferCall is one request on its way through ModelInfer or
// ModelStreamInfer.
type inferCall struct {
	req      triton.InferRequest
	maxBatch int32
	outputs  []outputSpec // requested outputs with shared memory or classification
	releases []func()     // shared-memory views to release when done
	inBuf    [2]tensor.Tensor
}

// outputSpec is a requested output that is not simply returned as raw
// bytes.
type outputSpec struct {
	name    string
	classes int64  // classification: top classes to return (0: off)
	inSHM   bool   // written into shm instead of the response
	shm     []byte // the region's bytes for this output
}

// calls recycles inferCalls: nothing keeps one once its response is built
// (the server borrows the request only until Infer returns).
var calls = sync.Pool{New: func() any { return new(inferCall) }}

// done releases the call's shared-memory views and recycles it, cleared,
// so that the pool holds no request's memory.
func (c *inferCall) done() {
	for _, f := range c.releases {
		f()
	}
	*c = inferCall{}
	calls.Put(c)
}

func (c *inferCall) output(name string) *outputSpec {
	for i := range c.outputs {
		if c.outputs[i].name == name {
			return &c.outputs[i]
		}
	}
	return nil
}

// infer runs req, for a model that is not decoupled, on the server and
// builds its response.
func (s *Service) infer(ctx context.Context, req *inferencepb.ModelInferRequest) (*inferencepb.ModelInferResponse, error) {
	c := calls.Get().(*inferCall)
	defer c.done()
	decoupled, err := s.prepare(ctx, c, req)
	if err != nil {
		return nil, err
	}
	if decoupled {
		return nil, errorf(triton.Unsupported, "ModelInfer RPC doesn't support models with decoupled transaction policy")
	}
	resp, err := s.srv.Infer(ctx, &c.req)
	if tr := s.traceOf(ctx); tr != nil {
		tr.Stamp(trace.InferResponseComplete, time.Now())
	}
	if err != nil {
		return nil, err
	}
	return s.response(c, resp)
}

// inferEach runs req on the server and passes each of its responses to
// yield, built as infer builds one, with whether it is the request's last
// (triton_final_response); a model that is not decoupled answers once.
// An error that ends the request comes as (nil, true, err); a decoupled
// model's error response that does not end it as (nil, false, err), when
// the next response comes. A
// decoupled model's final flag without outputs comes as a response with
// no outputs, for the caller to send or not
// (triton_enable_empty_final_response). yield returning false stops the
// request.
func (s *Service) inferEach(ctx context.Context, req *inferencepb.ModelInferRequest, yield func(resp *inferencepb.ModelInferResponse, final bool, err error) bool) {
	c := calls.Get().(*inferCall)
	defer c.done()
	decoupled, err := s.prepare(ctx, c, req)
	if err != nil {
		yield(nil, true, err)
		return
	}
	if !decoupled {
		resp, err := s.srv.Infer(ctx, &c.req)
		var out *inferencepb.ModelInferResponse
		if err == nil {
			out, err = s.response(c, resp)
		}
		yield(out, true, err)
		return
	}
	// An error is held until the next item shows whether it was the last:
	// one that ends the request is its final response (errors are rare, so
	// holding them delays nothing that matters).
	var held error
	last := false // the last response yielded was final
	for resp, err := range s.srv.InferStream(ctx, &c.req) {
		if held != nil {
			if !yield(nil, false, held) {
				return
			}
			held = nil
		}
		var out *inferencepb.ModelInferResponse
		if err == nil {
			out, err = s.response(c, resp)
		}
		if err != nil {
			held = err
			continue
		}
		last = resp.Final
		if !yield(out, last, nil) {
			return
		}
	}
	switch {
	case held != nil:
		yield(nil, true, held)
	case !last:
		// The final flag came alone.
		yield(&inferencepb.ModelInferResponse{ModelName: req.GetModelName(), ModelVersion: strconv.FormatInt(c.req.Version, 10), Id: req.GetId()}, true, nil)
	}
}

// prepare fills c with the server request req stands for and reports
// whether the model is decoupled.
func (s *Service) prepare(ctx context.Context, c *inferCall, req *inferencepb.ModelInferRequest) (decoupled bool, err error) {
	model := req.GetModelName()
	ver, err := parseVersion(model, req.GetModelVersion())
	if err != nil {
		return false, err
	}
	sum, err := s.srv.ModelSummary(ctx, model, ver)
	if err != nil {
		return false, err
	}
	c.maxBatch = sum.MaxBatchSize
	c.req.Model, c.req.Version, c.req.ID = model, sum.Version, req.GetId()
	if err := requestParameters(&c.req, req.GetParameters()); err != nil {
		return false, err
	}
	if s.forward != nil {
		if err := s.forwardHeaders(ctx, &c.req); err != nil {
			return false, err
		}
	}
	if err := s.inputs(c, req); err != nil {
		return false, err
	}
	return sum.Decoupled, s.requestedOutputs(c, req.GetOutputs())
}

// requestParameters applies a request's parameters as Triton's gRPC
// frontend does (protocol spec §1.14, §1.15): sequence_id (int64_param or
// string_param), sequence_start and sequence_end (bool_param), priority
// (int64_param >= 0 or uint64_param) and timeout (int64_param, µs)
// configure the request; headers and binary_data_output are reserved and
// dropped; of the keys starting with "triton_" only
// triton_enable_empty_final_response (bool_param) is allowed; every other
// key reaches the model as a bool, int64, float64 or string parameter.
func requestParameters(r *triton.InferRequest, params map[string]*inferencepb.InferParameter) error {
	for key, p := range params {
		choice := p.GetParameterChoice()
		switch key {
		case "sequence_id":
			switch v := choice.(type) {
			case *inferencepb.InferParameter_Int64Param:
				r.SequenceID = uint64(v.Int64Param) // as Triton: the bits of the int64
			case *inferencepb.InferParameter_StringParam:
				if len(v.StringParam) > 128 {
					// Triton says UNSUPPORTED; the ID is the client's mistake.
					return errorf(triton.InvalidArgument, "string correlation ID cannot be longer than 128 characters")
				}
				r.SequenceIDString = v.StringParam
			default:
				return errorf(triton.InvalidArgument, "invalid value type for 'sequence_id' parameter, expected int64_param or string_param.")
			}
		case "sequence_start", "sequence_end":
			v, ok := choice.(*inferencepb.InferParameter_BoolParam)
			if !ok {
				return errorf(triton.InvalidArgument, "invalid value type for '%s' parameter, expected bool_param.", key)
			}
			if key == "sequence_start" {
				r.SequenceStart = v.BoolParam
			} else {
				r.SequenceEnd = v.BoolParam
			}
		case "priority":
			switch v := choice.(type) {
			case *inferencepb.InferParameter_Int64Param:
				if v.Int64Param < 0 {
					return errorf(triton.InvalidArgument, "invalid value for 'priority', expected value >= 0.")
				}
				r.Priority = uint64(v.Int64Param)
			case *inferencepb.InferParameter_Uint64Param:
				r.Priority = v.Uint64Param
			default:
				return errorf(triton.InvalidArgument, "invalid value type for 'priority' parameter, expected int64_param or uint64_param.")
			}
		case "timeout":
			v, ok := choice.(*inferencepb.InferParameter_Int64Param)
			if !ok {
				return errorf(triton.InvalidArgument, "invalid value type for 'timeout' parameter, expected int64_param.")
			}
			if v.Int64Param < 0 {
				return errorf(triton.InvalidArgument, "invalid value for 'timeout', expected value >= 0.")
			}
			if v.Int64Param > math.MaxInt64/int64(time.Microsecond) {
				r.Timeout = math.MaxInt64
			} else {
				r.Timeout = time.Duration(v.Int64Param) * time.Microsecond
			}
		case "headers", "binary_data_output":
			// Reserved (protocol spec §1.14); never a model parameter.
		case "triton_enable_empty_final_response":
			// Read by ModelStreamInfer (emptyFinal): whether a decoupled
			// model's final flag without outputs is sent as a response.
			if _, ok := choice.(*inferencepb.InferParameter_BoolParam); !ok {
				return errorf(triton.InvalidArgument, "invalid value type for '%s' parameter, expected bool_param.", key)
			}
		default:
			if strings.HasPrefix(key, "triton_") {
				return errorf(triton.InvalidArgument, "parameter keys starting with 'triton_' are reserved for Triton usage. Only the following keys starting with 'triton_' are allowed: triton_enable_empty_final_response")
			}
			var val any
			switch v := choice.(type) {
			case *inferencepb.InferParameter_Int64Param:
				val = v.Int64Param
			case *inferencepb.InferParameter_BoolParam:
				val = v.BoolParam
			case *inferencepb.InferParameter_StringParam:
				val = v.StringParam
			case *inferencepb.InferParameter_DoubleParam:
				val = v.DoubleParam
			default:
				return errorf(triton.InvalidArgument, "invalid value type for '%s' parameter, expected int64_param, bool_param, or string_param.", key)
			}
			if r.Parameters == nil {
				r.Parameters = make(map[string]any, len(params))
			}
			r.Parameters[key] = val
		}
	}
	return nil
}

// reservedKeys are the request parameters a forwarded header must not
// set (Triton's kReservedParameterKeys).
var reservedKeys = []string{"sequence_id", "sequence_start", "sequence_end", "priority", "timeout", "headers", "binary_data_output"}

// forwardHeaders adds the call's metadata whose key matches the forward
// pattern to r's parameters, as strings, after (over) the request's own,
// as Triton's ForwardHeadersAsParameters does (see
// [WithHeaderForwardPattern]).
func (s *Service) forwardHeaders(ctx context.Context, r *triton.InferRequest) error {
	md, _ := metadata.FromIncomingContext(ctx)
	for key, values := range md {
		if len(values) == 0 || !forwardable(key) || !s.forward.MatchString(key) {
			continue
		}
		if slices.Contains(reservedKeys, key) || strings.HasPrefix(key, "triton_") {
			return errorf(triton.InvalidArgument, "Header '%s' is reserved for Triton usage and cannot be forwarded.", key)
		}
		if r.Parameters == nil {
			r.Parameters = make(map[string]any, len(md))
		}
		r.Parameters[key] = values[len(values)-1]
	}
	return nil
}

// forwardable reports whether a metadata key of grpc-go's may be
// forwarded: not a pseudo-header (grpc-go adds :authority), not one of
// gRPC's own "grpc-" keys, nor content-type, which grpc-core, and so
// Triton, keeps from the application (user-agent it passes on).
func forwardable(key string) bool {
	return !strings.HasPrefix(key, ":") && !strings.HasPrefix(key, "grpc-") && key != "content-type"
}

// inputs reads the request's input tensors. Raw and typed data are used in
// place where their layout allows (the request message is not touched
// again), shared memory is copied out of its region.
func (s *Service) inputs(c *inferCall, req *inferencepb.ModelInferRequest) error {
	model := req.GetModelName()
	raw := req.GetRawInputContents()
	ins := req.GetInputs()
	if len(ins) <= len(c.inBuf) {
		c.req.Inputs = c.inBuf[:0]
	} else {
		c.req.Inputs = make([]tensor.Tensor, 0, len(ins))
	}
	next := 0 // the next entry of raw
	for _, in := range ins {
		name := in.GetName()
		t := tensor.Tensor{Name: name, DataType: tensor.ParseDataType(in.GetDatatype()), Shape: tensor.Shape(in.GetShape())}
		region, offset, size, inSHM, err := shmParams(name, in.GetParameters())
		if err != nil {
			return err
		}
		switch {
		case inSHM:
			if in.GetContents() != nil {
				return errorf(triton.InvalidArgument, "unexpected 'content' provided when using shared memory for input tensor '%s' for model '%s'", name, model)
			}
			if t.Data, err = s.shmInput(name, region, offset, size); err != nil {
				return err
			}
		case in.GetContents() != nil && len(raw) > 0:
			return errorf(triton.InvalidArgument, "contents field must not be specified when using raw_input_contents for '%s' for model '%s'", name, model)
		case in.GetContents() != nil:
			if t.Data, err = typedContents(name, model, t.DataType, in.GetContents()); err != nil {
				return err
			}
		case next < len(raw):
			t.Data = wire.Aligned(raw[next], t.DataType)
			next++
		default:
			return errorf(triton.InvalidArgument, "unable to find data for input tensor '%s' for model '%s' in request.", name, model)
		}
		c.req.Inputs = append(c.req.Inputs, t)
	}
	if next < len(raw) {
		return errorf(triton.InvalidArgument, "unexpected additional input data for model '%s': raw_input_contents has %d entries, but only %d inputs take raw data", model, len(raw), next)
	}
	return nil
}

// typedContents converts an input's typed contents to tensor bytes, as
// Triton's InferGRPCToInput does: exactly one typed field may be set, and
// it must be the datatype's (INT8 and INT16 in int_contents, UINT8 and
// UINT16 in uint_contents keep the low bytes of each value; BYTES elements
// get their 4-byte length prefixes; FP16 and BF16 have no typed field).
// Fields whose layout is the tensor's are used in place.
func typedContents(name, model string, dt tensor.DataType, tc *inferencepb.InferTensorContents) ([]byte, error) {
	var data []byte
	set := false
	use := func(field tensor.DataType) error {
		if set {
			return errorf(triton.InvalidArgument, "unexpected explicit tensor data for input tensor '%s' for model '%s', binary data was already supplied.", name, model)
		}
		if field != dt {
			return errorf(triton.InvalidArgument, "unexpected explicit tensor data for input tensor '%s' for model '%s' of type '%s', expected datatype '%s'", name, model, field, dt)
		}
		set = true
		return nil
	}
	if v := tc.GetBoolContents(); len(v) > 0 {
		if err := use(tensor.Bool); err != nil {
			return nil, err
		}
		data = leBytes(v)
	}
	if v := tc.GetIntContents(); len(v) > 0 {
		field := tensor.Int32
		if dt == tensor.Int8 || dt == tensor.Int16 {
			field = dt
		}
		if err := use(field); err != nil {
			return nil, err
		}
		data = lowBytes(v, field)
	}
	if v := tc.GetInt64Contents(); len(v) > 0 {
		if err := use(tensor.Int64); err != nil {
			return nil, err
		}
		data = leBytes(v)
	}
	if v := tc.GetUintContents(); len(v) > 0 {
		field := tensor.Uint32
		if dt == tensor.Uint8 || dt == tensor.Uint16 {
			field = dt
		}
		if err := use(field); err != nil {
			return nil, err
		}
		data = lowBytes(v, field)
	}
	if v := tc.GetUint64Contents(); len(v) > 0 {
		if err := use(tensor.Uint64); err != nil {
			return nil, err
		}
		data = leBytes(v)
	}
	if v := tc.GetFp32Contents(); len(v) > 0 {
		if err := use(tensor.FP32); err != nil {
			return nil, err
		}
		data = leBytes(v)
	}
	if v := tc.GetFp64Contents(); len(v) > 0 {
		if err := use(tensor.FP64); err != nil {
			return nil, err
		}
		data = leBytes(v)
	}
	if v := tc.GetBytesContents(); len(v) > 0 {
		if err := use(tensor.Bytes); err != nil {
			return nil, err
		}
		n := 0
		for _, e := range v {
			n += 4 + len(e)
		}
		data = make([]byte, 0, n)
		for _, e := range v {
			data = tensor.AppendElement(data, e)
		}
	}
	return data, nil
}

// hostLittleEndian reports whether typed contents can be used in place.
var hostLittleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// leBytes returns v as little-endian tensor bytes: v's own memory on a
// little-endian host, a copy elsewhere.
func leBytes[T bool | int32 | int64 | uint32 | uint64 | float32 | float64](v []T) []byte {
	if !hostLittleEndian {
		b, _ := binary.Append(nil, binary.LittleEndian, v)
		return b
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(v))), len(v)*int(unsafe.Sizeof(v[0])))
}

// lowBytes returns v as tensor bytes of dt: the low byte (INT8, UINT8) or
// two bytes (INT16, UINT16) of each value, or all four.
func lowBytes[T int32 | uint32](v []T, dt tensor.DataType) []byte {
	switch dt.Size() {
	case 1:
		out := make([]byte, len(v))
		for i, x := range v {
			out[i] = byte(x)
		}
		return out
	case 2:
		out := make([]byte, 2*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint16(out[2*i:], uint16(x))
		}
		return out
	}
	return leBytes(v)
}

// shmParams reads a tensor's shared_memory_region (string_param),
// shared_memory_offset and shared_memory_byte_size (int64_param) with
// Triton's checks and messages (ParseSharedMemoryParams); ok reports
// whether the tensor uses shared memory.
func shmParams(name string, params map[string]*inferencepb.InferParameter) (region string, offset, size uint64, ok bool, err error) {
	if len(params) == 0 {
		return "", 0, 0, false, nil
	}
	if p, found := params["shared_memory_region"]; found {
		v, isString := p.GetParameterChoice().(*inferencepb.InferParameter_StringParam)
		if !isString {
			return "", 0, 0, false, errorf(triton.InvalidArgument, "invalid value type for 'shared_memory_region' parameter for tensor '%s', expected string_param.", name)
		}
		region, ok = v.StringParam, true
	}
	int64Param := func(key string) (uint64, bool, error) {
		p, found := params[key]
		if !found {
			return 0, false, nil
		}
		if !ok {
			return 0, false, errorf(triton.InvalidArgument, "'%s' can not be specified without 'shared_memory_region' parameter for tensor '%s'", key, name)
		}
		v, isInt := p.GetParameterChoice().(*inferencepb.InferParameter_Int64Param)
		if !isInt {
			return 0, false, errorf(triton.InvalidArgument, "invalid value type for '%s' parameter for tensor '%s', expected int64_param.", key, name)
		}
		if v.Int64Param < 0 {
			return 0, false, errorf(triton.InvalidArgument, "invalid value for '%s' parameter for tensor '%s', expected value >= 0.", key, name)
		}
		return uint64(v.Int64Param), true, nil
	}
	if offset, _, err = int64Param("shared_memory_offset"); err != nil {
		return "", 0, 0, false, err
	}
	var hasSize bool
	if size, hasSize, err = int64Param("shared_memory_byte_size"); err != nil {
		return "", 0, 0, false, err
	}
	if ok && !hasSize {
		return "", 0, 0, false, errorf(triton.InvalidArgument, "'shared_memory_byte_size' must be specified along with 'shared_memory_region' parameter for tensor '%s'", name)
	}
	return region, offset, size, ok, nil
}

// shmInput reads an input from shared memory. The bytes are copied out of
// the region (with sysshm.Copy): a backend reading the client's memory
// directly would crash the process if the client shrank the object
// meanwhile.
func (s *Service) shmInput(name, region string, offset, size uint64) ([]byte, error) {
	if s.shm == nil {
		return nil, wire.ErrSHMDisabled
	}
	if size > maxMessageSize {
		return nil, errorf(triton.InvalidArgument, "Input '%s' has a byte_size (%d bytes) that exceeds the maximum allowed value of %d bytes", name, size, maxMessageSize)
	}
	return wire.ReadSHM(s.shm, region, offset, size)
}

// requestedOutputs reads the request's outputs: their names, and the
// parameters of those written to shared memory (resolved now, so that a
// bad region fails the request before it runs, as in Triton) or
// classified.
func (s *Service) requestedOutputs(c *inferCall, outs []*inferencepb.ModelInferRequest_InferRequestedOutputTensor) error {
	if len(outs) == 0 {
		return nil
	}
	c.req.Outputs = make([]string, len(outs))
	for i, o := range outs {
		name := o.GetName()
		c.req.Outputs[i] = name
		params := o.GetParameters()
		if len(params) == 0 {
			continue
		}
		region, offset, size, inSHM, err := shmParams(name, params)
		if err != nil {
			return err
		}
		spec := outputSpec{name: name}
		if p, ok := params["classification"]; ok {
			v, isInt := p.GetParameterChoice().(*inferencepb.InferParameter_Int64Param)
			if !isInt {
				return errorf(triton.InvalidArgument, "invalid value type for 'classification' parameter, expected int64_param")
			}
			if v.Int64Param <= 0 {
				return errorf(triton.InvalidArgument, "invalid value for 'classification' parameter, expected >= 0")
			}
			if inSHM {
				return errorf(triton.InvalidArgument, "output can't set both 'shared_memory_region' and 'classification'")
			}
			spec.classes = v.Int64Param
		}
		if inSHM {
			if s.shm == nil {
				return wire.ErrSHMDisabled
			}
			view, release, err := s.shm.Use(region, offset, size)
			if err != nil {
				return wire.SHMError(err)
			}
			c.releases = append(c.releases, release)
			spec.inSHM, spec.shm = true, view
		}
		if spec.inSHM || spec.classes > 0 {
			c.outputs = append(c.outputs, spec)
		}
	}
	return nil
}

// response builds the ModelInferResponse: one output and one raw entry per
// output, in the order the server returned them; outputs to shared memory
// are written into their regions and have an empty entry, classified
// outputs are replaced by their BYTES classes. Output bytes are not
// copied.
func (s *Service) response(c *inferCall, resp *triton.InferResponse) (*inferencepb.ModelInferResponse, error) {
	n := len(resp.Outputs)
	buf := new(responseBuf)
	out := &buf.resp
	out.ModelName, out.ModelVersion, out.Id = resp.Model, strconv.FormatInt(resp.Version, 10), resp.ID
	if len(resp.Parameters) > 0 {
		out.Parameters = responseParameters(resp.Parameters)
	}
	var tensors []inferencepb.ModelInferResponse_InferOutputTensor
	if n <= len(buf.tensors) {
		out.Outputs, out.RawOutputContents, tensors = buf.ptrs[:n:n], buf.raw[:n:n], buf.tensors[:n:n]
	} else {
		out.Outputs = make([]*inferencepb.ModelInferResponse_InferOutputTensor, n)
		out.RawOutputContents = make([][]byte, n)
		tensors = make([]inferencepb.ModelInferResponse_InferOutputTensor, n)
	}
	total := 0
	for i, t := range resp.Outputs {
		data := t.Data
		if spec := c.output(t.Name); spec != nil {
			switch {
			case spec.inSHM:
				if len(t.Data) > len(spec.shm) {
					// Triton says INTERNAL; the region is the client's.
					return nil, errorf(triton.InvalidArgument, "shared memory size specified with the request for output '%s' (%d bytes) should be at least %d bytes to hold the results",
						t.Name, len(spec.shm), len(t.Data))
				}
				if _, err := sysshm.Copy(spec.shm, t.Data); err != nil {
					return nil, wire.SHMError(err)
				}
				data = []byte{}
			case spec.classes > 0:
				labels, err := s.srv.Labels(resp.Model, resp.Version, t.Name)
				if err != nil {
					return nil, err
				}
				if t, err = wire.Classify(t, uint64(spec.classes), c.maxBatch > 0, labels); err != nil {
					return nil, err
				}
				data = t.Data
			}
		}
		o := &tensors[i]
		o.Name, o.Datatype, o.Shape = t.Name, t.DataType.String(), t.Shape
		out.Outputs[i] = o
		out.RawOutputContents[i] = data
		total += len(data)
	}
	if total > maxMessageSize-(1<<20) {
		// Near the limit only: proto.Size walks the whole message.
		if size := proto.Size(out); size > maxMessageSize {
			return nil, errorf(triton.InvalidArgument, "Response has byte size %d which exceeds gRPC's byte size limit %d.", size, maxMessageSize)
		}
	}
	return out, nil
}

// responseBuf holds a response with up to two outputs in one allocation.
type responseBuf struct {
	resp    inferencepb.ModelInferResponse
	ptrs    [2]*inferencepb.ModelInferResponse_InferOutputTensor
	raw     [2][]byte
	tensors [2]inferencepb.ModelInferResponse_InferOutputTensor
}

// responseParameters are a response's parameters as InferParameters (the
// server has checked the values: bool, int64, uint64, float64, string).
func responseParameters(p map[string]any) map[string]*inferencepb.InferParameter {
	out := make(map[string]*inferencepb.InferParameter, len(p))
	for k, v := range p {
		if c := inferencepb.ParameterOf(v); c != nil {
			out[k] = c
		}
	}
	return out
}
