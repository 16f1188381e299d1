//go:build cgo && (linux || darwin)

package ortrun_test

import (
	"context"
	"strings"
	"testing"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/triton-go/triton/cgo/ortrun"
)

// BenchmarkAddSub runs add_sub on [1, 16] through ortrun (outputs copied
// out of ORT's memory, or written in place when their shapes are known) and
// through onnxruntime_go's own DynamicAdvancedSession.Run on the same
// session and data: with fresh tensors per run (what a server does: wrap the request's
// data, let ORT allocate the outputs, read and destroy them), and with
// tensors made once and reused (onnxruntime_go's best case, possible only
// for fixed shapes).
func BenchmarkAddSub(b *testing.B) {
	f := newFixture(b, addSubModel())
	shape := []int64{1, 16}
	a, c := make([]float32, 16), make([]float32, 16)
	for i := range a {
		a[i], c[i] = float32(i), float32(2*i)
	}
	ctx := context.Background()
	b.Run("ortrun.Run", func(b *testing.B) {
		b.ReportAllocs()
		in := []ortrun.Tensor{{Type: tFloat, Shape: shape, Data: f32s(a...)}, {Type: tFloat, Shape: shape, Data: f32s(c...)}}
		want := []int{0, 1}
		for b.Loop() {
			if _, err := f.run.Run(ctx, in, want); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ortrun.RunOutputs/known-shapes", func(b *testing.B) {
		b.ReportAllocs()
		in := []ortrun.Tensor{{Type: tFloat, Shape: shape, Data: f32s(a...)}, {Type: tFloat, Shape: shape, Data: f32s(c...)}}
		outs := []ortrun.Output{known(0, shape...), known(1, shape...)}
		for b.Loop() {
			if _, err := f.run.RunOutputs(ctx, in, outs); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ortrun.Run/cancellable", func(b *testing.B) {
		b.ReportAllocs()
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		in := []ortrun.Tensor{{Type: tFloat, Shape: shape, Data: f32s(a...)}, {Type: tFloat, Shape: shape, Data: f32s(c...)}}
		want := []int{0, 1}
		for b.Loop() {
			if _, err := f.run.Run(ctx, in, want); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ort.Run/new-tensors", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			x, err := ort.NewTensor(ort.NewShape(shape...), a)
			if err != nil {
				b.Fatal(err)
			}
			y, err := ort.NewTensor(ort.NewShape(shape...), c)
			if err != nil {
				b.Fatal(err)
			}
			out := []ort.Value{nil, nil}
			if err := f.ort.Run([]ort.Value{x, y}, out); err != nil {
				b.Fatal(err)
			}
			_ = out[0].(*ort.Tensor[float32]).GetData()
			_ = out[1].(*ort.Tensor[float32]).GetData()
			for _, v := range []ort.Value{x, y, out[0], out[1]} {
				_ = v.Destroy()
			}
		}
	})
	b.Run("ort.Run/reused-tensors", func(b *testing.B) {
		b.ReportAllocs()
		var vals []ort.Value
		for _, d := range [][]float32{a, c, make([]float32, 16), make([]float32, 16)} {
			t, err := ort.NewTensor(ort.NewShape(shape...), d)
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = t.Destroy() }()
			vals = append(vals, t)
		}
		for b.Loop() {
			if err := f.ort.Run(vals[:2], vals[2:]); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkIdentityString sends 1000 elements of 32 bytes through an
// Identity model: ortrun from and to Triton's BYTES framing, onnxruntime_go
// from and to []string with SetContents and GetContents (elements without
// NUL bytes, which SetContents would cut).
func BenchmarkIdentityString(b *testing.B) {
	f := newFixture(b, identityModel(tString))
	elems := make([]string, 1000)
	for i := range elems {
		elems[i] = strings.Repeat(string(rune('a'+i%26)), 32)
	}
	data := frame(elems...)
	ctx := context.Background()
	b.Run("ortrun.Run", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		in := []ortrun.Tensor{{Type: tString, Shape: []int64{1, 1000}, Data: data}}
		want := []int{0}
		for b.Loop() {
			if _, err := f.run.Run(ctx, in, want); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ort.SetContents+Run+GetContents", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			x, err := ort.NewStringTensor(ort.NewShape(1, 1000))
			if err != nil {
				b.Fatal(err)
			}
			if err := x.SetContents(elems); err != nil {
				b.Fatal(err)
			}
			out := []ort.Value{nil}
			if err := f.ort.Run([]ort.Value{x}, out); err != nil {
				b.Fatal(err)
			}
			if _, err := out[0].(*ort.StringTensor).GetContents(); err != nil {
				b.Fatal(err)
			}
			_ = x.Destroy()
			_ = out[0].Destroy()
		}
	})
}
