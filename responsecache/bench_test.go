package responsecache_test

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/triton-go/triton/responsecache"
	"github.com/triton-go/triton/tensor"
)

// smallCall is a typical small request: two inputs of a few bytes, and
// smallAnswer its two outputs.
func smallCall() call {
	return call{"model", 1, []tensor.Tensor{
		raw("INPUT0", tensor.FP32, tensor.Shape{1, 4}, "0123456789abcdef"),
		raw("INPUT1", tensor.Int64, tensor.Shape{1, 1}, "01234567"),
	}}
}

var smallAnswer = []tensor.Tensor{
	raw("OUTPUT0", tensor.FP32, tensor.Shape{1, 4}, "fedcba9876543210"),
	raw("OUTPUT1", tensor.Int64, tensor.Shape{1, 1}, "76543210"),
}

func smallFn() ([]tensor.Tensor, error) { return smallAnswer, nil }

var smallResp = outputsOnly(smallFn)

func BenchmarkDo(b *testing.B) {
	ctx := context.Background()
	b.Run("hit", func(b *testing.B) {
		c := responsecache.New(1 << 20)
		cl := smallCall()
		_, _, _ = cl.do(c, smallFn)
		b.ReportAllocs()
		for b.Loop() {
			if _, res, _ := c.Do(ctx, cl.model, cl.version, cl.inputs, smallResp); !res.Hit {
				b.Fatal("miss")
			}
		}
	})
	b.Run("hit-parallel", func(b *testing.B) {
		c := responsecache.New(1 << 20)
		cl := smallCall()
		_, _, _ = cl.do(c, smallFn)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, res, _ := c.Do(ctx, cl.model, cl.version, cl.inputs, smallResp); !res.Hit {
					b.Fatal("miss")
				}
			}
		})
	})
	b.Run("miss", func(b *testing.B) {
		// Every call has a new key; the cache holds about 1000 entries and
		// evicts one per call once full. fn itself costs nothing.
		cl := smallCall()
		c := responsecache.New(1000 * responsecache.EntrySize(cl.model, cl.version, cl.inputs, smallAnswer))
		data := []byte("0123456789abcdef")
		cl.inputs[0].Data = data
		var n uint64
		b.ReportAllocs()
		for b.Loop() {
			n++
			binary.LittleEndian.PutUint64(data, n)
			if _, res, _ := c.Do(ctx, cl.model, cl.version, cl.inputs, smallResp); res.Hit || res.Shared {
				b.Fatal("hit")
			}
		}
	})
	b.Run("hit-16MiB-input", func(b *testing.B) {
		c := responsecache.New(64 << 20)
		cl := call{"model", 1, []tensor.Tensor{raw("INPUT0", tensor.Uint8, tensor.Shape{16 << 20}, string(make([]byte, 16<<20)))}}
		_, _, _ = cl.do(c, smallFn)
		b.SetBytes(16 << 20)
		b.ReportAllocs()
		for b.Loop() {
			if _, res, _ := c.Do(ctx, cl.model, cl.version, cl.inputs, smallResp); !res.Hit {
				b.Fatal("miss")
			}
		}
	})
}

// BenchmarkKey16MiB measures hashing a request with a 16 MiB input: the
// work every call does before it can look anything up.
func BenchmarkKey16MiB(b *testing.B) {
	c := responsecache.New(1)
	data := make([]byte, 16<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	in := []tensor.Tensor{{Name: "INPUT0", DataType: tensor.Uint8, Shape: tensor.Shape{16 << 20}, Data: data}}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		responsecache.Digest(c, "model", 1, in)
	}
}
