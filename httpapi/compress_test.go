package httpapi_test

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/triton-go/triton/httpapi"
)

// postInfer sends body to model's infer endpoint on ts with the headers.
func postInfer(t testing.TB, ts *httptest.Server, client *http.Client, model string, body []byte, hdr map[string]string) *http.Response {
	t.Helper()
	r, err := http.NewRequest(http.MethodPost, ts.URL+inferPath(model), bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	resp, err := client.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// readDecoded reads a response body, undoing its Content-Encoding; raw is
// the number of bytes that came over the wire.
func readDecoded(resp *http.Response) (body []byte, raw int, err error) {
	wire, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, 0, err
	}
	var zr io.Reader
	switch enc := resp.Header.Get("Content-Encoding"); enc {
	case "":
		return wire, len(wire), nil
	case "gzip":
		zr, err = gzip.NewReader(bytes.NewReader(wire))
	case "deflate":
		zr, err = zlib.NewReader(bytes.NewReader(wire))
	default:
		return nil, 0, fmt.Errorf("Content-Encoding %q", enc)
	}
	if err == nil {
		body, err = io.ReadAll(zr)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("decompressing the %s response: %w", resp.Header.Get("Content-Encoding"), err)
	}
	return body, len(wire), nil
}

// decoded is readDecoded failing the test on error.
func decoded(t testing.TB, resp *http.Response) (body []byte, raw int) {
	t.Helper()
	body, raw, err := readDecoded(resp)
	if err != nil {
		t.Fatal(err)
	}
	return body, raw
}

// fp32Body is a binary request for id_FP32 with n float32 values (a
// pattern that compresses) asking for the output in binary.
func fp32Body(n int) (body []byte, hl string, values []byte) {
	vals := make([]float32, n)
	for i := range vals {
		vals[i] = float32(i % 1000)
	}
	values = le(vals...)
	body, hl = binaryBody(fmt.Sprintf(`{"inputs":[{"name":"INPUT0","shape":[1,%d],"datatype":"FP32","parameters":{"binary_data_size":%d}}],"parameters":{"binary_data_output":true}}`, n, len(values)), values)
	return body, hl, values
}

// binaryOutput checks a binary id_FP32 answer and returns its tensor bytes.
func binaryOutput(t testing.TB, resp *http.Response, body []byte) []byte {
	t.Helper()
	n, err := strconv.Atoi(resp.Header.Get("Inference-Header-Content-Length"))
	if resp.StatusCode != 200 || err != nil || n > len(body) {
		t.Fatalf("status %d, header length %q, body %.200q", resp.StatusCode, resp.Header.Get("Inference-Header-Content-Length"), body)
	}
	return body[n:]
}

// TestCompressionMinSize: with the default minimum size, a small answer
// goes out as it is whatever Accept-Encoding says; a large one is
// compressed, with Vary, chunked when its compressed form passes net/http's
// buffer and with a Content-Length when it does not; the minimum counts
// the whole uncompressed body.
func TestCompressionMinSize(t *testing.T) {
	f := newFixture(t)
	ts, client := newHTTPServer(t, f.h)
	gzipped := map[string]string{"Accept-Encoding": "gzip"}

	resp := postInfer(t, ts, client, "id_INT32", []byte(smallInfer), gzipped)
	if got, _ := decoded(t, resp); resp.Header.Get("Content-Encoding") != "" || resp.Header.Get("Vary") != "" || string(got) != smallAnswer {
		t.Errorf("small answer: Content-Encoding %q, Vary %q, body %s", resp.Header.Get("Content-Encoding"), resp.Header.Get("Vary"), got)
	}

	// 64 KiB of binary output: compressed and chunked.
	body, hl, values := fp32Body(16 << 10)
	resp = postInfer(t, ts, client, "id_FP32", body, map[string]string{"Accept-Encoding": "gzip", "Inference-Header-Content-Length": hl})
	got, raw := decoded(t, resp)
	if out := binaryOutput(t, resp, got); !bytes.Equal(out, values) {
		t.Errorf("64 KiB answer: %d bytes of output, want %d equal bytes", len(out), len(values))
	}
	if resp.Header.Get("Content-Encoding") != "gzip" || resp.Header.Get("Vary") != "Accept-Encoding" || raw >= len(got) {
		t.Errorf("64 KiB answer: Content-Encoding %q, Vary %q, %d bytes on the wire for %d", resp.Header.Get("Content-Encoding"), resp.Header.Get("Vary"), raw, len(got))
	}
	if resp.ContentLength != -1 || len(resp.TransferEncoding) != 1 || resp.TransferEncoding[0] != "chunked" {
		t.Errorf("64 KiB answer: Content-Length %d, Transfer-Encoding %v, want chunked", resp.ContentLength, resp.TransferEncoding)
	}

	// A JSON answer at the minimum exactly: compressed, with the
	// compressed length; one byte under: not compressed.
	req := []byte(`{"inputs":[{"name":"INPUT0","shape":[1,400],"datatype":"INT32","data":[` + strings.Repeat("7,", 399) + `7]}]}`)
	plain, _ := decoded(t, postInfer(t, ts, client, "id_INT32", req, nil))
	for _, tc := range []struct {
		min  int
		want string
	}{{len(plain), "deflate"}, {len(plain) + 1, ""}} {
		ts, client := newHTTPServer(t, httpapi.NewHandler(f.srv, httpapi.WithCompressionMinSize(tc.min)))
		resp := postInfer(t, ts, client, "id_INT32", req, map[string]string{"Accept-Encoding": "deflate"})
		got, raw := decoded(t, resp)
		if enc := resp.Header.Get("Content-Encoding"); enc != tc.want || !bytes.Equal(got, plain) {
			t.Errorf("min %d, %d-byte answer: Content-Encoding %q, want %q; body %.100s", tc.min, len(plain), enc, tc.want, got)
		}
		if resp.ContentLength != int64(raw) {
			t.Errorf("min %d: Content-Length %d, %d bytes received", tc.min, resp.ContentLength, raw)
		}
	}
}

// TestCompressionLevels: every level gives a body that decompresses to
// the answer; levels out of range are refused by NewHandler.
func TestCompressionLevels(t *testing.T) {
	f := newFixture(t)
	body, hl, values := fp32Body(4 << 10)
	for level := -2; level <= 9; level++ {
		h := httpapi.NewHandler(f.srv, httpapi.WithCompressionLevel(level))
		for _, enc := range []string{"gzip", "deflate"} {
			rec := serve(h, req{path: inferPath("id_FP32"), body: body, header: map[string]string{"Accept-Encoding": enc, "Inference-Header-Content-Length": hl}})
			resp := rec.Result()
			got, _ := decoded(t, resp)
			if out := binaryOutput(t, resp, got); resp.Header.Get("Content-Encoding") != enc || !bytes.Equal(out, values) {
				t.Errorf("level %d, %s: Content-Encoding %q, %d bytes of output", level, enc, resp.Header.Get("Content-Encoding"), len(out))
			}
		}
	}
	for _, level := range []int{-3, 10} {
		func() {
			defer func() {
				if v := recover(); v == nil || !strings.Contains(fmt.Sprint(v), "WithCompressionLevel("+strconv.Itoa(level)+")") {
					t.Errorf("level %d: recovered %v, want a panic naming the option", level, v)
				}
			}()
			httpapi.NewHandler(f.srv, httpapi.WithCompressionLevel(level))
		}()
	}
}

// TestDecompression: bodies larger than a pooled buffer, whose binary
// tensors start at an unaligned offset (TestDecompressAlignment checks the
// alignment itself); either format under either name, as zlib's
// auto-detection gives Triton; empty bodies.
func TestDecompression(t *testing.T) {
	f := newFixture(t)
	// 1.5 MiB of input (past the pooled buffers' 1 MiB) after a header
	// whose length is not a multiple of 8.
	body, hl, values := fp32Body(3 << 17)
	if n, _ := strconv.Atoi(hl); n%8 == 0 {
		t.Fatalf("header length %d is aligned already", n)
	}
	for enc, z := range map[string][]byte{"gzip": gz(body), "deflate": zl(body)} {
		rec := f.do(req{path: inferPath("id_FP32"), body: z, header: map[string]string{"Content-Encoding": enc, "Inference-Header-Content-Length": hl}})
		got, _ := decoded(t, rec.Result())
		if out := binaryOutput(t, rec.Result(), got); !bytes.Equal(out, values) {
			t.Errorf("%s, 1.5 MiB: %d bytes of output, want %d equal bytes", enc, len(out), len(values))
		}
	}
	for enc, z := range map[string][]byte{"gzip": zl([]byte(smallInfer)), "deflate": gz([]byte(smallInfer))} {
		rec := f.do(req{path: inferPath("id_INT32"), body: z, header: map[string]string{"Content-Encoding": enc}})
		wantBody(t, rec, smallAnswer)
	}
	for _, enc := range []string{"gzip", "deflate"} {
		rec := f.do(req{method: http.MethodPost, path: inferPath("id_INT32"), header: map[string]string{"Content-Encoding": enc}})
		wantError(t, rec, 400, "nothing to be decompressed")
	}
}

// bombReader is a gzip stream of a gigabyte of zeros (about a megabyte
// compressed), compressed as it is read, counting the bytes read.
type bombReader struct {
	pr   *io.PipeReader
	read atomic.Int64
	done chan struct{}
}

func newBomb(t *testing.T) *bombReader {
	pr, pw := io.Pipe()
	b := &bombReader{pr: pr, done: make(chan struct{})}
	go func() {
		defer close(b.done)
		zw := gzip.NewWriter(pw)
		chunk := make([]byte, 64<<10)
		for range (1 << 30) / len(chunk) {
			if _, err := zw.Write(chunk); err != nil {
				return // the reader stopped
			}
		}
		pw.CloseWithError(zw.Close())
	}()
	t.Cleanup(func() {
		pr.CloseWithError(errors.New("test over"))
		<-b.done
	})
	return b
}

func (b *bombReader) Read(p []byte) (int, error) {
	n, err := b.pr.Read(p)
	b.read.Add(int64(n))
	return n, err
}

// TestDecompressionBomb: a body that decompresses far beyond the limit is
// refused with Triton's message once the limit is passed: the server reads
// no more of it than that (a kilobyte of the bomb's megabyte, and its
// read-ahead), so neither time nor memory grows with the bomb.
func TestDecompressionBomb(t *testing.T) {
	const limit = 1 << 20
	f := newFixture(t, httpapi.WithMaxRequestSize(limit))
	bomb := newBomb(t)
	r := httptest.NewRequest(http.MethodPost, inferPath("id_INT32"), nil)
	r.Body, r.ContentLength = io.NopCloser(bomb), -1
	r.Header.Set("Content-Encoding", "gzip")
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, r)
	wantError(t, rec, 400, "Decompressed data size exceeds the maximum allowed value of 1048576 bytes. Use --http-max-input-size to increase the limit")
	if n := bomb.read.Load(); n > 64<<10 {
		t.Errorf("the server read %d compressed bytes before refusing", n)
	}
}

// TestConcurrentCompression runs compressed requests and responses of
// mixed sizes from many clients at once (run with -race: the pooled
// encoders, decoders and body buffers).
func TestConcurrentCompression(t *testing.T) {
	f := newFixture(t)
	ts, client := newHTTPServer(t, f.h)
	errs := make(chan error, 8)
	for w := range 8 {
		go func() {
			for i := range 4 {
				body, hl, values := fp32Body(1 << (8 + (w+i)%7)) // 1 KiB (not compressed) to 64 KiB
				reqEnc, respEnc := "gzip", "deflate"
				if i%2 == 1 {
					reqEnc, respEnc = respEnc, reqEnc
				}
				z := gz(body)
				if reqEnc == "deflate" {
					z = zl(body)
				}
				r, _ := http.NewRequest(http.MethodPost, ts.URL+inferPath("id_FP32"), bytes.NewReader(z))
				r.Header.Set("Content-Encoding", reqEnc)
				r.Header.Set("Accept-Encoding", respEnc)
				r.Header.Set("Inference-Header-Content-Length", hl)
				resp, err := client.Do(r)
				if err != nil {
					errs <- err
					return
				}
				got, _, err := readDecoded(resp)
				resp.Body.Close()
				n, _ := strconv.Atoi(resp.Header.Get("Inference-Header-Content-Length"))
				wantEnc := respEnc
				if len(got) < httpapi.DefaultCompressionMinSize {
					wantEnc = ""
				}
				if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != wantEnc || n > len(got) || !bytes.Equal(got[n:], values) {
					errs <- fmt.Errorf("client %d, request %d (%d values, %s in, %s out): status %d, %v", w, i, len(values)/4, reqEnc, respEnc, resp.StatusCode, err)
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
