//go:build cgo && (linux || darwin)

package ortrun

import (
	"encoding/binary"
	"errors"
	"testing"
)

// refCount is a plain-Go reference for the C framing walk: the number of
// elements data frames cleanly, or -1 if it does not.
func refCount(data []byte) int {
	n := 0
	for len(data) > 0 {
		if len(data) < 4 {
			return -1
		}
		l := uint64(binary.LittleEndian.Uint32(data))
		if l > uint64(len(data)-4) {
			return -1
		}
		data = data[4+l:]
		n++
	}
	return n
}

// FuzzCheckFraming checks the C framing walk against refCount: it accepts
// exactly the data that frames n elements, and that it never crashes.
func FuzzCheckFraming(f *testing.F) {
	f.Add([]byte{}, 0)
	f.Add([]byte{1, 0, 0, 0, 'a'}, 1)
	f.Add([]byte{1, 0, 0, 0, 'a', 0, 0}, 1)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, 1)
	f.Add([]byte{2, 0, 0, 0, 'h', 0, 0, 0, 0, 0}, 3)
	f.Fuzz(func(t *testing.T, data []byte, n int) {
		if n < 0 || n > 1<<20 {
			return
		}
		data = append([]byte(nil), data...) // cap == len: nothing past the end to read by accident
		err := checkFraming(data, n)
		if want := refCount(data) == n; (err == nil) != want {
			t.Fatalf("checkFraming(%q, %d) = %v, want ok = %v", data, n, err, want)
		}
		if err != nil && !errors.Is(err, ErrFraming) {
			t.Fatalf("checkFraming error %v does not wrap ErrFraming", err)
		}
	})
}

func TestCheckFramingMessages(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		n    int
		want string
	}{
		{"ok empty", nil, 0, ""},
		{"ok", []byte{0, 0, 0, 0, 1, 0, 0, 0, 0}, 2, ""},
		{"too few", []byte{0, 0, 0, 0}, 2, "malformed BYTES data: data holds 1 elements, the tensor has 2"},
		{"too many", []byte{0, 0, 0, 0, 0, 0, 0, 0}, 1, "malformed BYTES data: data holds 2 elements, the tensor has only 1"},
		{"prefix", []byte{0, 0, 0, 0, 0}, 2, "malformed BYTES data: element 1 at offset 4: length prefix truncated (1 of 4 bytes)"},
		{"length", []byte{3, 0, 0, 0, 'a'}, 1, "malformed BYTES data: element 0 at offset 0: length 3 runs past the end of the data (1 bytes left)"},
		{"trailing", []byte{0, 0, 0, 0, 9}, 1, "malformed BYTES data: 1 trailing bytes at offset 4, after the tensor's 1 elements"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkFraming(tc.data, tc.n)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("checkFraming = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestNotBound unbinds the package for the length of the test (it must
// not run in parallel with others).
func TestNotBound(t *testing.T) {
	saved := env.Swap(nil)
	defer env.Store(saved)
	if _, err := NewSession(nil, nil, nil); !errors.Is(err, ErrNotBound) {
		t.Errorf("NewSession = %v, want ErrNotBound", err)
	}
}

// TestElemSizes checks the element sizes of Run's input checks (Go) and
// output sizing (C) against each other and the ONNX types.
func TestElemSizes(t *testing.T) {
	want := map[int32]int{1: 4, 2: 1, 3: 1, 4: 2, 5: 2, 6: 4, 7: 8, 9: 1, 10: 2, 11: 8, 12: 4, 13: 8, 16: 2}
	for typ := int32(-1); typ < 40; typ++ {
		if got := elemSize(typ); got != want[typ] {
			t.Errorf("elemSize(%s) = %d, want %d", typeName(typ), got, want[typ])
		}
		if got := cElemSize(typ); got != want[typ] {
			t.Errorf("C ortrun_elem_size(%s) = %d, want %d", typeName(typ), got, want[typ])
		}
	}
}
