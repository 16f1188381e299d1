package httpapi

import (
	"bytes"
	stdgzip "compress/gzip"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"unsafe"
)

// discardWriter is an http.ResponseWriter that counts the body bytes and
// keeps nothing.
type discardWriter struct {
	hdr http.Header
	n   int
}

func (w *discardWriter) Header() http.Header         { return w.hdr }
func (w *discardWriter) WriteHeader(int)             {}
func (w *discardWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }

// encodeInputs are the bodies BenchmarkEncode compresses: FP32 values
// drawn from a normal distribution (what embeddings and logits look like:
// the mantissas do not compress) and the same values as the JSON text of
// a response's "data".
func encodeInputs(size int) map[string][]byte {
	r := rand.New(rand.NewPCG(22, 22))
	fp32 := make([]byte, size)
	for i := 0; i+4 <= size; i += 4 {
		binary.LittleEndian.PutUint32(fp32[i:], math.Float32bits(float32(r.NormFloat64())))
	}
	js := []byte{'['}
	for len(js) < size {
		js = strconv.AppendFloat(js, float64(float32(r.NormFloat64())), 'g', -1, 64)
		js = append(js, ',')
	}
	return map[string][]byte{"fp32": fp32, "json": js[:size]}
}

// BenchmarkEncode compresses a response body with gzip at Triton's level
// 6: ours (pooled klauspost/compress writer) against compress/gzip, as the
// handler used it before issue #22 (a new writer per response) and pooled
// with Reset. ratio is compressed ÷ uncompressed size.
func BenchmarkEncode(b *testing.B) {
	for _, size := range []int{2 << 10, 64 << 10, 1 << 20} {
		for kind, data := range encodeInputs(size) {
			for _, impl := range []string{"ours", "stdlib-new", "stdlib-pooled"} {
				b.Run(fmt.Sprintf("%s/%s/%dKiB", kind, impl, size>>10), func(b *testing.B) {
					w := &discardWriter{hdr: http.Header{}}
					std, _ := stdgzip.NewWriterLevel(io.Discard, tritonLevel)
					b.SetBytes(int64(len(data)))
					b.ReportAllocs()
					for b.Loop() {
						w.n = 0
						switch impl {
						case "ours":
							if err := writeCompressed(w, codingGzip, tritonLevel, data, nil); err != nil {
								b.Fatal(err)
							}
						case "stdlib-new":
							zw, _ := stdgzip.NewWriterLevel(w, tritonLevel)
							_, _ = zw.Write(data)
							_ = zw.Close()
						case "stdlib-pooled":
							std.Reset(w)
							_, _ = std.Write(data)
							_ = std.Close()
						}
					}
					b.ReportMetric(float64(w.n)/float64(len(data)), "ratio")
				})
			}
		}
	}
}

// TestCompressAllocations: compressing a response allocates nothing once
// the pool holds an encoder.
func TestCompressAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector drops pooled encoders at random")
	}
	data := encodeInputs(4 << 10)["json"]
	w := &discardWriter{hdr: http.Header{}}
	for _, c := range []coding{codingGzip, codingDeflate} {
		allocs := testing.AllocsPerRun(100, func() {
			if err := writeCompressed(w, c, tritonLevel, data, nil); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %.1f allocations per response, want 0", contentEncoding[c][0], allocs)
		}
	}
}

// TestDecompressAlignment: a decompressed body puts the byte at alignAt
// on an 8-byte boundary, as readAll does for plain bodies, whatever the
// buffer's growth.
func TestDecompressAlignment(t *testing.T) {
	h := &handler{maxSize: DefaultMaxRequestSize}
	for _, size := range []int{100, 3 << 19} { // within a pooled buffer, and past one
		want := encodeInputs(size)["fp32"]
		var z bytes.Buffer
		zw := stdgzip.NewWriter(&z)
		_, _ = zw.Write(want)
		_ = zw.Close()
		for _, alignAt := range []int{0, 13, 99} {
			r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(z.Bytes()))
			r.Header.Set("Content-Encoding", "gzip")
			b, err := h.readBody(httptest.NewRecorder(), r, true, alignAt)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b.data, want) || uintptr(unsafe.Pointer(&b.data[alignAt]))%8 != 0 {
				t.Errorf("%d bytes, alignAt %d: equal %v, address of byte alignAt %% 8 = %d", size, alignAt, bytes.Equal(b.data, want), uintptr(unsafe.Pointer(&b.data[alignAt]))%8)
			}
			b.release()
		}
	}
}

// BenchmarkDecompress reads a gzip request body of JSON text or FP32
// noise: within a pooled buffer (decompressed once) and past one (counted,
// then decompressed again into a buffer of its size).
func BenchmarkDecompress(b *testing.B) {
	h := &handler{maxSize: DefaultMaxRequestSize}
	for _, size := range []int{256 << 10, 4 << 20, 32 << 20} {
		for kind, data := range encodeInputs(size) {
			var z bytes.Buffer
			zw := stdgzip.NewWriter(&z)
			_, _ = zw.Write(data)
			_ = zw.Close()
			b.Run(fmt.Sprintf("%s/%dKiB", kind, size>>10), func(b *testing.B) {
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(z.Bytes()))
					r.Header.Set("Content-Encoding", "gzip")
					body, err := h.readBody(httptest.NewRecorder(), r, true, -1)
					if err != nil || len(body.data) != size {
						b.Fatal(err)
					}
					body.release()
				}
			})
		}
	}
}
