package tensor_test

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/triton-go/triton/tensor"
)

func TestAppendElement(t *testing.T) {
	tests := []struct {
		name      string
		dst, elem []byte
		want      []byte
	}{
		{"empty element", nil, nil, []byte{0, 0, 0, 0}},
		{"abc", nil, []byte("abc"), []byte{3, 0, 0, 0, 'a', 'b', 'c'}},
		{"keeps prefix", []byte{9}, []byte{0}, []byte{9, 1, 0, 0, 0, 0}},
		{"length 258", nil, bytes.Repeat([]byte{'x'}, 258), append([]byte{2, 1, 0, 0}, bytes.Repeat([]byte{'x'}, 258)...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tensor.AppendElement(tt.dst, tt.elem); !bytes.Equal(got, tt.want) {
				t.Errorf("AppendElement() = % x, want % x", got, tt.want)
			}
		})
	}
}

func TestValidateBytes(t *testing.T) {
	elem := func(s string) []byte { return tensor.AppendElement(nil, []byte(s)) }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	tests := []struct {
		name    string
		data    []byte
		n       int64
		wantErr string // substring; "" for success
	}{
		{"no elements", nil, 0, ""},
		{"one empty element", elem(""), 1, ""},
		{"one element", elem("abc"), 1, ""},
		{"two elements", cat(elem("abc"), elem("de")), 2, ""},
		{"NUL bytes", elem("a\x00\x00b"), 1, ""},
		{"invalid UTF-8", elem("\xff\xfe\xc3"), 1, ""},
		{"many empties", bytes.Repeat([]byte{0, 0, 0, 0}, 100), 100, ""},

		{"negative count", nil, -1, "BYTES data: negative element count -1"},
		{"truncated prefix", cat(elem("abc"), []byte{1, 0}), 2, "BYTES element 1 at offset 7: length prefix truncated (2 of 4 bytes)"},
		{"prefix only partly there", []byte{1, 0, 0}, 1, "3 bytes cannot hold 1 elements"},
		{"length past end", []byte{5, 0, 0, 0, 'a'}, 1, "BYTES element 0 at offset 0: length 5 runs past the end of the data (1 bytes left)"},
		{"length 2^32-1", []byte{0xff, 0xff, 0xff, 0xff, 'a', 'b', 'c', 'd'}, 1, "length 4294967295 runs past the end"},
		{"length past end second", cat(elem("a"), []byte{9, 0, 0, 0, 'b'}), 2, "BYTES element 1 at offset 5: length 9 runs past"},
		{"trailing byte", cat(elem("abc"), []byte{0}), 1, "BYTES data: 1 trailing bytes after 1 elements"},
		{"trailing element", cat(elem("a"), elem("b")), 1, "5 trailing bytes after 1 elements"},
		{"data but zero count", elem(""), 0, "4 trailing bytes after 0 elements"},
		{"too many elements", cat(elem("abcdefgh")), 2, "BYTES element 1 at offset 12: length prefix truncated (0 of 4 bytes)"},
		{"too many for the data", elem("a"), 2, "5 bytes cannot hold 2 elements"},
		{"huge count", elem("abc"), 1 << 62, "7 bytes cannot hold 4611686018427387904 elements"},
		{"max count", nil, 1<<63 - 1, "0 bytes cannot hold"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tensor.ValidateBytes(tt.data, tt.n)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ValidateBytes() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ValidateBytes() = %v, want it to contain %q", err, tt.wantErr)
			}
			if !errors.Is(err, tensor.ErrInvalid) {
				t.Errorf("ValidateBytes() = %v, does not wrap ErrInvalid", err)
			}
		})
	}
}

func TestBytesRoundTrip(t *testing.T) {
	tests := []struct {
		name   string
		shape  tensor.Shape
		values []string
	}{
		{"scalar", tensor.Shape{}, []string{"hello"}},
		{"empty strings", tensor.Shape{3}, []string{"", "", ""}},
		{"NUL bytes", tensor.Shape{2}, []string{"\x00", "a\x00b\x00"}},
		{"invalid UTF-8", tensor.Shape{3}, []string{"\xff", "\xc3\x28", "\xed\xa0\x80"}},
		{"UTF-8", tensor.Shape{1, 2}, []string{"héllo", "日本語"}},
		{"matrix", tensor.Shape{2, 2}, []string{"a", "bb", "", "dddd"}},
		{"long", tensor.Shape{2}, []string{strings.Repeat("x", 70000), "y"}},
		{"zero elements", tensor.Shape{0, 3}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want []byte
			for _, v := range tt.values {
				want = tensor.AppendElement(want, []byte(v))
			}
			x, err := tensor.FromStrings("S", tt.shape, tt.values)
			if err != nil {
				t.Fatalf("FromStrings() error = %v", err)
			}
			if x.DataType != tensor.Bytes || x.Name != "S" || !x.Shape.Equal(tt.shape) {
				t.Errorf("FromStrings() = %v %q %v", x.DataType, x.Name, x.Shape)
			}
			if !bytes.Equal(x.Data, want) {
				t.Errorf("FromStrings() data = %q, want %q", x.Data, want)
			}
			if cap(x.Data) != len(want) {
				t.Errorf("FromStrings() cap = %d, want exact %d", cap(x.Data), len(want))
			}
			if err := x.Validate(); err != nil {
				t.Errorf("Validate() = %v", err)
			}

			strs, err := tensor.Strings(x)
			if err != nil || !slices.Equal(strs, tt.values) {
				t.Errorf("Strings() = %q, %v; want %q", strs, err, tt.values)
			}

			bs, err := tensor.ByteSlices(x)
			if err != nil || len(bs) != len(tt.values) {
				t.Fatalf("ByteSlices() = %q, %v", bs, err)
			}
			for i, b := range bs {
				if string(b) != tt.values[i] {
					t.Errorf("ByteSlices()[%d] = %q, want %q", i, b, tt.values[i])
				}
			}

			y, err := tensor.FromByteSlices("S", tt.shape, bs)
			if err != nil || !bytes.Equal(y.Data, x.Data) || y.DataType != tensor.Bytes {
				t.Errorf("FromByteSlices() = % x, %v; want % x", y.Data, err, x.Data)
			}

			var got []string
			for i, e := range x.Elements() {
				if i != len(got) {
					t.Errorf("Elements() index %d, want %d", i, len(got))
				}
				got = append(got, string(e))
			}
			if len(got) != len(tt.values) || (len(got) > 0 && !slices.Equal(got, tt.values)) {
				t.Errorf("Elements() = %q, want %q", got, tt.values)
			}
		})
	}
}

func TestByteSlicesAlias(t *testing.T) {
	x, err := tensor.FromStrings("S", tensor.Shape{2}, []string{"ab", "cd"})
	if err != nil {
		t.Fatal(err)
	}
	bs, err := tensor.ByteSlices(x)
	if err != nil {
		t.Fatal(err)
	}
	bs[0][0] = 'X'
	if x.Data[4] != 'X' {
		t.Errorf("ByteSlices() does not alias Data: %q", x.Data)
	}
	if cap(bs[0]) != len(bs[0]) {
		t.Errorf("cap(ByteSlices()[0]) = %d, want %d", cap(bs[0]), len(bs[0]))
	}
	_ = append(bs[0], 'Z') // must not overwrite the next length prefix
	if err := x.Validate(); err != nil || string(bs[1]) != "cd" {
		t.Errorf("append to an element clobbered the next: %q, %v", x.Data, err)
	}
	for _, e := range x.Elements() {
		if cap(e) != len(e) {
			t.Errorf("Elements() yields cap %d for len %d", cap(e), len(e))
		}
	}
}

func TestStringsCopies(t *testing.T) {
	x, err := tensor.FromStrings("S", tensor.Shape{1}, []string{"abc"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := tensor.Strings(x)
	if err != nil {
		t.Fatal(err)
	}
	x.Data[4] = 'X'
	if s[0] != "abc" {
		t.Errorf("Strings() result changed with Data: %q", s[0])
	}
}

func TestBytesAccessorErrors(t *testing.T) {
	tests := []struct {
		name    string
		tensor  tensor.Tensor
		wantErr string
	}{
		{"not bytes", tensor.Tensor{Name: "S", DataType: tensor.Uint8, Shape: tensor.Shape{4}, Data: make([]byte, 4)},
			`tensor "S": data type is UINT8, not BYTES`},
		{"invalid type", tensor.Tensor{Name: "S", Shape: tensor.Shape{1}}, `data type is DataType(0), not BYTES`},
		{"malformed", tensor.Tensor{Name: "S", DataType: tensor.Bytes, Shape: tensor.Shape{1}, Data: []byte{9, 0, 0, 0}},
			`tensor "S": BYTES element 0 at offset 0: length 9 runs past`},
		{"trailing", tensor.Tensor{Name: "S", DataType: tensor.Bytes, Shape: tensor.Shape{1}, Data: []byte{0, 0, 0, 0, 0}},
			`1 trailing bytes`},
		{"negative shape", tensor.Tensor{Name: "S", DataType: tensor.Bytes, Shape: tensor.Shape{-1}}, `dimension 0 is -1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := tensor.Strings(tt.tensor)
			if err == nil || s != nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, tensor.ErrInvalid) {
				t.Errorf("Strings() = %q, %v; want ErrInvalid containing %q", s, err, tt.wantErr)
			}
			b, err := tensor.ByteSlices(tt.tensor)
			if err == nil || b != nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, tensor.ErrInvalid) {
				t.Errorf("ByteSlices() = %q, %v; want ErrInvalid containing %q", b, err, tt.wantErr)
			}
		})
	}
}

func TestFromStringsErrors(t *testing.T) {
	tests := []struct {
		name    string
		shape   tensor.Shape
		values  []string
		wantErr string
		wrapped error
	}{
		{"too few", tensor.Shape{2, 2}, []string{"a", "b", "c"}, `tensor "S": shape [2,2] needs 4 BYTES elements, got 3`, nil},
		{"too many", tensor.Shape{}, []string{"a", "b"}, `shape [] needs 1 BYTES elements, got 2`, nil},
		{"negative", tensor.Shape{-1}, []string{"a"}, `tensor "S": shape [-1]: dimension 0 is -1`, tensor.ErrNegativeDim},
		{"overflow", tensor.Shape{1 << 40, 1 << 40}, nil, `element count overflows`, tensor.ErrOverflow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x, err := tensor.FromStrings("S", tt.shape, tt.values)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, tensor.ErrInvalid) {
				t.Fatalf("FromStrings() error = %v, want ErrInvalid containing %q", err, tt.wantErr)
			}
			if tt.wrapped != nil && !errors.Is(err, tt.wrapped) {
				t.Errorf("FromStrings() error = %v, does not wrap %v", err, tt.wrapped)
			}
			if x.Data != nil || x.DataType != tensor.Invalid {
				t.Errorf("FromStrings() on error = %+v, want zero", x)
			}
			bs := make([][]byte, len(tt.values))
			if _, err := tensor.FromByteSlices("S", tt.shape, bs); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("FromByteSlices() error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestElements(t *testing.T) {
	valid := tensor.AppendElement(tensor.AppendElement(nil, []byte("a")), []byte("bc"))
	collect := func(x tensor.Tensor) []string {
		var out []string
		for _, e := range x.Elements() {
			out = append(out, string(e))
		}
		return out
	}
	tests := []struct {
		name   string
		tensor tensor.Tensor
		want   []string
	}{
		{"valid", tensor.Tensor{DataType: tensor.Bytes, Shape: tensor.Shape{2}, Data: valid}, []string{"a", "bc"}},
		{"stops at malformed", tensor.Tensor{DataType: tensor.Bytes, Shape: tensor.Shape{3},
			Data: append(tensor.AppendElement(nil, []byte("ok")), 200, 0, 0, 0, 'x')}, []string{"ok"}},
		{"stops at truncated prefix", tensor.Tensor{DataType: tensor.Bytes, Shape: tensor.Shape{2}, Data: append(tensor.AppendElement(nil, nil), 1)}, []string{""}},
		{"at most NumElements", tensor.Tensor{DataType: tensor.Bytes, Shape: tensor.Shape{1}, Data: valid}, []string{"a"}},
		{"not bytes", tensor.Tensor{DataType: tensor.Uint8, Shape: tensor.Shape{5}, Data: valid[:5]}, nil},
		{"bad shape", tensor.Tensor{DataType: tensor.Bytes, Shape: tensor.Shape{-1}, Data: valid}, nil},
		{"zero elements", tensor.Tensor{DataType: tensor.Bytes, Shape: tensor.Shape{0}, Data: valid}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := collect(tt.tensor); !slices.Equal(got, tt.want) {
				t.Errorf("Elements() = %q, want %q", got, tt.want)
			}
		})
	}
	t.Run("early break", func(t *testing.T) {
		n := 0
		for range (tensor.Tensor{DataType: tensor.Bytes, Shape: tensor.Shape{2}, Data: valid}).Elements() {
			n++
			break
		}
		if n != 1 {
			t.Errorf("loop ran %d times, want 1", n)
		}
	})
}
