package httpapi_test

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/httpapi"
)

// newHTTPServer serves h on a local port for the test.
func newHTTPServer(t testing.TB, h http.Handler) (*httptest.Server, *http.Client) {
	t.Helper()
	ts := httptest.NewServer(h)
	// DisableCompression: the tests set and read Accept-Encoding themselves.
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	t.Cleanup(func() {
		client.CloseIdleConnections()
		ts.Close()
	})
	return ts, client
}

func gz(b []byte) []byte {
	var out bytes.Buffer
	w := gzip.NewWriter(&out)
	w.Write(b)
	w.Close()
	return out.Bytes()
}

func zl(b []byte) []byte {
	var out bytes.Buffer
	w := zlib.NewWriter(&out)
	w.Write(b)
	w.Close()
	return out.Bytes()
}

const smallInfer = `{"inputs":[{"name":"INPUT0","shape":[1,3],"datatype":"INT32","data":[1,2,3]}]}`
const smallAnswer = `{"model_name":"id_INT32","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"INT32","shape":[1,3],"data":[1,2,3]}]}`

func TestCompression(t *testing.T) {
	// Every response compressed, as Triton does (the default leaves these
	// small answers alone: TestCompressionMinSize).
	f := newFixture(t, httpapi.WithCompressionMinSize(1))
	ts, client := newHTTPServer(t, f.h)
	post := func(body []byte, hdr map[string]string) *http.Response {
		t.Helper()
		return postInfer(t, ts, client, "id_INT32", body, hdr)
	}
	read := func(resp *http.Response) string {
		t.Helper()
		b, _ := decoded(t, resp)
		return string(b)
	}

	// Requests: gzip, deflate (zlib), identity.
	for enc, body := range map[string][]byte{"gzip": gz([]byte(smallInfer)), "deflate": zl([]byte(smallInfer)), "identity": []byte(smallInfer)} {
		resp := post(body, map[string]string{"Content-Encoding": enc})
		if got := read(resp); resp.StatusCode != 200 || got != smallAnswer {
			t.Errorf("Content-Encoding %s: %d %s", enc, resp.StatusCode, got)
		}
		if resp.Header.Get("Content-Encoding") != "" {
			t.Errorf("response compressed without Accept-Encoding")
		}
	}
	// Responses, by Accept-Encoding with q-values.
	for ae, want := range map[string]string{
		"gzip":                          "gzip",
		"deflate":                       "deflate",
		"gzip;q=0.5, deflate;q=0.8":     "deflate",
		"deflate;q=0.5, gzip":           "gzip",
		"gzip;q=0":                      "",
		"br, identity":                  "",
		"identity;q=0.5, gzip;q=0.5":    "",
		"*":                             "",
		"gzip;q=0.9,deflate;q=0.9":      "gzip",
		"br;q=1.0, gzip;q=0.1":          "gzip",
		"gzip; q=0.7, deflate; q=0.701": "deflate",
	} {
		resp := post([]byte(smallInfer), map[string]string{"Accept-Encoding": ae})
		if got := resp.Header.Get("Content-Encoding"); got != want {
			t.Errorf("Accept-Encoding %q: Content-Encoding %q, want %q", ae, got, want)
		}
		if got := resp.Header.Get("Vary"); got != "Accept-Encoding" {
			t.Errorf("Accept-Encoding %q: Vary %q", ae, got)
		}
		if got := read(resp); got != smallAnswer {
			t.Errorf("Accept-Encoding %q: body %s", ae, got)
		}
	}
	// Both ways, binary: the header length is the uncompressed JSON's.
	body, hl := binaryBody(`{"inputs":[{"name":"INPUT0","shape":[1,3],"datatype":"INT32","parameters":{"binary_data_size":12}}],"parameters":{"binary_data_output":true}}`, le[int32](4, 5, 6))
	resp := post(gz(body), map[string]string{"Content-Encoding": "gzip", "Accept-Encoding": "gzip", "Inference-Header-Content-Length": hl})
	got := read(resp)
	n, _ := strconv.Atoi(resp.Header.Get("Inference-Header-Content-Length"))
	if resp.StatusCode != 200 || n <= 0 || n > len(got) || got[n:] != string(le[int32](4, 5, 6)) ||
		got[:n] != `{"model_name":"id_INT32","model_version":"1","outputs":[{"name":"OUTPUT0","datatype":"INT32","shape":[1,3],"parameters":{"binary_data_size":12}}]}` {
		t.Errorf("binary both ways: %d %q (header length %d)", resp.StatusCode, got, n)
	}
	// Only inference responses are compressed.
	r, _ := http.NewRequest(http.MethodGet, ts.URL+"/v2", nil)
	r.Header.Set("Accept-Encoding", "gzip")
	mresp, err := client.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	mresp.Body.Close()
	if mresp.Header.Get("Content-Encoding") != "" {
		t.Errorf("server metadata compressed")
	}

	// Errors: unknown coding, broken streams.
	resp = post([]byte(smallInfer), map[string]string{"Content-Encoding": "br"})
	if resp.StatusCode != http.StatusUnsupportedMediaType || resp.Header.Get("Accept-Encoding") != "gzip, deflate" || !strings.Contains(read(resp), `{"error":"Unsupported compression type"}`) {
		t.Errorf("Content-Encoding br: %d %v", resp.StatusCode, resp.Header)
	}
	for enc, body := range map[string][]byte{
		"gzip":    []byte("not gzip"),
		"deflate": []byte("not zlib"),
	} {
		resp := post(body, map[string]string{"Content-Encoding": enc})
		if got := read(resp); resp.StatusCode != 400 || !strings.Contains(got, "failed to decompress the request body") {
			t.Errorf("broken %s: %d %s", enc, resp.StatusCode, got)
		}
	}
	truncated := gz([]byte(smallInfer))
	resp = post(truncated[:len(truncated)-6], map[string]string{"Content-Encoding": "gzip"})
	if got := read(resp); resp.StatusCode != 400 || !strings.Contains(got, "failed to decompress") {
		t.Errorf("truncated gzip: %d %s", resp.StatusCode, got)
	}
}

func TestCompressionBomb(t *testing.T) {
	f := newFixture(t, httpapi.WithMaxRequestSize(1<<18))
	// 2 MiB of zeros compress to about 2 KiB: within the limit as
	// received, far beyond it decompressed.
	bomb := gz(make([]byte, 2<<20))
	if len(bomb) > 16<<10 {
		t.Fatalf("bomb is %d bytes", len(bomb))
	}
	rec := f.do(req{path: inferPath("id_INT32"), body: bomb, header: map[string]string{"Content-Encoding": "gzip"}})
	wantError(t, rec, 400, "Decompressed data size exceeds the maximum allowed value of 262144 bytes. Use --http-max-input-size to increase the limit")
	rec = f.do(req{path: inferPath("id_INT32"), body: zl(make([]byte, 2<<20)), header: map[string]string{"Content-Encoding": "deflate"}})
	wantError(t, rec, 400, "exceeds the maximum allowed value")
}

func TestChunkedBodyLimit(t *testing.T) {
	f := newFixture(t, httpapi.WithMaxRequestSize(4096))
	ts, client := newHTTPServer(t, f.h)
	// An io.Reader of unknown length goes out chunked (no Content-Length).
	body := io.MultiReader(strings.NewReader(`{"inputs":[],"pad":"`), strings.NewReader(strings.Repeat("x", 100000)), strings.NewReader(`"}`))
	resp, err := client.Post(ts.URL+inferPath("id_INT32"), "application/json", body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 400 || !strings.Contains(string(b), "exceeds the maximum allowed value of 4096 bytes") {
		t.Errorf("chunked over the limit: %d %s", resp.StatusCode, b)
	}
}

// TestCancellation: a client that disconnects cancels its inference; the
// backend sees its context end.
func TestCancellation(t *testing.T) {
	bl := newBlocker()
	files := map[string]string{
		"block/config.pbtxt": strings.Replace(identityConfig("block", "TYPE_INT32", 0), `"mirror"`, `"blocker"`, 1),
		"block/1/model":      "",
	}
	srv := newServer(t, files, triton.WithBackend("blocker", bl.Backend()))
	ts, client := newHTTPServer(t, httpapi.NewHandler(srv))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		r, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+inferPath("block"),
			strings.NewReader(`{"inputs":[{"name":"INPUT0","shape":[1],"datatype":"INT32","data":[1]}]}`))
		resp, err := client.Do(r)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	select {
	case <-bl.Started:
	case <-time.After(10 * time.Second):
		t.Fatal("the backend never started")
	}
	cancel() // the client goes away
	select {
	case err := <-bl.Ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("backend saw %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the backend never saw its context end")
	}
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("client: %v", err)
	}
	// The failure is recorded as a cancellation.
	st, err := srv.Stats("block", 0)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for st[0].Failures.Canceled == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		st, _ = srv.Stats("block", 0)
	}
	if st[0].Failures.Canceled != 1 {
		t.Errorf("failures %+v, want one cancelled", st[0].Failures)
	}
}

// TestConcurrentInfer runs binary and JSON requests from many clients at
// once over real connections (run with -race: the body pool and the
// shared header values).
func TestConcurrentInfer(t *testing.T) {
	f := newFixture(t)
	ts, client := newHTTPServer(t, f.h)
	errs := make(chan error, 32)
	for w := range 16 {
		go func() {
			for i := range 25 {
				v := int32(w*1000 + i)
				var r *http.Request
				want := le[int32](v, v+1, v+2)
				if i%2 == 0 {
					body, hl := binaryBody(`{"inputs":[{"name":"INPUT0","shape":[1,3],"datatype":"INT32","parameters":{"binary_data_size":12}}],"parameters":{"binary_data_output":true}}`, want)
					r, _ = http.NewRequest(http.MethodPost, ts.URL+inferPath("id_INT32"), bytes.NewReader(body))
					r.Header.Set("Inference-Header-Content-Length", hl)
				} else {
					r, _ = http.NewRequest(http.MethodPost, ts.URL+inferPath("id_INT32"),
						strings.NewReader(fmt.Sprintf(`{"inputs":[{"name":"INPUT0","shape":[1,3],"datatype":"INT32","data":[%d,%d,%d]}],"parameters":{"binary_data_output":true}}`, v, v+1, v+2)))
				}
				resp, err := client.Do(r)
				if err != nil {
					errs <- err
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				n, _ := strconv.Atoi(resp.Header.Get("Inference-Header-Content-Length"))
				if resp.StatusCode != 200 || n > len(b) || !bytes.Equal(b[n:], want) {
					errs <- fmt.Errorf("request %d/%d: %d %q", w, i, resp.StatusCode, b)
					return
				}
			}
			errs <- nil
		}()
	}
	for range 16 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
