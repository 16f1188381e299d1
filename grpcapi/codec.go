package grpcapi

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
	"sync"
	"time"
	"unsafe"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/triton-go/triton/grpcapi/inferencepb"
)

// The codec. With grpc-go's protobuf codec a tensor is copied more often
// than the transport needs: a request that arrived in several transport
// buffers is joined into one (a copy), from which protobuf copies each
// raw_input_contents entry into memory of its own (a second copy, and as
// much garbage), and a response's raw_output_contents are copied into the
// encoded message (a third). For tensors of megabytes those copies cost
// about as much as the rest of the server's work on the call. This codec
// makes one copy, from the transport's buffers to the place the backend
// reads, and passes the outputs by reference:
//
//   - A request received by the service (into a *received) whose tensors
//     are large is laid out, as it is read off the transport's buffers,
//     into one buffer from a pool: the other fields side by side, decoded
//     by protobuf as usual, and each raw_input_contents entry at an 8-byte
//     aligned offset (so that backends can view it as a typed slice without
//     a copy), which the message's entry then aliases. The received holds
//     the buffer; it goes back to the pool when the response has been
//     written, or when the call fails.
//   - A response sent by the service (as an *outgoing) whose tensors are
//     large is encoded as protobuf would encode it, the other fields by
//     protobuf and each raw_output_contents entry as its tag and length
//     followed by the tensor's own memory, as separate buffers of the
//     mem.BufferSlice that grpc-go writes and then frees. An entry inside
//     the request's buffer (a model that answers with its input) takes a
//     reference on that buffer until it is written; other entries are Go
//     memory that the slice keeps alive.
//
// Every other message, and these two below [minAlias] bytes of tensors,
// goes through grpc-go's protobuf codec unchanged. Decoding through this
// codec gives exactly the message proto.Unmarshal gives (a request it does
// not lay out, malformed ones included, is handed to protobuf whole), and
// encoding gives the same bytes as proto.Marshal, but for the order of
// unknown fields (there are none in the service's responses).

// ServerCodec returns the server option that installs the service's codec
// on a *grpc.Server; [ServerOptions] includes it. The codec is grpc-go's
// protobuf codec ("proto") except for the tensors of ModelInfer and
// ModelStreamInfer, which it passes without the copies protobuf makes (see
// [Service.Register]): that needs the server's codec, as grpc-go chooses
// codecs per server, not per service. Every other service on the server
// gets grpc-go's protobuf codec as before; as with any forced codec, the
// server then answers every call with protobuf whatever content-subtype a
// client names.
//
// # Experimental
//
// It rests on grpc-go's experimental ForceServerCodecV2.
func ServerCodec() grpc.ServerOption {
	return grpc.ForceServerCodecV2(codec{fallback: encoding.GetCodecV2(grpcproto.Name), pool: arenas, min: minAlias})
}

// minAlias is the size of the tensors (raw_input_contents or
// raw_output_contents, all entries together) from which the codec passes
// them by reference: below it protobuf's copies cost less than the
// bookkeeping.
const minAlias = 32 << 10

// Field numbers of the messages the codec lays out itself.
const (
	rawInputField  protowire.Number = 7 // ModelInferRequest.raw_input_contents
	rawOutputField protowire.Number = 6 // ModelInferResponse.raw_output_contents
	inferResponse  protowire.Number = 2 // ModelStreamInferResponse.infer_response
)

// codec is the service's codec: see [ServerCodec].
type codec struct {
	fallback encoding.CodecV2 // grpc-go's protobuf codec
	pool     mem.BufferPool   // of requests' buffers
	min      int              // tensor bytes from which a request's go by reference
}

var _ encoding.CodecV2 = codec{}

// Name is protobuf's: the codec speaks protobuf.
func (codec) Name() string { return grpcproto.Name }

// Unmarshal decodes a request received by the service with its tensors in
// a pooled buffer, and everything else with protobuf.
//
// A request that fails to decode is not an error of Unmarshal: the error
// goes into the received (its malformed field), for the service to answer
// INVALID_ARGUMENT, the client's mistake, and a stream to go on. grpc-go
// would end the call at once, INTERNAL.
func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	r, ok := v.(*received)
	if !ok {
		return c.fallback.Unmarshal(data, v)
	}
	done, err := r.decode(data, c.pool, c.min)
	if !done {
		err = c.fallback.Unmarshal(data, &r.ModelInferRequest)
	}
	r.malformed = err
	return nil
}

// Marshal encodes a response of the service with its tensors referenced,
// and everything else with protobuf.
func (c codec) Marshal(v any) (mem.BufferSlice, error) {
	o, ok := v.(*outgoing)
	if !ok {
		return c.fallback.Marshal(v)
	}
	defer o.release()
	var out mem.BufferSlice
	var err error
	switch m := o.Message.(type) {
	case *inferencepb.ModelInferResponse:
		out, _, err = appendResponse(nil, m, o.held)
	case *inferencepb.ModelStreamInferResponse:
		out, err = streamResponse(m, o.held)
	default:
		return c.fallback.Marshal(o.Message)
	}
	if err != nil {
		out.Free()
		return nil, err
	}
	return out, nil
}

// received is a ModelInferRequest as the service receives it: decoded by
// the codec, its raw_input_contents may alias held, a buffer of the pool
// that the request owns until it is handed to its response (see
// [received.answer]) or released.
type received struct {
	inferencepb.ModelInferRequest
	held      mem.Buffer
	malformed error     // why the codec could not decode the request
	readStart time.Time // with a tracer: when its read was posted (GRPC_WAITREAD_START)
	readEnd   time.Time // and when it was read (GRPC_WAITREAD_END)
}

// release gives the request's buffer back. The message must not be used
// afterwards.
func (r *received) release() {
	if r.held != nil {
		r.held.Free()
		r.held = nil
	}
}

// answer returns what the codec should marshal for m, the response to r:
// m itself, or, for a response worth encoding by reference or while r owns
// a buffer, an outgoing that takes r's buffer over.
func (r *received) answer(m proto.Message, raw [][]byte) any {
	if r.held == nil && !large(raw) {
		return m
	}
	o := &outgoing{Message: m, held: r.held}
	r.held = nil
	return o
}

// outgoing is a response of the service that the codec encodes with its
// tensors referenced. held, when set, is the buffer of the request it
// answers, which the codec releases once it has encoded the response: an
// outgoing can be sent once.
type outgoing struct {
	proto.Message // a *ModelInferResponse or *ModelStreamInferResponse
	held          mem.Buffer
}

// release gives the request's buffer back.
func (o *outgoing) release() {
	if o.held != nil {
		o.held.Free()
		o.held = nil
	}
}

// large reports whether tensors are worth passing by reference.
func large(raw [][]byte) bool {
	n := 0
	for _, b := range raw {
		n += len(b)
		if n >= minAlias {
			return true
		}
	}
	return false
}

// inlineOutput is the size below which an output is copied into the
// encoded head rather than referenced: one buffer less for the transport.
const inlineOutput = 1 << 10

// rawAlign is the alignment of each raw_input_contents entry of alignFrom
// bytes or more in a request's buffer: the largest element size. Smaller
// entries are not padded (a backend gets an aligned copy of those few
// bytes where it needs one), so that padding adds at most 11%.
const (
	rawAlign  = 8
	alignFrom = 64
)

// layout is what a request's first pass finds: the bytes of its fields
// other than raw_input_contents, and of its raw_input_contents entries.
type layout struct {
	other   int // those fields, tags and lengths included, as received
	raw     int // the entries' bytes
	entries int
	aligned int // entries of alignFrom bytes or more
}

// decode decodes data into r with its raw_input_contents in a buffer of
// pool, when they have min bytes or more, and reports whether it did (or
// failed trying). It does nothing for a request with smaller tensors or of
// an unusual shape (a top-level field that is not length-delimited, or a
// truncated one), which protobuf then decodes as it decodes any message.
//
// The buffer holds the request's fields as received, followed by the
// entries, those of alignFrom bytes or more each at a multiple of
// rawAlign.
func (r *received) decode(data mem.BufferSlice, pool mem.BufferPool, min int) (done bool, err error) {
	if data.Len() < min || data.Len() == 0 {
		return false, nil
	}
	r.release() // a second message of a unary call, which fails
	l, ok := scan(data)
	if !ok || l.raw < min {
		return false, nil
	}
	buf := pool.Get(l.other + l.raw + l.aligned*(rawAlign-1))
	held := mem.NewBuffer(buf, pool)
	b := *buf
	raws := make([][]byte, 0, l.entries)
	other, at := 0, l.other
	rd := data.Reader()
	defer rd.Close()
	var hdr [2 * binary.MaxVarintLen64]byte
	for rd.Remaining() > 0 {
		num, n, h := readHeader(rd, hdr[:0])
		if num == rawInputField {
			if n >= alignFrom {
				at = alignUp(b, at)
			}
			entry := b[at : at+n : at+n]
			if _, err := io.ReadFull(rd, entry); err != nil {
				held.Free()
				return true, err
			}
			raws = append(raws, entry)
			at += n
			continue
		}
		other += copy(b[other:], h)
		if _, err := io.ReadFull(rd, b[other:other+n]); err != nil {
			held.Free()
			return true, err
		}
		other += n
	}
	if err := proto.Unmarshal(b[:other], &r.ModelInferRequest); err != nil {
		held.Free()
		return true, err
	}
	r.RawInputContents, r.held = raws, held
	return true, nil
}

// scan is a request's first pass: the size of its parts, or ok false for a
// message decode leaves to protobuf.
func scan(data mem.BufferSlice) (l layout, ok bool) {
	rd := data.Reader()
	defer rd.Close()
	var hdr [2 * binary.MaxVarintLen64]byte
	for rd.Remaining() > 0 {
		num, n, h := readHeader(rd, hdr[:0])
		if num < 0 || n > rd.Remaining() {
			return layout{}, false
		}
		if num == rawInputField {
			l.raw += n
			l.entries++
			if n >= alignFrom {
				l.aligned++
			}
		} else {
			l.other += len(h) + n
		}
		if _, err := rd.Discard(n); err != nil {
			return layout{}, false
		}
	}
	return l, true
}

// readHeader reads a top-level field's tag and length from rd, appending
// their bytes to h; num is -1 where the field is not a valid
// length-delimited one.
func readHeader(rd *mem.Reader, h []byte) (num protowire.Number, n int, _ []byte) {
	h, tag, ok := readVarint(rd, h)
	if !ok {
		return -1, 0, h
	}
	num, typ := protowire.DecodeTag(tag)
	if typ != protowire.BytesType || !num.IsValid() {
		return -1, 0, h
	}
	h, length, ok := readVarint(rd, h)
	if !ok || length > maxMessageSize {
		return -1, 0, h
	}
	return num, int(length), h
}

// readVarint reads a varint from rd, as protowire.ConsumeVarint does,
// appending its bytes to h.
func readVarint(rd *mem.Reader, h []byte) (_ []byte, v uint64, ok bool) {
	for i := range binary.MaxVarintLen64 {
		c, err := rd.ReadByte()
		if err != nil {
			return h, 0, false
		}
		h = append(h, c)
		if i == binary.MaxVarintLen64-1 && c > 1 {
			return h, 0, false // overflows 64 bits
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return h, v, true
		}
	}
	return h, 0, false
}

// alignUp returns the first offset of b from off whose address is a
// multiple of rawAlign.
func alignUp(b []byte, off int) int {
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(b))) + uintptr(off)
	return off + int(-addr&(rawAlign-1))
}

// appendResponse appends the encoding of m to out, with its
// raw_output_contents referenced (slices of held where they lie in it),
// and returns the encoding's length.
func appendResponse(out mem.BufferSlice, m *inferencepb.ModelInferResponse, held mem.Buffer) (mem.BufferSlice, int, error) {
	head := &inferencepb.ModelInferResponse{
		ModelName:    m.ModelName,
		ModelVersion: m.ModelVersion,
		Id:           m.Id,
		Parameters:   m.Parameters,
		Outputs:      m.Outputs,
	}
	head.ProtoReflect().SetUnknown(m.ProtoReflect().GetUnknown())
	size := proto.Size(head) + len(m.RawOutputContents)*(1+binary.MaxVarintLen64)
	for _, data := range m.RawOutputContents {
		if len(data) < inlineOutput {
			size += len(data)
		}
	}
	b, err := proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(make([]byte, 0, size), head)
	if err != nil {
		return out, 0, fmt.Errorf("grpcapi: marshaling response of model '%s': %w", m.ModelName, err)
	}
	total, from := len(b), 0
	for _, data := range m.RawOutputContents {
		b = protowire.AppendTag(b, rawOutputField, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(len(data)))
		total += protowire.SizeTag(rawOutputField) + protowire.SizeVarint(uint64(len(data))) + len(data)
		if len(data) < inlineOutput {
			b = append(b, data...)
			continue
		}
		out = append(out, mem.SliceBuffer(b[from:len(b):len(b)]), reference(data, held))
		from = len(b)
	}
	if from < len(b) {
		out = append(out, mem.SliceBuffer(b[from:]))
	}
	return out, total, nil
}

// streamResponse encodes m with its response's raw_output_contents
// referenced.
func streamResponse(m *inferencepb.ModelStreamInferResponse, held mem.Buffer) (mem.BufferSlice, error) {
	head := &inferencepb.ModelStreamInferResponse{ErrorMessage: m.ErrorMessage}
	head.ProtoReflect().SetUnknown(m.ProtoReflect().GetUnknown())
	b, err := proto.Marshal(head)
	if err != nil {
		return nil, fmt.Errorf("grpcapi: marshaling stream response: %w", err)
	}
	if m.InferResponse == nil {
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	out := mem.BufferSlice{nil} // the head, once the inner length is known
	out, n, err := appendResponse(out, m.InferResponse, held)
	if err != nil {
		return out[1:], err
	}
	b = protowire.AppendTag(b, inferResponse, protowire.BytesType)
	out[0] = mem.SliceBuffer(protowire.AppendVarint(b, uint64(n)))
	return out, nil
}

// reference returns a buffer over data without copying it: a slice of
// held, with a reference of its own, where data lies in held's memory,
// otherwise data itself (Go memory, kept alive by the buffer).
func reference(data []byte, held mem.Buffer) mem.Buffer {
	if held != nil {
		h := held.ReadOnlyData()
		start := uintptr(unsafe.Pointer(unsafe.SliceData(h)))
		p := uintptr(unsafe.Pointer(unsafe.SliceData(data)))
		if p >= start && p-start+uintptr(len(data)) <= uintptr(len(h)) {
			off := int(p - start)
			return held.Slice(off, off+len(data))
		}
	}
	return mem.SliceBuffer(data)
}

// arenas is the pool of requests' buffers: sizes in classes a quarter of a
// power of two apart (at most 25% above the size asked for), not cleared
// when reused (a request's buffer is written in full before it is read).
// Buffers above maxPooled bytes are not pooled: a pool holds what it was
// given until two garbage collections have passed, and a few requests of
// a gigabyte would keep gigabytes out of the heap's reach for that long,
// for the next request of that size class, which may never come; at those
// sizes the copy into the buffer costs more than allocating it anyway.
var arenas = &arenaPool{}

// maxPooled is the largest buffer the pool of requests' buffers keeps.
const maxPooled = 64 << 20

// arenaPool is a mem.BufferPool of large buffers; see [arenas].
type arenaPool struct {
	classes [4 * 64]sync.Pool
}

var _ mem.BufferPool = (*arenaPool)(nil)

// class returns the size class of a buffer of n bytes (n > 0), and the
// class's size.
func class(n int) (int, int) {
	if n <= 8 {
		return 0, 8 // the classes above start at 4*3
	}
	k := bits.Len(uint(n-1)) - 1 // 2^k < n <= 2^(k+1)
	step := 1 << (k - 2)
	q := (n - 1<<k + step - 1) / step // 1..4 quarters above 2^k
	return 4*k + q - 1, 1<<k + q*step
}

// Get returns a buffer of length n, its contents unspecified.
func (p *arenaPool) Get(n int) *[]byte {
	c, size := class(n)
	if size > maxPooled {
		b := make([]byte, n)
		return &b
	}
	if b, ok := p.classes[c].Get().(*[]byte); ok {
		*b = (*b)[:n]
		return b
	}
	b := make([]byte, n, size)
	return &b
}

// Put returns a buffer from Get to the pool.
func (p *arenaPool) Put(b *[]byte) {
	c, size := class(cap(*b))
	if size != cap(*b) || size > maxPooled {
		return // not one of ours, or too large to keep
	}
	p.classes[c].Put(b)
}
