package onnxruntime

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// Pieces of ONNX protobufs, written field by field from onnx.proto.

func pbBytes(num protowire.Number, b []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), b)
}

func pbVarint(num protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
}

func pbMsg(fields ...[]byte) []byte { return bytes.Join(fields, nil) }

// pbTensor is a TensorProto of dtype with dims (unpacked) and more fields.
func pbTensor(dtype uint64, dims []int64, more ...[]byte) []byte {
	var b []byte
	for _, d := range dims {
		b = append(b, pbVarint(1, uint64(d))...)
	}
	return pbMsg(b, pbVarint(2, dtype), pbBytes(8, []byte("t")), pbMsg(more...))
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r    io.ReaderAt
	read int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.read += int64(n)
	return n, err
}

// TestInitializerBytes sizes the initializers of every kind a model file
// holds, in the data types whose sizes differ in kind (bytes, sub-byte,
// strings), without reading their data.
func TestInitializerBytes(t *testing.T) {
	packed := protowire.AppendVarint(nil, 2) // dims [2]
	ext := func(k, v string) []byte { return pbBytes(13, pbMsg(pbBytes(1, []byte(k)), pbBytes(2, []byte(v)))) }
	subgraph := func(init []byte) []byte { return pbMsg(pbBytes(2, []byte("body")), pbBytes(5, init)) }
	graph := pbMsg(
		pbBytes(5, pbTensor(1, []int64{512, 512}, pbBytes(9, make([]byte, 512*512*4)))),       // FLOAT raw_data: 1 MiB
		pbBytes(5, pbMsg(pbBytes(1, packed), pbVarint(2, 7), pbVarint(7, 1), pbVarint(7, 2))), // INT64 [2], packed dims: 16
		pbBytes(5, pbTensor(10, []int64{1000}, // FLOAT16 [1000] in an external file: 2000
			ext("location", "weights.bin"), ext("offset", "0"), ext("length", "2000"), pbVarint(14, 1))),
		pbBytes(5, pbTensor(8, []int64{2}, pbBytes(6, []byte("ab")), pbBytes(6, []byte("cde")))),                      // STRING: 5
		pbBytes(5, pbTensor(22, []int64{5}, pbBytes(9, make([]byte, 3)))),                                             // INT4 [5]: 3
		pbBytes(15, pbMsg(pbBytes(1, pbTensor(1, []int64{2})), pbBytes(2, pbTensor(7, []int64{2})), pbVarint(3, 10))), // sparse: 8 + 16
		pbBytes(1, pbMsg(pbBytes(4, []byte("If")), // a node: a subgraph (g) and a list of them (graphs)
			pbBytes(5, pbMsg(pbBytes(1, []byte("then_branch")), pbBytes(6, subgraph(pbTensor(11, []int64{2}))))), // DOUBLE [2]: 16
			pbBytes(5, pbMsg(pbBytes(1, []byte("bodies")), pbBytes(11, subgraph(pbTensor(2, []int64{7}))))),      // UINT8 [7]: 7
		)),
	)
	const want = 512*512*4 + 16 + 2000 + 5 + 3 + 8 + 16 + 16 + 7
	model := pbMsg(pbVarint(1, 8), pbBytes(7, graph), pbBytes(2, []byte("producer")))

	r := &countingReader{r: bytes.NewReader(model)}
	n, err := initializerBytes(r, int64(len(model)))
	if err != nil || n != want {
		t.Fatalf("initializerBytes = %d, %v; want %d", n, err, want)
	}
	if r.read > 256<<10 {
		t.Errorf("read %d bytes of a %d-byte model; want the tensors' data skipped", r.read, len(model))
	}

	path := filepath.Join(t.TempDir(), "model.onnx")
	if err := os.WriteFile(path, model, 0o644); err != nil {
		t.Fatal(err)
	}
	if n, err := weightBytes(modelSource{file: path, path: path}); err != nil || n != want {
		t.Errorf("weightBytes(file) = %d, %v; want %d", n, err, want)
	}

	for name, bad := range map[string][]byte{
		"truncated":    model[:len(model)-20],
		"unknown type": pbMsg(pbBytes(7, pbBytes(5, pbTensor(99, []int64{1})))),
		"negative dim": pbMsg(pbBytes(7, pbBytes(5, pbTensor(1, []int64{-1})))),
	} {
		if n, err := weightBytes(modelSource{file: name, data: bad}); err == nil {
			t.Errorf("%s: weightBytes = %d; want an error", name, n)
		}
	}
}
