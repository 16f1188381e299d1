package tensor_test

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/triton-go/triton/tensor"
)

func mustFrom[T tensor.Element](t testing.TB, name string, shape tensor.Shape, values []T) tensor.Tensor {
	t.Helper()
	x, err := tensor.Copy(name, shape, values)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func mustStrings(t testing.TB, name string, shape tensor.Shape, values ...string) tensor.Tensor {
	t.Helper()
	x, err := tensor.FromStrings(name, shape, values)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func TestConcat(t *testing.T) {
	tests := []struct {
		name  string
		parts []tensor.Tensor
		want  tensor.Tensor
	}{
		{
			name: "fp32 rows",
			parts: []tensor.Tensor{
				mustFrom(t, "a", tensor.Shape{1, 3}, []float32{1, 2, 3}),
				mustFrom(t, "b", tensor.Shape{2, 3}, []float32{4, 5, 6, 7, 8, 9}),
			},
			want: mustFrom(t, "batch", tensor.Shape{3, 3}, []float32{1, 2, 3, 4, 5, 6, 7, 8, 9}),
		},
		{
			name: "int64 vectors",
			parts: []tensor.Tensor{
				mustFrom(t, "a", tensor.Shape{1}, []int64{-1}),
				mustFrom(t, "b", tensor.Shape{1}, []int64{2}),
				mustFrom(t, "c", tensor.Shape{2}, []int64{3, 4}),
			},
			want: mustFrom(t, "batch", tensor.Shape{4}, []int64{-1, 2, 3, 4}),
		},
		{
			name: "with empty part",
			parts: []tensor.Tensor{
				mustFrom(t, "a", tensor.Shape{0, 2}, []uint8{}),
				mustFrom(t, "b", tensor.Shape{1, 2}, []uint8{7, 8}),
			},
			want: mustFrom(t, "batch", tensor.Shape{1, 2}, []uint8{7, 8}),
		},
		{
			name: "all empty",
			parts: []tensor.Tensor{
				mustFrom(t, "a", tensor.Shape{0, 2}, []uint8{}),
				mustFrom(t, "b", tensor.Shape{0, 2}, []uint8{}),
			},
			want: tensor.Tensor{Name: "batch", DataType: tensor.Uint8, Shape: tensor.Shape{0, 2}, Data: []byte{}},
		},
		{
			name: "bytes",
			parts: []tensor.Tensor{
				mustStrings(t, "a", tensor.Shape{1, 2}, "x", ""),
				mustStrings(t, "b", tensor.Shape{2, 2}, "a\x00b", "\xff", "long string", "z"),
			},
			want: mustStrings(t, "batch", tensor.Shape{3, 2}, "x", "", "a\x00b", "\xff", "long string", "z"),
		},
		{
			name: "bool",
			parts: []tensor.Tensor{
				mustFrom(t, "a", tensor.Shape{1}, []bool{true}),
				mustFrom(t, "b", tensor.Shape{1}, []bool{false}),
			},
			want: mustFrom(t, "batch", tensor.Shape{2}, []bool{true, false}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tensor.Concat("batch", tt.parts)
			if err != nil {
				t.Fatalf("Concat() error = %v", err)
			}
			if got.Name != tt.want.Name || got.DataType != tt.want.DataType || !got.Shape.Equal(tt.want.Shape) || !bytes.Equal(got.Data, tt.want.Data) {
				t.Fatalf("Concat() = %q %v %v % x, want %q %v %v % x", got.Name, got.DataType, got.Shape, got.Data,
					tt.want.Name, tt.want.DataType, tt.want.Shape, tt.want.Data)
			}
			if cap(got.Data) != len(got.Data) {
				t.Errorf("Concat() buffer cap %d, want exactly %d", cap(got.Data), len(got.Data))
			}
			if err := got.Validate(); err != nil {
				t.Errorf("Validate() = %v", err)
			}
			// The result owns its data and shape.
			for _, p := range tt.parts {
				for i := range p.Data {
					p.Data[i] ^= 0xff
				}
			}
			if !bytes.Equal(got.Data, tt.want.Data) {
				t.Errorf("Concat() result aliases a part")
			}
			tt.parts[0].Shape[0] = 99
			if got.Shape[0] == 99 {
				t.Errorf("Concat() result shares the first part's shape")
			}
		})
	}
}

func TestConcatSinglePart(t *testing.T) {
	in := mustFrom(t, "in", tensor.Shape{2}, []int32{1, 2})
	got, err := tensor.Concat("batch", []tensor.Tensor{in})
	if err != nil {
		t.Fatal(err)
	}
	if &got.Data[0] != &in.Data[0] {
		t.Error("Concat() of one part copied the data")
	}
	if got.Name != "batch" || got.DataType != tensor.Int32 || !got.Shape.Equal(tensor.Shape{2}) {
		t.Errorf("Concat() = %q %v %v", got.Name, got.DataType, got.Shape)
	}
	if allocs := testing.AllocsPerRun(100, func() { _, _ = tensor.Concat("batch", []tensor.Tensor{in}) }); allocs != 0 {
		t.Errorf("Concat() of one part allocates %v times, want 0", allocs)
	}
}

func TestConcatAllocs(t *testing.T) {
	parts := []tensor.Tensor{
		mustFrom(t, "a", tensor.Shape{4, 16}, make([]float32, 64)),
		mustFrom(t, "b", tensor.Shape{4, 16}, make([]float32, 64)),
		mustFrom(t, "c", tensor.Shape{4, 16}, make([]float32, 64)),
	}
	// One allocation for the data, one for the shape.
	if allocs := testing.AllocsPerRun(100, func() { _, _ = tensor.Concat("batch", parts) }); allocs > 2 {
		t.Errorf("Concat() allocates %v times, want at most 2", allocs)
	}
}

func TestConcatErrors(t *testing.T) {
	fp := mustFrom(t, "a", tensor.Shape{1, 2}, []float32{1, 2})
	tests := []struct {
		name    string
		parts   []tensor.Tensor
		wantErr string
	}{
		{"no parts", nil, `tensor "batch": concat of no parts`},
		{"scalar", []tensor.Tensor{mustFrom(t, "s", nil, []float32{1}), mustFrom(t, "s", nil, []float32{1})},
			`concat part 0 ("s") is a scalar`},
		{"single scalar", []tensor.Tensor{mustFrom(t, "s", nil, []float32{1})}, `is a scalar`},
		{"dtype", []tensor.Tensor{fp, mustFrom(t, "b", tensor.Shape{1, 2}, []int32{1, 2})},
			`concat part 1 ("b") has data type INT32, part 0 has FP32`},
		{"rank", []tensor.Tensor{fp, mustFrom(t, "b", tensor.Shape{2}, []float32{1, 2})},
			`concat part 1 ("b") has shape [2], incompatible with part 0's [1,2]`},
		{"rank scalar later", []tensor.Tensor{fp, mustFrom(t, "b", nil, []float32{1})},
			`has shape [], incompatible`},
		{"inner dim", []tensor.Tensor{fp, mustFrom(t, "b", tensor.Shape{1, 3}, []float32{1, 2, 3})},
			`has shape [1,3], incompatible with part 0's [1,2]`},
		{"invalid part", []tensor.Tensor{fp, {Name: "b", DataType: tensor.FP32, Shape: tensor.Shape{1, 2}, Data: make([]byte, 7)}},
			`tensor "batch": concat part 1: tensor "b": expected 8 bytes`},
		{"invalid single part", []tensor.Tensor{{Name: "b", DataType: tensor.FP32, Shape: tensor.Shape{1, 2}, Data: make([]byte, 7)}},
			`concat part 0: tensor "b": expected 8 bytes`},
		{"malformed bytes part", []tensor.Tensor{mustStrings(t, "a", tensor.Shape{1}, "x"), {Name: "b", DataType: tensor.Bytes, Shape: tensor.Shape{1}, Data: []byte{5, 0, 0, 0}}},
			`concat part 1: tensor "b": BYTES element 0 at offset 0: length 5 runs past`},
		{"negative dim", []tensor.Tensor{fp, {Name: "b", DataType: tensor.FP32, Shape: tensor.Shape{-1, 2}}},
			`dimension 0 is -1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tensor.Concat("batch", tt.parts)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, tensor.ErrInvalid) {
				t.Fatalf("Concat() error = %v, want ErrInvalid containing %q", err, tt.wantErr)
			}
			if got.Data != nil || got.Shape != nil {
				t.Errorf("Concat() on error = %+v, want zero", got)
			}
		})
	}
}

func TestSliceRows(t *testing.T) {
	fp := mustFrom(t, "out", tensor.Shape{4, 2}, []float32{0, 1, 10, 11, 20, 21, 30, 31})
	str := mustStrings(t, "txt", tensor.Shape{3, 2}, "a", "", "bb\x00", "\xff", "cccc", "d")
	tests := []struct {
		name       string
		in         tensor.Tensor
		start, end int64
		want       tensor.Tensor
		offset     int // expected start of the view within in.Data
	}{
		{"middle rows", fp, 1, 3, mustFrom(t, "out", tensor.Shape{2, 2}, []float32{10, 11, 20, 21}), 8},
		{"all rows", fp, 0, 4, fp, 0},
		{"first row", fp, 0, 1, mustFrom(t, "out", tensor.Shape{1, 2}, []float32{0, 1}), 0},
		{"last row", fp, 3, 4, mustFrom(t, "out", tensor.Shape{1, 2}, []float32{30, 31}), 24},
		{"empty at start", fp, 0, 0, tensor.Tensor{Name: "out", DataType: tensor.FP32, Shape: tensor.Shape{0, 2}, Data: []byte{}}, 0},
		{"empty at end", fp, 4, 4, tensor.Tensor{Name: "out", DataType: tensor.FP32, Shape: tensor.Shape{0, 2}, Data: []byte{}}, 32},
		{"vector", mustFrom(t, "v", tensor.Shape{3}, []int16{1, 2, 3}), 2, 3, mustFrom(t, "v", tensor.Shape{1}, []int16{3}), 4},
		{"rank 3", mustFrom(t, "r", tensor.Shape{2, 1, 2}, []uint8{1, 2, 3, 4}), 1, 2, mustFrom(t, "r", tensor.Shape{1, 1, 2}, []uint8{3, 4}), 2},
		{"bytes middle", str, 1, 2, mustStrings(t, "txt", tensor.Shape{1, 2}, "bb\x00", "\xff"), 4 + 1 + 4},
		{"bytes tail", str, 1, 3, mustStrings(t, "txt", tensor.Shape{2, 2}, "bb\x00", "\xff", "cccc", "d"), 9},
		{"bytes first", str, 0, 1, mustStrings(t, "txt", tensor.Shape{1, 2}, "a", ""), 0},
		{"bytes empty at end", str, 3, 3, tensor.Tensor{Name: "txt", DataType: tensor.Bytes, Shape: tensor.Shape{0, 2}, Data: []byte{}}, len(str.Data)},
		{"bytes zero-width rows", tensor.Tensor{Name: "z", DataType: tensor.Bytes, Shape: tensor.Shape{3, 0}}, 1, 3,
			tensor.Tensor{Name: "z", DataType: tensor.Bytes, Shape: tensor.Shape{2, 0}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.in.SliceRows(tt.start, tt.end)
			if err != nil {
				t.Fatalf("SliceRows(%d, %d) error = %v", tt.start, tt.end, err)
			}
			if got.Name != tt.want.Name || got.DataType != tt.want.DataType || !got.Shape.Equal(tt.want.Shape) || !bytes.Equal(got.Data, tt.want.Data) {
				t.Fatalf("SliceRows() = %q %v %v % x, want %q %v %v % x", got.Name, got.DataType, got.Shape, got.Data,
					tt.want.Name, tt.want.DataType, tt.want.Shape, tt.want.Data)
			}
			if err := got.Validate(); err != nil {
				t.Errorf("Validate() = %v", err)
			}
			if cap(got.Data) != len(got.Data) {
				t.Errorf("SliceRows() cap %d, want %d (appending must not overwrite later rows)", cap(got.Data), len(got.Data))
			}
			if len(got.Data) > 0 && &got.Data[0] != &tt.in.Data[tt.offset] {
				t.Errorf("SliceRows() data is not a view at offset %d", tt.offset)
			}
			if len(tt.in.Shape) > 0 && &got.Shape[0] == &tt.in.Shape[0] {
				t.Errorf("SliceRows() shares the input's shape")
			}
		})
	}
}

func TestSliceRowsErrors(t *testing.T) {
	fp := mustFrom(t, "out", tensor.Shape{4, 2}, []float32{0, 1, 10, 11, 20, 21, 30, 31})
	tests := []struct {
		name       string
		in         tensor.Tensor
		start, end int64
		wantErr    string
	}{
		{"scalar", mustFrom(t, "s", nil, []float32{1}), 0, 1, `tensor "s": cannot slice rows of a scalar`},
		{"negative start", fp, -1, 2, `tensor "out": row range [-1,2) out of bounds for shape [4,2]`},
		{"end past rows", fp, 2, 5, `row range [2,5) out of bounds`},
		{"start after end", fp, 3, 2, `row range [3,2) out of bounds`},
		{"invalid dtype", tensor.Tensor{Name: "x", Shape: tensor.Shape{1}, Data: []byte{0}}, 0, 1, `tensor "x": invalid data type`},
		{"negative dim", tensor.Tensor{Name: "x", DataType: tensor.FP32, Shape: tensor.Shape{2, -1}}, 0, 1, `dimension 1 is -1`},
		{"negative batch dim", tensor.Tensor{Name: "x", DataType: tensor.FP32, Shape: tensor.Shape{-1, 2}}, 0, 0, `dimension 0 is -1`},
		{"overflow", tensor.Tensor{Name: "x", DataType: tensor.FP32, Shape: tensor.Shape{1 << 40, 1 << 40}}, 0, 1, `overflows int64`},
		{"short data", tensor.Tensor{Name: "x", DataType: tensor.FP32, Shape: tensor.Shape{2, 2}, Data: make([]byte, 12)}, 0, 1,
			`tensor "x": expected 16 bytes for shape [2,2] of FP32, got 12`},
		{"malformed bytes", tensor.Tensor{Name: "t", DataType: tensor.Bytes, Shape: tensor.Shape{2},
			Data: append(tensor.AppendElement(nil, []byte("ok")), 9, 0, 0, 0)}, 1, 2,
			`tensor "t": BYTES element 1 at offset 6: length 9 runs past the end`},
		{"truncated bytes", tensor.Tensor{Name: "t", DataType: tensor.Bytes, Shape: tensor.Shape{3}, Data: tensor.AppendElement(nil, []byte("ok"))}, 0, 2,
			`6 bytes cannot hold 2 elements`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.in.SliceRows(tt.start, tt.end)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, tensor.ErrInvalid) {
				t.Fatalf("SliceRows(%d, %d) error = %v, want ErrInvalid containing %q", tt.start, tt.end, err, tt.wantErr)
			}
			if got.Data != nil || got.Shape != nil {
				t.Errorf("SliceRows() on error = %+v, want zero", got)
			}
		})
	}
}

// TestConcatSliceRoundTrip checks the batcher's gather/scatter cycle: each
// request gets back exactly its rows.
func TestConcatSliceRoundTrip(t *testing.T) {
	for _, tt := range []struct {
		name  string
		parts []tensor.Tensor
	}{
		{"fp16", []tensor.Tensor{
			mustFrom(t, "r0", tensor.Shape{1, 2}, []tensor.Float16{1, 2}),
			mustFrom(t, "r1", tensor.Shape{3, 2}, []tensor.Float16{3, 4, 5, 6, 7, 8}),
			mustFrom(t, "r2", tensor.Shape{0, 2}, []tensor.Float16{}),
			mustFrom(t, "r3", tensor.Shape{2, 2}, []tensor.Float16{9, 10, 11, 12}),
		}},
		{"bytes", []tensor.Tensor{
			mustStrings(t, "r0", tensor.Shape{2}, "alpha", ""),
			mustStrings(t, "r1", tensor.Shape{1}, "\x00\x00"),
			mustStrings(t, "r2", tensor.Shape{3}, "b", "cc", "\xfe"),
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			batch, err := tensor.Concat("batch", tt.parts)
			if err != nil {
				t.Fatal(err)
			}
			row := int64(0)
			for i, p := range tt.parts {
				got, err := batch.SliceRows(row, row+p.Shape[0])
				if err != nil {
					t.Fatalf("part %d: %v", i, err)
				}
				if !got.Shape.Equal(p.Shape) || !bytes.Equal(got.Data, p.Data) {
					t.Errorf("part %d = %v % x, want %v % x", i, got.Shape, got.Data, p.Shape, p.Data)
				}
				if p.DataType == tensor.Bytes {
					want, _ := tensor.Strings(p)
					if s, err := tensor.Strings(got); err != nil || !slices.Equal(s, want) {
						t.Errorf("part %d strings = %q, %v; want %q", i, s, err, want)
					}
				}
				row += p.Shape[0]
			}
		})
	}
}

func TestConcatFlat(t *testing.T) {
	a, _ := tensor.From("a", tensor.Shape{1, 2}, []int32{1, 2})
	b, _ := tensor.From("b", tensor.Shape{1, 3}, []int32{3, 4, 5})
	c, _ := tensor.From("c", tensor.Shape{0, 7}, []int32{})
	got, err := tensor.ConcatFlat("x", []tensor.Tensor{a, b, c})
	if err != nil {
		t.Fatal(err)
	}
	vals, _ := tensor.View[int32](got)
	if got.Name != "x" || !got.Shape.Equal(tensor.Shape{5}) || !slices.Equal(vals, []int32{1, 2, 3, 4, 5}) {
		t.Fatalf("got %v %v %v", got.Name, got.Shape, vals)
	}
	s1, _ := tensor.FromStrings("s", tensor.Shape{1, 1}, []string{"he\x00llo"})
	s2, _ := tensor.FromStrings("s", tensor.Shape{1, 2}, []string{"", "x"})
	strs, err := tensor.ConcatFlat("s", []tensor.Tensor{s1, s2})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := tensor.Strings(strs); !slices.Equal(got, []string{"he\x00llo", "", "x"}) || !strs.Shape.Equal(tensor.Shape{3}) {
		t.Fatalf("strings %q %v", got, strs.Shape)
	}
	f, _ := tensor.From("f", tensor.Shape{1}, []float32{1})
	for name, parts := range map[string][]tensor.Tensor{"none": nil, "mixed types": {a, f}, "invalid": {{Name: "bad", DataType: tensor.Int32, Shape: tensor.Shape{2}, Data: []byte{1}}}} {
		if _, err := tensor.ConcatFlat("x", parts); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
