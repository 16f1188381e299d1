package httpapi

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/internal/wire"
	"github.com/triton-go/triton/tensor"
	"github.com/triton-go/triton/trace"
)

// headerLengthHeader carries the byte length of the JSON part of a body
// that also carries binary tensors (binary tensor data extension).
const headerLengthHeader = "Inference-Header-Content-Length"

// outputKind is how an output travels back.
type outputKind uint8

const (
	kindJSON   outputKind = iota // "data" in the JSON
	kindBinary                   // after the JSON, sized by binary_data_size
	kindSHM                      // written into a shared-memory region
)

// requestedOutput is one entry of a request's "outputs".
type requestedOutput struct {
	name    string
	kind    outputKind
	classes uint64 // classification: top classes to return (0: off)
	shm     []byte // kindSHM: the region's bytes for this output
}

// inferCall is one inference request on its way through the handler.
type inferCall struct {
	model       string
	req         triton.InferRequest
	outputs     []requestedOutput
	defaultKind outputKind
	maxBatch    int32
	releases    []func() // shared-memory views to release when done
	body        []byte   // the request body, which JSON values alias
}

func (c *inferCall) release() {
	for _, f := range c.releases {
		f()
	}
	c.releases = nil
}

func (c *inferCall) output(name string) requestedOutput {
	for _, o := range c.outputs {
		if o.name == name {
			return o
		}
	}
	return requestedOutput{name: name, kind: c.defaultKind}
}

// handleInfer serves POST /v2/models/{m}[/versions/{v}]/infer.
//
// The request body is read whole (bounded by the size limit) and its
// binary tensors are passed to the server without copying; JSON tensors
// are decoded straight into tensor memory, and the "data" arrays are never
// built as a tree. The request's context is the inference's: a client that
// disconnects cancels it.
func (h *handler) handleInfer(w http.ResponseWriter, r *http.Request, model, verStr string) {
	tracer := h.srv.Tracer()
	var recvStart time.Time
	if tracer != nil {
		recvStart = time.Now()
	}
	sum, ok := h.inferenceTarget(w, r, model, verStr)
	if !ok {
		return
	}
	// Traced from here, once the model is known, as in Triton; the stamps
	// are HTTP_RECV_START/END, INFER_RESPONSE_COMPLETE, HTTP_SEND_START/END.
	tr := tracer.Start(r.Context(), model, propagation.HeaderCarrier(r.Header))
	if tr != nil {
		tr.Stamp(trace.HTTPRecvStart, recvStart)
		defer tr.End()
	}
	if sum.Decoupled {
		h.replyError(w, tr, errorf(triton.Unsupported, "HTTP end point doesn't support models with decoupled transaction policy"))
		return
	}
	headerLen, err := headerLength(r)
	if err != nil {
		h.replyError(w, tr, modelError(model, err))
		return
	}
	b, err := h.readBody(w, r, true, max(headerLen, 0))
	if tr != nil {
		tr.Stamp(trace.HTTPRecvEnd, time.Now())
	}
	if err != nil {
		h.replyError(w, tr, err)
		return
	}
	defer b.release()

	call := &inferCall{model: model, maxBatch: sum.MaxBatchSize}
	call.req.Model, call.req.Version = model, sum.Version
	defer call.release()
	if err := h.parseInfer(call, r, b.data, headerLen); err != nil {
		h.replyError(w, tr, err)
		return
	}
	if h.forward != nil {
		if err := h.forwardHeaders(call, r); err != nil {
			h.replyError(w, tr, err)
			return
		}
	}
	ctx := r.Context()
	if tr != nil {
		ctx = trace.NewContext(ctx, tr)
	}
	resp, err := h.srv.Infer(ctx, &call.req)
	if tr != nil {
		tr.Stamp(trace.InferResponseComplete, time.Now())
	}
	if err != nil {
		h.replyError(w, tr, err)
		return
	}
	if tr != nil {
		tr.Stamp(trace.HTTPSendStart, time.Now())
		defer func() { tr.Stamp(trace.HTTPSendEnd, time.Now()) }() // before End
	}
	if err := h.writeInferResponse(w, r, call, resp); err != nil {
		h.writeError(w, err)
	}
}

// replyError writes err, stamping HTTP_SEND_START/END around it when the
// request is traced.
func (h *handler) replyError(w http.ResponseWriter, tr *trace.Trace, err error) {
	if tr == nil {
		h.writeError(w, err)
		return
	}
	tr.Stamp(trace.HTTPSendStart, time.Now())
	h.writeError(w, err)
	tr.Stamp(trace.HTTPSendEnd, time.Now())
}

// headerLength reads Inference-Header-Content-Length: -1 when absent (the
// whole body is JSON).
func headerLength(r *http.Request) (int, error) {
	vs := r.Header.Values(headerLengthHeader)
	if len(vs) == 0 {
		return -1, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(vs[0]))
	if err != nil {
		return 0, errorf(triton.InvalidArgument, "Unable to parse %s, got: %s", headerLengthHeader, vs[0])
	}
	if n < 0 {
		return 0, errorf(triton.InvalidArgument, "inference header size should be in range (0, %d), got: %s", max(r.ContentLength, 0), vs[0])
	}
	return n, nil
}

// parseInfer decodes an inference request body into call: a JSON header of
// headerLen bytes (-1: all of it) followed by binary tensors, or (header
// length 0) the raw bytes of the model's only input.
//
// Its errors name the model, and the input when one is at fault:
// "model 'm', input 'INPUT0': Unable to parse 'shape': ...". Triton's
// messages, which name neither, follow the prefix unchanged; those that
// name both already are left as they are.
func (h *handler) parseInfer(call *inferCall, r *http.Request, data []byte, headerLen int) error {
	if headerLen > len(data) {
		return modelError(call.model, errorf(triton.InvalidArgument, "inference header size should be in range (0, %d), got: %s", len(data), r.Header.Get(headerLengthHeader)))
	}
	if headerLen < 0 {
		headerLen = len(data)
	}
	if headerLen == 0 {
		return h.parseRawInput(call, data)
	}
	call.body = data
	root, err := parseJSON(data[:headerLen])
	if err != nil {
		return modelError(call.model, errorf(triton.InvalidArgument, "%v", err))
	}
	if !root.isObject() {
		return modelError(call.model, errorf(triton.InvalidArgument, "failed to parse the request JSON buffer: the request must be a JSON object"))
	}
	var msBuf [8]member
	ms := root.appendMembers(msBuf[:0])
	if v, ok := get(ms, "id"); ok {
		s, ok := v.str()
		if !ok {
			return modelError(call.model, parseErr("id", errNotString))
		}
		call.req.ID = string(s)
	}
	if v, ok := get(ms, "parameters"); ok {
		if err := parseRequestParameters(call, v); err != nil {
			return modelError(call.model, err)
		}
	}
	if err := h.parseInputs(call, ms, data[headerLen:]); err != nil {
		return err
	}
	if v, ok := get(ms, "outputs"); ok {
		if err := h.parseOutputs(call, v); err != nil {
			return modelError(call.model, err)
		}
	}
	return nil
}

// modelError prefixes the message of err, an adapter error, with the
// model: "model 'm': <message>".
func modelError(model string, err error) error {
	return prefixError("model '"+model+"': ", err)
}

// inputError prefixes the message of err, an adapter error, with the
// model and the input: "model 'm', input 'INPUT0': <message>". An input
// whose name is not known yet is named by its position in "inputs"
// ("input #2", from 0).
func inputError(model, input string, err error) error {
	return prefixError("model '"+model+"', input "+input+": ", err)
}

func prefixError(prefix string, err error) error {
	e, ok := errors.AsType[*triton.Error](err)
	if !ok || e.Model != "" {
		return err // the server's errors name the model already
	}
	return &triton.Error{Code: e.Code, RequestID: e.RequestID, Err: fmt.Errorf("%s%w", prefix, e.Err)}
}

// reservedParameter reports whether a request parameter's key is one
// Triton keeps for itself (server common.h kReservedParameterKeys, and the
// "triton_" prefix).
func reservedParameter(key string) bool {
	switch key {
	case "sequence_id", "sequence_start", "sequence_end", "priority", "timeout", "binary_data_output", "headers":
		return true
	}
	return strings.HasPrefix(key, "triton_")
}

// forwardHeaders adds the request headers whose lower-case names h.forward
// matches to the request's parameters as strings (see
// [WithHeaderForwardPattern]), after the body's parameters as Triton
// does: a header replaces a body parameter of its name. Headers are taken
// in name order, so that a reserved name is reported the same way every
// time.
func (h *handler) forwardHeaders(call *inferCall, r *http.Request) error {
	type header struct{ name, value string }
	var hs []header
	if r.Host != "" && h.forward.MatchString("host") {
		hs = append(hs, header{"host", r.Host}) // net/http moves Host out of Header
	}
	for k, vs := range r.Header {
		if name := strings.ToLower(k); h.forward.MatchString(name) {
			hs = append(hs, header{name, strings.Join(vs, ", ")})
		}
	}
	slices.SortFunc(hs, func(a, b header) int { return strings.Compare(a.name, b.name) })
	for _, hd := range hs {
		if reservedParameter(hd.name) {
			return modelError(call.model, errorf(triton.InvalidArgument, "Header '%s' is reserved for Triton usage and cannot be forwarded.", hd.name))
		}
		if call.req.Parameters == nil {
			call.req.Parameters = make(map[string]any, len(hs))
		}
		call.req.Parameters[hd.name] = hd.value
	}
	return nil
}

func parseErr(field, msg string) error {
	return errorf(triton.InvalidArgument, "Unable to parse '%s': %s", field, msg)
}

// parseRequestParameters reads the request-level "parameters": the
// reserved keys (sequence_id, sequence_start, sequence_end, priority,
// timeout in µs, binary_data_output, headers) configure the request
// (protocol spec §1.14, §1.15); keys starting with "triton_" are refused;
// every other key travels to the model as a request parameter.
func parseRequestParameters(call *inferCall, v jval) error {
	if !v.isObject() {
		return parseErr("parameters", errNotObject)
	}
	kind := kindJSON
	req := &call.req
	for _, m := range v.members() {
		key := string(m.key)
		switch key {
		case "sequence_id":
			if n, ok := m.val.uint(); ok {
				req.SequenceID = n
			} else if s, ok := m.val.str(); ok {
				if len(s) > 128 {
					// Triton: UNSUPPORTED (501), for a client's mistake.
					return errorf(triton.InvalidArgument, "string correlation ID cannot be longer than 128 characters")
				}
				req.SequenceIDString = string(s)
			} else {
				return parseErr(key, errNotString)
			}
		case "sequence_start", "sequence_end":
			b, ok := m.val.boolean()
			if !ok {
				return parseErr(key, errNotBool)
			}
			if key == "sequence_start" {
				req.SequenceStart = b
			} else {
				req.SequenceEnd = b
			}
		case "priority":
			n, ok := m.val.uint()
			if !ok {
				return parseErr(key, errNotUint)
			}
			req.Priority = n
		case "timeout":
			n, ok := m.val.uint()
			if !ok {
				return parseErr(key, errNotUint)
			}
			if n > math.MaxInt64/uint64(time.Microsecond) {
				req.Timeout = math.MaxInt64
			} else {
				req.Timeout = time.Duration(n) * time.Microsecond
			}
		case "binary_data_output":
			b, ok := m.val.boolean()
			if !ok {
				return parseErr(key, errNotBool)
			}
			kind = kindJSON
			if b {
				kind = kindBinary
			}
		case "headers":
			// Reserved for header forwarding; never a model parameter.
		default:
			if strings.HasPrefix(key, "triton_") {
				return errorf(triton.InvalidArgument, "parameter keys starting with 'triton_' are reserved for Triton usage and should not be specified.")
			}
			val, ok := parameterValue(m.val)
			if !ok {
				return errorf(triton.InvalidArgument, "parameter '%s' has invalid type. It should be either 'int', 'bool', or 'string'.", key)
			}
			if req.Parameters == nil {
				req.Parameters = make(map[string]any)
			}
			req.Parameters[key] = val
		}
	}
	call.defaultKind = kind
	return nil
}

// parameterValue converts a custom parameter as Triton does: string,
// integer that fits an int64, bool, any other number as a float64.
func parameterValue(v jval) (any, bool) {
	if s, ok := v.str(); ok {
		return string(s), true
	}
	if n, ok := v.int(); ok {
		return n, true
	}
	if b, ok := v.boolean(); ok {
		return b, true
	}
	if f, ok := v.float(); ok {
		return f, true
	}
	return nil, false
}

// parseInputs decodes the "inputs" array; binary holds the bytes after the
// JSON header, consumed in input order.
func (h *handler) parseInputs(call *inferCall, ms []member, binary []byte) error {
	v, ok := get(ms, "inputs")
	if !ok || !v.isArray() {
		return parseErr("inputs", errNotArray)
	}
	pos, i := 0, 0
	var inBuf, pmBuf [8]member
	var err error
	v.each(func(e jval) bool {
		var who inputLabel
		pos, err = h.parseInput(call, e, inBuf[:0], pmBuf[:0], binary, pos, &who)
		if err != nil && !who.named {
			label := "#" + strconv.Itoa(i)
			if who.name != nil {
				label = "'" + string(who.name) + "'"
			}
			err = inputError(call.model, label, err)
		}
		i++
		return err == nil
	})
	if err != nil {
		return err
	}
	if pos != len(binary) {
		return errorf(triton.InvalidArgument, "unexpected additional input data for model '%s'", call.model)
	}
	return nil
}

// inputLabel is what names an input in the errors of parseInput.
type inputLabel struct {
	name  []byte // nil until the input's name is known
	named bool   // the error names the input and the model already
}

// parseInput decodes one entry of "inputs"; binary[pos:] are the binary
// bytes not yet consumed. It returns the new pos; who tells how to name
// the input in an error.
func (h *handler) parseInput(call *inferCall, e jval, inBuf, pmBuf []member, binary []byte, pos int, who *inputLabel) (int, error) {
	if !e.isObject() {
		return pos, parseErr("inputs", errNotObject)
	}
	in := e.appendMembers(inBuf)
	if nv, ok := get(in, "name"); ok {
		who.name, _ = nv.str()
	}
	params, hasParams := get(in, "parameters")
	if hasParams && !params.isObject() {
		return pos, parseErr("parameters", errNotObject)
	}
	pm := params.appendMembers(pmBuf)
	_, hasData := get(in, "data")
	_, hasBinary := get(pm, "binary_data_size")
	_, hasSHM := get(pm, "shared_memory_region")
	if n := b2i(hasData) + b2i(hasBinary) + b2i(hasSHM); n != 1 {
		msg := "Input must set only one of the following fields: 'data', 'binary_data_size' in 'parameters', 'shared_memory_region' in 'parameters'. But"
		if n == 0 {
			msg += " no field is set"
		} else {
			msg += " set"
			if hasData {
				msg += " 'data'"
			}
			if hasBinary {
				msg += " 'binary_data_size'"
			}
			if hasSHM {
				msg += " 'shared_memory_region'"
			}
		}
		return pos, errorf(triton.InvalidArgument, "%s", msg)
	}
	nv, _ := get(in, "name")
	name, ok := nv.str()
	if !ok {
		return pos, parseErr("name", errNotString)
	}
	dv, _ := get(in, "datatype")
	dts, ok := dv.str()
	if !ok {
		return pos, parseErr("datatype", errNotString)
	}
	sv, _ := get(in, "shape")
	shape, err := parseShape(sv)
	if err != nil {
		return pos, err
	}
	t := tensor.Tensor{Name: string(name), DataType: tensor.ParseDataType(string(dts)), Shape: shape}
	switch {
	case hasBinary:
		bv, _ := get(pm, "binary_data_size")
		n, ok := bv.uint()
		if !ok {
			return pos, parseErr("binary_data_size", errNotUint)
		}
		if avail := uint64(len(binary) - pos); n > avail {
			who.named = true
			return pos, errorf(triton.InvalidArgument, "unexpected size for input '%s', expecting %d additional bytes for model '%s'", t.Name, n-avail, call.model)
		}
		t.Data = wire.Aligned(binary[pos:pos+int(n):pos+int(n)], t.DataType)
		pos += int(n)
	case hasSHM:
		data, err := h.shmInput(call, t.Name, pm)
		if err != nil {
			return pos, err
		}
		t.Data = data
	default:
		if t.Data, err = h.decodeJSONInput(t, in, call.body); err != nil {
			return pos, err
		}
	}
	call.req.Inputs = append(call.req.Inputs, t)
	return pos, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// parseShape reads a shape: an array of unsigned integers.
func parseShape(v jval) (tensor.Shape, error) {
	if !v.isArray() {
		return nil, parseErr("shape", errNotArray)
	}
	shape := tensor.Shape{}
	var err error
	v.each(func(e jval) bool {
		d, ok := e.uint()
		if !ok {
			err = parseErr("shape", errNotUint)
			return false
		}
		if d > math.MaxInt64 {
			err = parseErr("shape", "dimension "+strconv.FormatUint(d, 10)+" is too large")
			return false
		}
		shape = append(shape, int64(d))
		return true
	})
	return shape, err
}

// parseOutputs decodes the "outputs" array.
func (h *handler) parseOutputs(call *inferCall, v jval) error {
	if !v.isArray() {
		return parseErr("outputs", errNotArray)
	}
	var omBuf, pmBuf [8]member
	for _, e := range v.elements() {
		if !e.isObject() {
			return parseErr("outputs", errNotObject)
		}
		om := e.appendMembers(omBuf[:0])
		params, hasParams := get(om, "parameters")
		if hasParams && !params.isObject() {
			return parseErr("parameters", errNotObject)
		}
		pm := params.appendMembers(pmBuf[:0])
		_, hasSHM := get(pm, "shared_memory_region")
		if hasSHM {
			if _, ok := get(pm, "classification"); ok {
				return errorf(triton.InvalidArgument, "Output can't set both 'shared_memory_region' and 'classification'")
			}
			if bv, ok := get(pm, "binary_data"); ok {
				b, ok := bv.boolean()
				if !ok {
					return errorf(triton.InvalidArgument, "Unable to set 'binary_data': %s", errNotBool)
				}
				if b {
					return errorf(triton.InvalidArgument, "Output can't set both 'shared_memory_region' and 'binary_data'")
				}
			}
		}
		nv, _ := get(om, "name")
		name, ok := nv.str()
		if !ok {
			return parseErr("name", errNotString)
		}
		out := requestedOutput{name: string(name), kind: call.defaultKind}
		if cv, ok := get(pm, "classification"); ok {
			n, ok := cv.uint()
			if !ok {
				return errorf(triton.InvalidArgument, "Unable to set 'classification': %s", errNotUint)
			}
			out.classes = n
		}
		switch {
		case hasSHM:
			view, err := h.shmOutput(call, out.name, pm)
			if err != nil {
				return err
			}
			out.kind, out.shm = kindSHM, view
		default:
			if bv, ok := get(pm, "binary_data"); ok {
				b, ok := bv.boolean()
				if !ok {
					return parseErr("binary_data", errNotBool)
				}
				out.kind = kindJSON
				if b {
					out.kind = kindBinary
				}
			}
		}
		call.outputs = append(call.outputs, out)
		call.req.Outputs = append(call.req.Outputs, out.name)
	}
	return nil
}

// parseRawInput handles a raw binary request (header length 0): the body
// is the data of the model's only input, as Triton's "raw_input". A fixed-
// size input's shape is deduced from the body size (at most one variable
// dimension), a BYTES input is one element holding the whole body; a
// batching model gets it as a batch of one. Every output is returned in
// binary.
func (h *handler) parseRawInput(call *inferCall, data []byte) error {
	cfg, err := h.srv.ModelConfig(call.model, call.req.Version)
	if err != nil {
		return err
	}
	inputs := cfg.GetInput()
	if len(inputs) != 1 {
		return errorf(triton.InvalidArgument, "raw input (%s: 0) needs a model with exactly 1 input, but model '%s' has %d", headerLengthHeader, call.model, len(inputs))
	}
	in := inputs[0]
	dt := tensor.DataType(in.GetDataType())
	var shape tensor.Shape
	if dt == tensor.Bytes {
		shape = tensor.Shape{1}
		data = tensor.AppendElement(make([]byte, 0, 4+len(data)), data)
	} else {
		size := dt.Size()
		if size == 0 || len(data)%size != 0 {
			return errorf(triton.InvalidArgument, "raw input size %d is not a multiple of the %d-byte element size of input '%s' (%s) of model '%s'", len(data), size, in.GetName(), dt, call.model)
		}
		count := int64(len(data) / size)
		shape = append(tensor.Shape{}, in.GetDims()...)
		variable, fixed := -1, int64(1)
		for i, d := range shape {
			if d < 0 {
				if variable >= 0 {
					return errorf(triton.InvalidArgument, "unable to deduce the shape of raw input '%s' of model '%s': dims %v have more than one variable dimension", in.GetName(), call.model, in.GetDims())
				}
				variable = i
				continue
			}
			fixed *= d
		}
		if variable >= 0 {
			if fixed == 0 || count%fixed != 0 {
				return errorf(triton.InvalidArgument, "unable to deduce the shape of raw input '%s' of model '%s' from %d bytes with dims %v", in.GetName(), call.model, len(data), in.GetDims())
			}
			shape[variable] = count / fixed
		}
	}
	if cfg.GetMaxBatchSize() > 0 {
		shape = append(tensor.Shape{1}, shape...)
	}
	call.req.Inputs = []tensor.Tensor{{Name: in.GetName(), DataType: dt, Shape: shape, Data: wire.Aligned(data, dt)}}
	call.defaultKind = kindBinary
	return nil
}

// shmInput reads an input from shared memory. The bytes are copied out of
// the region (with sysshm.Copy): a backend reading the client's memory
// directly would crash the process if the client shrank the object
// meanwhile. Being copied, such an input is bounded by the size limit like
// any other.
func (h *handler) shmInput(call *inferCall, name string, pm []member) ([]byte, error) {
	region, offset, size, err := shmParams(pm)
	if err != nil {
		return nil, err
	}
	if h.shm == nil {
		return nil, wire.ErrSHMDisabled
	}
	if size > uint64(h.maxSize) {
		return nil, errorf(triton.InvalidArgument, "Input '%s' has a byte_size (%d bytes) that exceeds the maximum allowed value of %d bytes. Use --http-max-input-size to increase the limit (httpapi.WithMaxRequestSize).",
			name, size, h.maxSize)
	}
	return wire.ReadSHM(h.shm, region, offset, size)
}

// shmOutput resolves an output's region before the inference runs, as
// Triton does, so that a bad region fails the request early. The view is
// released when the call ends.
func (h *handler) shmOutput(call *inferCall, name string, pm []member) ([]byte, error) {
	region, offset, size, err := shmParams(pm)
	if err != nil {
		return nil, err
	}
	if h.shm == nil {
		return nil, wire.ErrSHMDisabled
	}
	view, release, err := h.shm.Use(region, offset, size)
	if err != nil {
		return nil, wire.SHMError(err)
	}
	call.releases = append(call.releases, release)
	return view, nil
}

// shmParams reads shared_memory_region, _offset (default 0) and
// _byte_size (default 0).
func shmParams(pm []member) (region string, offset, size uint64, err error) {
	rv, _ := get(pm, "shared_memory_region")
	s, ok := rv.str()
	if !ok {
		return "", 0, 0, parseErr("shared_memory_region", errNotString)
	}
	if v, ok := get(pm, "shared_memory_offset"); ok {
		if offset, ok = v.uint(); !ok {
			return "", 0, 0, parseErr("shared_memory_offset", errNotUint)
		}
	}
	if v, ok := get(pm, "shared_memory_byte_size"); ok {
		if size, ok = v.uint(); !ok {
			return "", 0, 0, parseErr("shared_memory_byte_size", errNotUint)
		}
	}
	return string(s), offset, size, nil
}

// inferenceTarget checks an inference endpoint's method and restriction
// and finds the model version it names; on failure it has answered.
func (h *handler) inferenceTarget(w http.ResponseWriter, r *http.Request, model, verStr string) (triton.ModelSummary, bool) {
	if !h.guard(w, r, wire.Inference, http.MethodPost) {
		return triton.ModelSummary{}, false
	}
	ver, err := parseVersion(model, verStr)
	if err != nil {
		h.writeError(w, err)
		return triton.ModelSummary{}, false
	}
	sum, err := h.srv.ModelSummary(r.Context(), model, ver)
	if err != nil {
		h.writeError(w, err)
		return triton.ModelSummary{}, false
	}
	return sum, true
}
