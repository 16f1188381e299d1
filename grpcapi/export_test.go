package grpcapi

import (
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"

	"github.com/triton-go/triton/grpcapi/inferencepb"
)

// DecodeThroughCodec decodes data as the service's codec decodes a request
// it receives, but with every request's tensors by reference (no size
// threshold), from the transport's buffers as chunks of chunk bytes.
// release gives the request's buffer back to the pool.
func DecodeThroughCodec(data []byte, chunk int) (req *inferencepb.ModelInferRequest, release func(), err error) {
	r := new(received)
	c := codec{fallback: encoding.GetCodecV2(grpcproto.Name), pool: arenas, min: 0}
	if err := c.Unmarshal(chunks(data, chunk), r); err != nil {
		return nil, nil, err
	}
	if r.malformed != nil {
		return nil, nil, r.malformed
	}
	return &r.ModelInferRequest, r.release, nil
}

// chunks splits data into buffers of n bytes (the last one shorter), as
// the transport hands a message over in its frames' buffers.
func chunks(data []byte, n int) mem.BufferSlice {
	var s mem.BufferSlice
	for len(data) > n {
		s = append(s, mem.SliceBuffer(data[:n:n]))
		data = data[n:]
	}
	return append(s, mem.SliceBuffer(data))
}
