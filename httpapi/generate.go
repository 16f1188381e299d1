package httpapi

import (
	"context"
	"errors"
	"iter"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/internal/jsontext"
	"github.com/triton-go/triton/tensor"
)

// The generate extension (Triton's provisional extension_generate.md,
// protocol spec §1.16) turns a flat JSON object into an inference request
// and each response into a flat JSON object:
//
//	POST /v2/models/llm/generate  {"text_input":"Hi","max_tokens":8,"parameters":{"stream":false}}
//	200 {"model_name":"llm","model_version":"1","text_output":"Hi there"}
//
// generate_stream answers the same request with server-sent events, one
// "data: {...}\n\n" per response, flushed as each arrives.
//
// Design: the handler asks a [streamer] for a request's responses:
// [triton.Server.InferStream], every response of a decoupled model as it
// comes (each its own event on generate_stream) and the one response of
// any other model (tests put fakes in its place). The handler consumes the iterator on the request's goroutine and
// starts none of its own: stopping the loop (client gone, write failed) is
// how the request ends early, and the request's context, which net/http
// cancels when the client disconnects, is the one the streamer runs with.

// streamer runs req with ctx and yields its responses: every response of a
// decoupled model, exactly one for any other model (or one error). A
// (nil, nil) item, such as a final flag without a response, is skipped. A
// consumer may stop early; the streamer must then end the request. The
// iterator is consumed once, on the caller's goroutine.
type streamer func(ctx context.Context, req *triton.InferRequest) iter.Seq2[*triton.InferResponse, error]

// errNotOneResponse is Triton's answer to generate (not generate_stream)
// when the model produced no response or more than one.
const errNotOneResponse = "generate expects model to produce exactly 1 response, use generate stream for model that generates various number of responses"

// generateCall is one generate request being decoded.
type generateCall struct {
	model    string
	inputs   map[string]triton.TensorMetadata // the model's inputs by name
	req      triton.InferRequest
	consumed int64  // bytes of inputs decoded so far
	body     []byte // the request body, which JSON values alias
}

// handleGenerate serves POST /v2/models/{m}[/versions/{v}]/generate and,
// with stream, .../generate_stream.
//
// Checks come in Triton's order: restriction, method, version, the model
// (its metadata gives the inputs' datatypes and shapes), Content-Encoding
// (identity only, as Triton), then the body. Errors found before the first
// response are {"error":"..."} with the status of their code, for both
// endpoints. Responses are never compressed: an SSE event must reach the
// client when it is written, not when a compressor's block fills, and
// Triton compresses neither endpoint.
func (h *handler) handleGenerate(w http.ResponseWriter, r *http.Request, model, verStr string, stream bool) {
	sum, ok := h.inferenceTarget(w, r, model, verStr)
	if !ok {
		return
	}
	md, err := h.srv.ModelMetadata(model, sum.Version)
	if err != nil {
		h.writeError(w, err)
		return
	}
	switch r.Header.Get("Content-Encoding") {
	case "", "identity":
	default:
		h.writeError(w, modelError(model, errorf(triton.InvalidArgument, "Unsupported content-encoding, only 'identity' is supported.")))
		return
	}
	b, err := h.readBody(w, r, false, -1)
	if err != nil {
		h.writeError(w, err)
		return
	}
	defer b.release()

	c := &generateCall{model: model, inputs: make(map[string]triton.TensorMetadata, len(md.Inputs))}
	for _, in := range md.Inputs {
		c.inputs[in.Name] = in
	}
	c.req.Model, c.req.Version = model, sum.Version
	if err := h.parseGenerate(c, b.data); err != nil {
		h.writeError(w, err)
		return
	}
	responses := h.stream(r.Context(), &c.req)
	if stream {
		h.writeGenerateStream(w, r, responses)
	} else {
		h.writeGenerate(w, responses)
	}
}

// parseGenerate decodes a generate body into c.req. Every top-level member
// is mapped by its key, as Triton's ConvertGenerateRequest does: a key
// naming a model input becomes that input; any other key becomes a request
// parameter (string, integer that fits an int64, or bool; anything else is
// refused). "parameters" holds an object whose members are mapped the same
// way (so inputs may travel there too). "id", a string, is also the
// request ID; like every other key it is mapped as well (Triton forwards it
// as a parameter "id" too).
func (h *handler) parseGenerate(c *generateCall, data []byte) error {
	c.body = data
	root, err := parseJSON(data)
	if err != nil {
		return modelError(c.model, errorf(triton.InvalidArgument, "%v", err))
	}
	if !root.isObject() {
		return modelError(c.model, errorf(triton.InvalidArgument, "failed to parse the request JSON buffer: the request must be a JSON object"))
	}
	ms := root.members()
	if v, ok := get(ms, "id"); ok {
		s, ok := v.str()
		if !ok {
			return modelError(c.model, parseErr("id", errNotString))
		}
		c.req.ID = string(s)
	}
	for _, m := range ms {
		key := string(m.key)
		if key != "parameters" {
			if err := h.mapGenerateMember(c, key, m.val, ""); err != nil {
				return err
			}
			continue
		}
		if _, ok := c.inputs[key]; ok {
			return modelError(c.model, errorf(triton.InvalidArgument, "Keyword 'parameters' for nested schema also given as input tensor name"))
		}
		if !m.val.isObject() {
			return modelError(c.model, errorf(triton.InvalidArgument, "Expected JSON object for keyword: 'parameters': %s", errNotObject))
		}
		for _, pm := range m.val.members() {
			if err := h.mapGenerateMember(c, string(pm.key), pm.val, "Converting keyword: 'parameters': "); err != nil {
				return err
			}
		}
	}
	return nil
}

// mapGenerateMember maps one key: to the input of that name, or to a
// request parameter. within is the prefix Triton gives errors inside
// "parameters".
func (h *handler) mapGenerateMember(c *generateCall, key string, v jval, within string) error {
	md, ok := c.inputs[key]
	if !ok {
		val, ok := generateParameter(v)
		if !ok {
			return modelError(c.model, errorf(triton.InvalidArgument, "%sparameter '%s' has invalid type. It should be either 'int', 'bool', or 'string'.", within, key))
		}
		if c.req.Parameters == nil {
			c.req.Parameters = make(map[string]any)
		}
		c.req.Parameters[key] = val
		return nil
	}
	t, err := h.generateInput(c, md, v)
	if err != nil {
		if within != "" {
			err = prefixError(within, err)
		}
		return inputError(c.model, "'"+key+"'", err)
	}
	c.req.Inputs = append(c.req.Inputs, t)
	return nil
}

// generateParameter converts a non-input member as Triton's generate
// endpoint does: a string, an integer that fits an int64, or a bool.
// Unlike the infer endpoint's "parameters", other numbers are refused.
func generateParameter(v jval) (any, bool) {
	p, ok := parameterValue(v)
	if _, float := p.(float64); float {
		return nil, false
	}
	return p, ok
}

// generateInput makes the input md from a member's value: a scalar is one
// element, an array's length is the element count (its elements may nest,
// but must then hold exactly that many scalars, as in Triton). Strings
// feed BYTES inputs; numbers and booleans are read as the input's datatype,
// with the infer endpoint's rules (strings must be valid UTF-8, see
// [checkUTF8]). The shape is the model's (its
// metadata's, with the batch dimension) with the count spread over it:
// fixed dimensions must divide it, the innermost variable dimension takes
// what remains and the others are 1. An empty array gives an empty tensor
// of shape [], which the server then judges, as Triton does.
func (h *handler) generateInput(c *generateCall, md triton.TensorMetadata, v jval) (tensor.Tensor, error) {
	dt := tensor.ParseDataType(md.DataType)
	t := tensor.Tensor{Name: md.Name, DataType: dt, Shape: tensor.Shape{}}
	count := int64(1)
	if v.isArray() {
		count = 0
		v.each(func(jval) bool { count++; return true })
	}
	var size int64
	if dt == tensor.Bytes {
		err := forEachScalar(v, func(e jval) error {
			s, ok := e.str()
			if !ok {
				return errorf(triton.InvalidArgument, "Unable to parse JSON bytes array: %s", errNotString)
			}
			if err := checkUTF8(c.body, e); err != nil {
				return err
			}
			size += 4 + int64(len(s))
			return nil
		})
		if err != nil {
			return t, err
		}
	} else {
		es := int64(dt.Size())
		if es == 0 {
			return t, errorf(triton.InvalidArgument, "input '%s' has unsupported datatype %s", md.Name, md.DataType)
		}
		size = count * es // count ≤ the body's length: no overflow
	}
	if size == 0 {
		t.Data = []byte{}
		return t, nil
	}
	if size > h.maxSize-c.consumed {
		return t, errorf(triton.InvalidArgument, "request size of %d bytes with input '%s' of size %d bytes exceeds the maximum allowed input size of %d. Use --http-max-input-size to increase the limit.",
			c.consumed, md.Name, size, h.maxSize)
	}
	c.consumed += size
	shape, ok := generateShape(md.Shape, count)
	if !ok {
		return t, errorf(triton.InvalidArgument, "The schema can not convert input '%s' to tensor with proper shape", md.Name)
	}
	t.Shape = shape
	switch dt {
	case tensor.FP16, tensor.BF16:
		return t, errorf(triton.InvalidArgument, "receiving %s data via JSON is not supported. Please use the binary data format for input %s", dt, md.Name)
	}
	tooMany := func() error {
		return errorf(triton.InvalidArgument, "Unable to parse 'data': Shape does not match true shape of 'data' field")
	}
	var i int64
	var err error
	if dt == tensor.Bytes {
		out := make([]byte, 0, size)
		err = forEachScalar(v, func(e jval) error {
			if i >= count {
				return tooMany()
			}
			s, _ := e.str()
			out = tensor.AppendElement(out, s)
			i++
			return nil
		})
		t.Data = out
	} else {
		es := int64(dt.Size())
		out := make([]byte, size)
		err = forEachScalar(v, func(e jval) error {
			if i >= count {
				return tooMany()
			}
			if err := putElement(out[i*es:], dt, e, md.Name); err != nil {
				return err
			}
			i++
			return nil
		})
		t.Data = out
	}
	if err != nil {
		return t, err
	}
	if i != count {
		return t, errorf(triton.InvalidArgument, "Failed to parse 'data' field: shape does not match true shape")
	}
	return t, nil
}

// generateShape spreads count elements over dims as Triton's generate
// endpoint does; false when they do not fit. A fixed dimension of 0 never
// fits (count is at least 1 here).
func generateShape(dims []int64, count int64) (tensor.Shape, bool) {
	shape := slices.Clone(tensor.Shape(dims))
	n := count
	for i := len(shape) - 1; i >= 0; i-- {
		if d := shape[i]; d >= 0 {
			if d == 0 || n%d != 0 {
				return nil, false
			}
			n /= d
		}
	}
	for i := len(shape) - 1; i >= 0; i-- {
		if shape[i] < 0 {
			shape[i], n = n, 1
		}
	}
	return shape, n == 1
}

// writeGenerate answers generate: the one response as a JSON object, or
// the error, which ends the request when it comes first. A model that
// produces no response or more than one (a decoupled model) gets Triton's
// errNotOneResponse, with 400; the request is stopped at its second
// response.
func (h *handler) writeGenerate(w http.ResponseWriter, responses iter.Seq2[*triton.InferResponse, error]) {
	var first *triton.InferResponse
	var firstErr error
	n := 0
	for resp, err := range responses {
		if resp == nil && err == nil {
			continue // nothing to answer (a streamer's final flag alone)
		}
		n++
		if n > 1 {
			break
		}
		first, firstErr = resp, err
		if err != nil {
			break // the request failed: nothing more to wait for
		}
	}
	switch {
	case n != 1:
		writeErrorStatus(w, http.StatusBadRequest, errNotOneResponse)
	case firstErr != nil:
		h.writeError(w, firstErr)
	default:
		body, err := appendGenerateResponse(make([]byte, 0, 256), first)
		if err != nil {
			h.writeError(w, err)
			return
		}
		writeJSON(w, body)
	}
}

// sseContentType is the Content-Type of generate_stream's answers.
const sseContentType = "text/event-stream; charset=utf-8"

// writeGenerateStream answers generate_stream: status 200 and one event
// "data: <response JSON>\n\n" per response, each flushed as it comes; an
// error after the first event is the event "data: {"error":"..."}\n\n",
// and the stream goes on while the streamer yields. An error before any
// event is answered as a plain JSON error with its status (no event was
// sent, so the status can still tell). A client that goes away ends its
// request's context; the loop then stops, and so does the streamer.
func (h *handler) writeGenerateStream(w http.ResponseWriter, r *http.Request, responses iter.Seq2[*triton.InferResponse, error]) {
	ctx := r.Context()
	rc := http.NewResponseController(w)
	started := false
	buf := make([]byte, 0, 256)
	for resp, err := range responses {
		if ctx.Err() != nil {
			break // the client is gone
		}
		if resp == nil && err == nil {
			continue
		}
		buf = append(buf[:0], "data: "...)
		if err == nil {
			var body []byte
			if body, err = appendGenerateResponse(buf, resp); err == nil {
				buf = body
			}
		}
		if err != nil {
			if !started {
				h.writeError(w, err)
				return
			}
			buf = appendErrorJSON(buf[:len("data: ")], message(err))
		}
		buf = append(buf, "\n\n"...)
		if !started {
			startStream(w)
			started = true
		}
		if _, err := w.Write(buf); err != nil {
			break
		}
		if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
			break
		}
	}
	if !started {
		startStream(w) // no response at all: an empty stream
	}
}

func startStream(w http.ResponseWriter) {
	w.Header().Set("Content-Type", sseContentType)
	w.WriteHeader(http.StatusOK)
}

// appendErrorJSON appends {"error":"<msg>"}.
func appendErrorJSON(b []byte, msg string) []byte {
	b = append(b, `{"error":`...)
	b = jsontext.AppendString(b, msg)
	return append(b, '}')
}

// generateMember is one member of a generate response: a reserved string
// (out < 0) or the output at index out.
type generateMember struct {
	key string
	val string
	out int
}

// appendGenerateResponse appends resp as Triton's generate endpoint writes
// it: one object whose members, sorted by name (byte order, as Triton's
// std::map), are "id" (when the request had one), "model_name",
// "model_version" (a string) and every output, an output of one element as
// that element, any other as a flat array. An output named like a
// reserved member, or like an earlier output, is left out, as in Triton.
func appendGenerateResponse(b []byte, resp *triton.InferResponse) ([]byte, error) {
	var buf [8]generateMember
	ms := buf[:0]
	if resp.ID != "" {
		ms = append(ms, generateMember{key: "id", val: resp.ID, out: -1})
	}
	ms = append(ms,
		generateMember{key: "model_name", val: resp.Model, out: -1},
		generateMember{key: "model_version", val: strconv.FormatInt(resp.Version, 10), out: -1})
	for i := range resp.Outputs {
		name := resp.Outputs[i].Name
		if !slices.ContainsFunc(ms, func(m generateMember) bool { return m.key == name }) {
			ms = append(ms, generateMember{key: name, out: i})
		}
	}
	slices.SortFunc(ms, func(a, b generateMember) int { return strings.Compare(a.key, b.key) })
	b = append(b, '{')
	for i, m := range ms {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsontext.AppendString(b, m.key)
		b = append(b, ':')
		if m.out < 0 {
			b = jsontext.AppendString(b, m.val)
			continue
		}
		t := resp.Outputs[m.out]
		count, err := t.Shape.NumElements()
		if err != nil {
			return nil, errorf(triton.Internal, "output '%s': %v", t.Name, err)
		}
		start := len(b)
		if b, err = appendJSONData(b, t); err != nil {
			return nil, err
		}
		if count == 1 { // "[x]" -> "x"
			n := copy(b[start:], b[start+1:len(b)-1])
			b = b[:start+n]
		}
	}
	return append(b, '}'), nil
}
