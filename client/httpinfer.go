package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/internal/jsontext"
	"github.com/triton-go/triton/tensor"
)

// headerLengthHeader carries the length of the JSON part of a body that
// also carries binary tensors (the binary tensor data extension).
const headerLengthHeader = "Inference-Header-Content-Length"

// reservedParameters are the request parameters the protocol gives a
// meaning of its own; InferRequest has fields for them.
var reservedParameters = []string{"sequence_id", "sequence_start", "sequence_end", "priority", "timeout", "binary_data_output", "headers"}

// Infer runs req on the server: POST /v2/models/{m}[/versions/{v}]/infer.
//
// Tensors travel in binary (the binary tensor data extension: inputs
// after the JSON header, sized by Inference-Header-Content-Length, and
// every output asked for in binary) unless [WithJSONTensors] was given.
// A body of up to 64 KiB is assembled in one buffer, so that it leaves
// with the request's headers in one write; a larger one is streamed from
// the request's tensors, without a copy of the whole (unless compressed).
// Each output is read into a buffer of its own, so its Data is aligned
// for tensor.View. The request's
// Priority, Timeout (in microseconds, rounded up) and sequence fields go
// as Triton's reserved parameters; req.Parameters may hold bool, int64,
// uint64, float64 and string values, but none of the reserved names.
//
// ctx bounds the whole call: when it ends the connection is closed, which
// cancels the request on the server, and Infer returns a Cancelled or
// DeadlineExceeded error wrapping ctx.Err(). HTTP carries no deadline to
// the server. A ctx from [WithTiming] gets the call's send and receive
// times.
func (h *HTTP) Infer(ctx context.Context, req *triton.InferRequest) (*triton.InferResponse, error) {
	tm := timerOf(ctx)
	var start int64
	if tm != nil {
		start = now()
		*tm.t = Timing{}
		tm.wrote.Store(0)
	}
	if req == nil {
		return nil, localError(triton.InvalidArgument, about{}, errors.New("nil request"))
	}
	a := aboutRequest(req)
	p, _, err := regions(req)
	if err != nil {
		return nil, err
	}
	var data int
	for _, t := range req.Inputs {
		data += len(t.Data)
	}
	if data > oneBuffer {
		data = 0
	}
	js, bins, err := h.encodeInfer(req, p, data)
	if err != nil {
		return nil, localError(triton.InvalidArgument, a, err)
	}
	hdr := make(http.Header, 4)
	size := int64(len(js))
	for _, d := range bins {
		size += int64(len(d))
	}
	if len(bins) > 0 {
		hdr["Content-Type"] = octetStream
		hdr[headerLengthHeader] = []string{strconv.Itoa(len(js))}
	} else {
		hdr["Content-Type"] = applicationJSON
	}
	var body io.Reader
	if c := h.opts.reqCompression; c != NoCompression {
		b, err := compress(c, js, bins)
		if err != nil {
			return nil, localError(triton.Internal, a, err)
		}
		hdr["Content-Encoding"] = []string{string(c)}
		body, size = bytes.NewReader(b), int64(len(b))
	} else if size <= oneBuffer {
		// js has room for the data (encodeInfer reserved it).
		b := js
		for _, d := range bins {
			b = append(b, d...)
		}
		body = bytes.NewReader(b)
	} else {
		bufs := make(net.Buffers, 0, 1+len(bins))
		bufs = append(bufs, js)
		bufs = append(bufs, bins...)
		body = &bufs
	}
	if c := h.opts.respCompression; c != NoCompression {
		hdr["Accept-Encoding"] = []string{string(c)}
	}
	resp, err := h.roundTrip(ctx, a, http.MethodPost, modelPath(req.Model, req.Version, "/infer"), body, size, hdr)
	var headers int64
	if tm != nil {
		headers = tm.sent(start)
		defer tm.received(headers)
	}
	if err != nil {
		return nil, err
	}
	defer h.release(resp)
	if resp.StatusCode != http.StatusOK {
		return nil, h.statusError(ctx, a, resp)
	}
	out, err := decodeInfer(resp)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctxError(a, ctx.Err())
		}
		if e, ok := errors.AsType[*triton.Error](err); ok {
			e.Model, e.Version, e.RequestID = a.model, a.version, a.id
			return nil, e
		}
		return nil, transportError(ctx, a, err)
	}
	// What is left (nothing, from a well-behaved server) is read so that
	// the connection goes back to the pool.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	return out, nil
}

// oneBuffer is the size of body up to which Infer sends the JSON header
// and the binary sections as one buffer. net/http writes a body it knows
// to be in memory (a *bytes.Reader) into the connection's write buffer
// (64 KiB) behind the request's headers, so a small request leaves in one
// write(2), one TCP segment. Any other body makes it flush the headers
// first and copy the body through a buffer of its own: two writes, two
// segments the server reads separately. BenchmarkInfer/http (one caller,
// client and server in one process, a 784-byte tensor) took 62-73 µs a
// request in one write against 85-92 µs in two, alternating 2 s runs
// (and see docs/performance.md, "perf_analyzer against ghz and hey").
// Larger bodies are streamed from the tensors' own memory rather than
// copied whole into a new buffer as large as the request; the headers'
// separate write is small beside their transfer.
const oneBuffer = 64 << 10

// Shared header values.
var (
	octetStream     = []string{"application/octet-stream"}
	applicationJSON = []string{"application/json"}
)

// encodeInfer writes req's JSON header and lists the binary sections that
// follow it. The header's buffer has room for reserve bytes more.
func (h *HTTP) encodeInfer(req *triton.InferRequest, p placement, reserve int) (js []byte, bins [][]byte, err error) {
	binaryOut := !h.opts.json
	b := make([]byte, 0, 128+64*len(req.Inputs)+32*len(req.Outputs)+reserve)
	b = append(b, '{')
	if req.ID != "" {
		b = append(b, `"id":`...)
		b = jsontext.AppendString(b, req.ID)
		b = append(b, ',')
	}
	if b, err = appendRequestParameters(b, req, p.params, binaryOut); err != nil {
		return nil, nil, err
	}
	b = append(b, `"inputs":[`...)
	for i, t := range req.Inputs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = jsontext.AppendString(b, t.Name)
		b = append(b, `,"shape":[`...)
		for j, d := range t.Shape {
			if j > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, d, 10)
		}
		b = append(b, `],"datatype":`...)
		b = jsontext.AppendString(b, t.DataType.String())
		switch r, inRegion := p.inputs[t.Name]; {
		case inRegion:
			b = appendRegion(b, r)
		case h.opts.json && jsonable(t):
			b = append(b, `,"data":`...)
			if b, err = appendJSONData(b, t); err != nil {
				return nil, nil, err
			}
		default:
			b = append(b, `,"parameters":{"binary_data_size":`...)
			b = strconv.AppendInt(b, int64(len(t.Data)), 10)
			b = append(b, '}')
			if len(t.Data) > 0 {
				bins = append(bins, t.Data)
			}
		}
		b = append(b, '}')
	}
	b = append(b, ']')
	if len(req.Outputs) > 0 {
		b = append(b, `,"outputs":[`...)
		for i, name := range req.Outputs {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"name":`...)
			b = jsontext.AppendString(b, name)
			if r, inRegion := p.outputs[name]; inRegion {
				b = appendRegion(b, r)
			} else if binaryOut {
				b = append(b, `,"parameters":{"binary_data":true}`...)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}'), bins, nil
}

// appendRegion appends a tensor's shared-memory parameters.
func appendRegion(b []byte, r Region) []byte {
	b = append(b, `,"parameters":{"shared_memory_region":`...)
	b = jsontext.AppendString(b, r.Name)
	b = append(b, `,"shared_memory_offset":`...)
	b = strconv.AppendUint(b, r.Offset, 10)
	b = append(b, `,"shared_memory_byte_size":`...)
	b = strconv.AppendUint(b, r.ByteSize, 10)
	return append(b, '}')
}

// appendRequestParameters appends the request's "parameters" member (and
// its comma) when it has any: the custom parameters, sorted, then the
// reserved ones its fields set.
func appendRequestParameters(b []byte, req *triton.InferRequest, params map[string]any, binaryOut bool) ([]byte, error) {
	start := len(b)
	b = append(b, `"parameters":{`...)
	n := 0
	key := func(k string) {
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = jsontext.AppendString(b, k)
		b = append(b, ':')
	}
	for _, k := range sortedKeys(params) {
		if err := checkParameter(k, params[k]); err != nil {
			return nil, err
		}
		key(k)
		b = jsontext.AppendParameter(b, params[k]) // checkParameter allows these kinds only
	}
	switch {
	case req.SequenceIDString != "":
		key("sequence_id")
		b = jsontext.AppendString(b, req.SequenceIDString)
	case req.SequenceID != 0:
		key("sequence_id")
		b = strconv.AppendUint(b, req.SequenceID, 10)
	}
	if req.SequenceStart {
		key("sequence_start")
		b = append(b, "true"...)
	}
	if req.SequenceEnd {
		key("sequence_end")
		b = append(b, "true"...)
	}
	if req.Priority != 0 {
		key("priority")
		b = strconv.AppendUint(b, req.Priority, 10)
	}
	if us := timeoutMicros(req.Timeout); us > 0 {
		key("timeout")
		b = strconv.AppendInt(b, us, 10)
	}
	if binaryOut && len(req.Outputs) == 0 {
		key("binary_data_output")
		b = append(b, "true"...)
	}
	if n == 0 {
		return b[:start], nil
	}
	return append(b, '}', ','), nil
}

// checkParameter refuses what no server accepts as a custom parameter.
func checkParameter(k string, v any) error {
	if slices.Contains(reservedParameters, k) {
		return fmt.Errorf("parameter '%s' is reserved by the protocol; set the InferRequest field instead", k)
	}
	switch v := v.(type) {
	case bool, int64, uint64, string:
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("parameter '%s' is %v, not a finite number", k, v)
		}
	default:
		return fmt.Errorf("parameter '%s' has unsupported type %T (want bool, int64, uint64, float64 or string)", k, v)
	}
	return nil
}

// timeoutMicros is a queue timeout in whole microseconds, rounded up so
// that a positive timeout never becomes 0 (the policy's default).
func timeoutMicros(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Microsecond - 1) / time.Microsecond)
}

// compressors pools the writers of each coding.
var compressors = [...]sync.Pool{
	0: {New: func() any { return gzip.NewWriter(nil) }},
	1: {New: func() any { w, _ := zlib.NewWriterLevel(nil, zlib.DefaultCompression); return w }},
}

type resetWriter interface {
	io.WriteCloser
	Reset(io.Writer)
}

// compress returns the JSON header and binary sections compressed with c.
func compress(c Compression, js []byte, bins [][]byte) ([]byte, error) {
	i := 0
	if c == Deflate {
		i = 1
	}
	w := compressors[i].Get().(resetWriter)
	defer compressors[i].Put(w)
	var buf bytes.Buffer
	w.Reset(&buf)
	if _, err := w.Write(js); err != nil {
		return nil, err
	}
	for _, d := range bins {
		if _, err := w.Write(d); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// inferResponseJSON is the JSON header of an inference response.
type inferResponseJSON struct {
	ID           string                     `json:"id"`
	ModelName    string                     `json:"model_name"`
	ModelVersion string                     `json:"model_version"`
	Parameters   map[string]json.RawMessage `json:"parameters"`
	Outputs      []outputJSON               `json:"outputs"`
}

// outputJSON is an output of an inference response's JSON header.
type outputJSON struct {
	Name       string  `json:"name"`
	Datatype   string  `json:"datatype"`
	Shape      []int64 `json:"shape"`
	Parameters struct {
		BinaryDataSize *uint64 `json:"binary_data_size"`
	} `json:"parameters"`
	Data json.RawMessage `json:"data"`
}

// decodeInfer reads an inference response: the JSON header, then the
// binary outputs, each into a buffer of its own.
func decodeInfer(resp *http.Response) (*triton.InferResponse, error) {
	body := io.Reader(resp.Body)
	known := resp.ContentLength // -1: unknown
	switch enc := resp.Header.Get("Content-Encoding"); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			return nil, err
		}
		body, known = zr, -1
	case "deflate":
		zr, err := zlib.NewReader(resp.Body)
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		body, known = zr, -1
	default:
		return nil, &triton.Error{Code: triton.Internal, Err: fmt.Errorf("client: the server answered with Content-Encoding %q, which was not asked for", enc)}
	}
	var header []byte
	if v := resp.Header.Get(headerLengthHeader); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 || (known >= 0 && n > known) {
			return nil, &triton.Error{Code: triton.Internal, Err: fmt.Errorf("client: invalid %s %q in the response", headerLengthHeader, v)}
		}
		if header, err = readN(body, uint64(n), known); err != nil {
			return nil, err
		}
		if known >= 0 {
			known -= n
		}
	} else {
		var err error
		if header, err = io.ReadAll(body); err != nil {
			return nil, err
		}
		known = 0
	}
	var rj inferResponseJSON
	if !readResponseHeader(header, &rj) {
		rj = inferResponseJSON{}
		if err := json.Unmarshal(header, &rj); err != nil {
			return nil, &triton.Error{Code: triton.Internal, Err: fmt.Errorf("client: malformed inference response: %w", err)}
		}
	}
	ver, _ := strconv.ParseInt(rj.ModelVersion, 10, 64)
	out := &triton.InferResponse{Model: rj.ModelName, Version: ver, ID: rj.ID, Outputs: make([]tensor.Tensor, len(rj.Outputs))}
	for i, o := range rj.Outputs {
		t := tensor.Tensor{Name: o.Name, DataType: tensor.ParseDataType(o.Datatype), Shape: tensor.Shape(o.Shape)}
		if t.Shape == nil {
			t.Shape = tensor.Shape{}
		}
		switch {
		case o.Parameters.BinaryDataSize != nil:
			n := *o.Parameters.BinaryDataSize
			data, err := readN(body, n, known)
			if err != nil {
				return nil, err
			}
			if known >= 0 {
				known -= int64(n)
			}
			t.Data = data
		case o.Data != nil:
			data, err := decodeJSONData(t.DataType, o.Data)
			if err != nil {
				return nil, &triton.Error{Code: triton.Internal, Err: fmt.Errorf("client: output '%s': malformed data: %w", o.Name, err)}
			}
			t.Data = data
		}
		// Neither: an output written to shared memory, without data.
		out.Outputs[i] = t
	}
	if len(rj.Parameters) > 0 {
		out.Parameters = make(map[string]any, len(rj.Parameters))
		for k, raw := range rj.Parameters {
			v, err := parameterValue(raw)
			if err != nil {
				return nil, &triton.Error{Code: triton.Internal, Err: fmt.Errorf("client: response parameter '%s': %w", k, err)}
			}
			out.Parameters[k] = v
		}
	}
	return out, nil
}

// readN reads exactly n bytes into a new buffer; known is how many bytes
// are left in the body (-1: unknown), which a claimed size must not
// exceed. Sizes the body does not vouch for are read as they come, so a
// wrong size cannot make the client allocate more than arrives.
func readN(r io.Reader, n uint64, known int64) ([]byte, error) {
	if known >= 0 && n > uint64(known) {
		return nil, &triton.Error{Code: triton.Internal, Err: fmt.Errorf("client: the response claims %d bytes where %d are left", n, known)}
	}
	if n > math.MaxInt32*2 {
		return nil, &triton.Error{Code: triton.Internal, Err: fmt.Errorf("client: the response claims a tensor of %d bytes", n)}
	}
	if known >= 0 || n <= 1<<20 {
		b := make([]byte, n)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, unexpectedEOF(err)
		}
		return b, nil
	}
	b, err := io.ReadAll(io.LimitReader(r, int64(n)))
	if err != nil {
		return nil, err
	}
	if uint64(len(b)) != n {
		return nil, unexpectedEOF(io.ErrUnexpectedEOF)
	}
	return b, nil
}

func unexpectedEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
