package onnxruntime

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/tensor"
)

var _ backend.MemoryReporter = (*instance)(nil)

// MemoryBytes reports the bytes of the model's initializers (its weights),
// which the instance's session holds a copy of: every instance has a
// session of its own, so each reports them. The size is read from the
// model file when the model loads, so the call reads a field; it fails
// when that read failed. Activations and ONNX Runtime's arena are not
// counted (see the package documentation).
func (i *instance) MemoryBytes() (int64, error) {
	return i.m.weights, i.m.weightsErr
}

// weightBytes returns the bytes of the initializers of the model in src.
func weightBytes(src modelSource) (n int64, err error) {
	if src.path == "" {
		n, err = initializerBytes(bytes.NewReader(src.data), int64(len(src.data)))
	} else {
		var f *os.File
		if f, err = os.Open(src.path); err == nil {
			defer f.Close()
			var st os.FileInfo
			if st, err = f.Stat(); err == nil {
				n, err = initializerBytes(f, st.Size())
			}
		}
	}
	if err != nil {
		return 0, fmt.Errorf("sizing the initializers of %s: %w", src.file, err)
	}
	return n, nil
}

// initializerBytes returns the bytes of the initializers of the ModelProto
// in r[0:size]: those of its graph (dense and sparse), and of the graphs
// inside its nodes' attributes (the branches of If, the bodies of Loop and
// Scan). A tensor's bytes are its element count times its element size
// (packed for the types under a byte; the strings' lengths for STRING),
// whether its data is in the file or in an external data file.
//
// The message is walked in place (onnx.proto's field numbers, with
// protowire), reading only the fields that size the tensors: their data,
// the bulk of the file, is skipped, never read.
func initializerBytes(r io.ReaderAt, size int64) (int64, error) {
	p := &pbReader{r: r}
	var total int64
	err := p.fields(0, size, func(fl pbField) error {
		if fl.num == 7 && fl.typ == protowire.BytesType { // ModelProto.graph
			n, err := p.graph(fl.off, fl.end())
			total += n
			return err
		}
		return nil
	})
	return total, err
}

// graph sums the initializers of the GraphProto in [start, end).
func (p *pbReader) graph(start, end int64) (int64, error) {
	var total int64
	err := p.fields(start, end, func(fl pbField) error {
		if fl.typ != protowire.BytesType {
			return nil
		}
		var n int64
		var err error
		switch fl.num {
		case 5: // initializer
			n, err = p.tensor(fl.off, fl.end())
		case 15: // sparse_initializer: SparseTensorProto { values = 1, indices = 2 }
			err = p.fields(fl.off, fl.end(), func(s pbField) error {
				if (s.num == 1 || s.num == 2) && s.typ == protowire.BytesType {
					k, err := p.tensor(s.off, s.end())
					n += k
					return err
				}
				return nil
			})
		case 1: // node: NodeProto.attribute = 5, AttributeProto.g = 6, graphs = 11
			err = p.fields(fl.off, fl.end(), func(a pbField) error {
				if a.num != 5 || a.typ != protowire.BytesType {
					return nil
				}
				return p.fields(a.off, a.end(), func(g pbField) error {
					if (g.num == 6 || g.num == 11) && g.typ == protowire.BytesType {
						k, err := p.graph(g.off, g.end())
						n += k
						return err
					}
					return nil
				})
			})
		}
		total += n
		return err
	})
	return total, err
}

// ONNX's STRING data type (TensorProto.DataType).
const onnxString = 8

// elementBits is the size in bits of an element of ONNX data type t
// (TensorProto.DataType), 0 for STRING and for a type it does not know.
func elementBits(t uint64) int64 {
	switch t {
	case 2, 3, 9, 17, 18, 19, 20: // UINT8, INT8, BOOL, the FLOAT8s
		return 8
	case 4, 5, 10, 16: // UINT16, INT16, FLOAT16, BFLOAT16
		return 16
	case 1, 6, 12: // FLOAT, INT32, UINT32
		return 32
	case 7, 11, 13, 14: // INT64, DOUBLE, UINT64, COMPLEX64
		return 64
	case 15: // COMPLEX128
		return 128
	case 21, 22, 23: // UINT4, INT4, FLOAT4E2M1: two to a byte
		return 4
	}
	return 0
}

// tensor returns the bytes of the TensorProto in [start, end): dims = 1,
// data_type = 2, string_data = 6.
func (p *pbReader) tensor(start, end int64) (int64, error) {
	var dims tensor.Shape
	var dtype uint64
	var strs int64
	err := p.fields(start, end, func(fl pbField) error {
		switch {
		case fl.num == 1 && fl.typ == protowire.VarintType:
			dims = append(dims, int64(fl.v))
		case fl.num == 1 && fl.typ == protowire.BytesType: // packed
			b, err := p.at(fl.off, int(fl.n))
			if err != nil {
				return err
			}
			for len(b) > 0 {
				v, k := protowire.ConsumeVarint(b)
				if k < 0 {
					return protowire.ParseError(k)
				}
				dims, b = append(dims, int64(v)), b[k:]
			}
		case fl.num == 2 && fl.typ == protowire.VarintType:
			dtype = fl.v
		case fl.num == 6 && fl.typ == protowire.BytesType:
			strs += fl.n
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	if dtype == onnxString {
		return strs, nil
	}
	bits := elementBits(dtype)
	if bits == 0 {
		return 0, fmt.Errorf("an initializer of ONNX data type %d, whose size is not known", dtype)
	}
	count, err := dims.NumElements()
	if err != nil {
		return 0, fmt.Errorf("an initializer of shape %v: %w", []int64(dims), err)
	}
	if bits < 8 {
		return count/(8/bits) + min(count%(8/bits), 1), nil
	}
	if count > math.MaxInt64/(bits/8) {
		return 0, fmt.Errorf("an initializer of shape %v: %w", []int64(dims), tensor.ErrOverflow)
	}
	return count * (bits / 8), nil
}

// pbReader reads the fields of protobuf messages from an io.ReaderAt
// through a window of its bytes, so that skipping a field costs nothing.
type pbReader struct {
	r   io.ReaderAt
	buf []byte // the bytes from off
	off int64
}

// pbField is one field of a message: its number and wire type, its value
// when a varint, and where its bytes are when length-delimited.
type pbField struct {
	num    protowire.Number
	typ    protowire.Type
	v      uint64
	off, n int64
}

func (f pbField) end() int64 { return f.off + f.n }

// errTruncated is a field that runs past the end of its message.
var errTruncated = errors.New("a protobuf field runs past the end of its message")

// at returns the n bytes at off, fewer only at the end of the input.
func (p *pbReader) at(off int64, n int) ([]byte, error) {
	if off >= p.off && off+int64(n) <= p.off+int64(len(p.buf)) {
		return p.buf[off-p.off:][:n], nil
	}
	size := max(n, 64<<10)
	if cap(p.buf) < size {
		p.buf = make([]byte, size)
	}
	k, err := p.r.ReadAt(p.buf[:size], off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	p.buf, p.off = p.buf[:k], off
	return p.buf[:min(n, k)], nil
}

// fields calls fn with each field of the message in [start, end).
func (p *pbReader) fields(start, end int64, fn func(pbField) error) error {
	for pos := start; pos < end; {
		b, err := p.at(pos, int(min(end-pos, 2*binary.MaxVarintLen64))) // a tag and a varint
		if err != nil {
			return err
		}
		num, typ, k := protowire.ConsumeTag(b)
		if k < 0 {
			return protowire.ParseError(k)
		}
		fl := pbField{num: num, typ: typ}
		pos += int64(k)
		b = b[k:]
		switch typ {
		case protowire.VarintType:
			fl.v, k = protowire.ConsumeVarint(b)
			pos += int64(k)
		case protowire.BytesType:
			var n uint64
			if n, k = protowire.ConsumeVarint(b); k < 0 {
				break
			}
			fl.off = pos + int64(k)
			if n > uint64(end-fl.off) {
				return errTruncated
			}
			fl.n = int64(n)
			pos = fl.end()
		case protowire.Fixed32Type:
			pos += 4
		case protowire.Fixed64Type:
			pos += 8
		default:
			return fmt.Errorf("protobuf wire type %d, which ONNX files do not use", typ)
		}
		if k < 0 {
			return protowire.ParseError(k)
		}
		if pos > end {
			return errTruncated
		}
		if err := fn(fl); err != nil {
			return err
		}
	}
	return nil
}
