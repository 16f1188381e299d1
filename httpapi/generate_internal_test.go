package httpapi

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/internal/testmodels"
	"github.com/triton-go/triton/tensor"
)

const streamModelConfig = `
name: "m"
backend: "mirror"
max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_STRING dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_STRING dims: [ 1 ] } ]
`

// streamHandler is a handler over a server with model "m" whose generate
// requests go to s instead of the server.
func streamHandler(t *testing.T, s streamer) *handler {
	t.Helper()
	srv := testmodels.NewServer(t, map[string]string{"m/config.pbtxt": streamModelConfig, "m/1/model": ""},
		triton.WithBackend("mirror", testmodels.Mirror))
	h := NewHandler(srv).(*handler)
	h.stream = s
	return h
}

// token is a response of model "m" whose OUTPUT0 is s.
func token(t *testing.T, s string) *triton.InferResponse {
	t.Helper()
	out, err := tensor.FromStrings("OUTPUT0", tensor.Shape{1}, []string{s})
	if err != nil {
		t.Fatal(err)
	}
	return &triton.InferResponse{Model: "m", Version: 1, ID: "r", Outputs: []tensor.Tensor{out}}
}

type item struct {
	resp *triton.InferResponse
	err  error
}

// yielding is a streamer that yields items in order and counts how many
// yields returned true.
func yielding(items []item, accepted *int) streamer {
	return func(ctx context.Context, req *triton.InferRequest) iter.Seq2[*triton.InferResponse, error] {
		return func(yield func(*triton.InferResponse, error) bool) {
			for _, it := range items {
				if !yield(it.resp, it.err) {
					return
				}
				*accepted++
			}
		}
	}
}

func post(h http.Handler, path, body string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
	return rec
}

func event(payload string) string { return "data: " + payload + "\n\n" }

// Every response becomes an event, errors mid-stream too, and the stream
// goes on after them while the streamer yields.
func TestGenerateStreamResponses(t *testing.T) {
	busy := &triton.Error{Code: triton.Unavailable, Model: "m", Version: 1, Err: errors.New("instance lost")}
	items := []item{{token(t, "a"), nil}, {token(t, "b"), nil}, {nil, busy}, {nil, nil}, {token(t, "c"), nil}}
	var accepted int
	h := streamHandler(t, yielding(items, &accepted))
	rec := post(h, "/v2/models/m/generate_stream", `{"INPUT0":"x"}`)
	resp := func(s string) string {
		return event(`{"OUTPUT0":"` + s + `","id":"r","model_name":"m","model_version":"1"}`)
	}
	want := resp("a") + resp("b") + event(`{"error":"instance lost"}`) + resp("c")
	if rec.Code != http.StatusOK || rec.Body.String() != want {
		t.Fatalf("status %d, body\n%q\nwant\n%q", rec.Code, rec.Body.String(), want)
	}
	if ct := rec.Header().Get("Content-Type"); ct != sseContentType {
		t.Errorf("Content-Type %q", ct)
	}
	if accepted != len(items) {
		t.Errorf("%d of %d yields accepted", accepted, len(items))
	}
}

// generate wants exactly one response: it stops the request at the second
// and answers Triton's error, with 400.
func TestGenerateNotOneResponse(t *testing.T) {
	for _, n := range []int{0, 2, 3} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var items []item
			for i := range n {
				items = append(items, item{token(t, fmt.Sprint(i)), nil})
			}
			var accepted int
			h := streamHandler(t, yielding(items, &accepted))
			rec := post(h, "/v2/models/m/generate", `{"INPUT0":"x"}`)
			if rec.Code != http.StatusBadRequest || rec.Body.String() != `{"error":"`+errNotOneResponse+`"}` {
				t.Fatalf("status %d, body %s", rec.Code, rec.Body.String())
			}
			if want := min(n, 1); accepted != want {
				t.Errorf("%d yields accepted, want %d (stopped at the second response)", accepted, want)
			}
		})
	}
}

// An error before any response is a plain JSON error with its status, on
// both endpoints; no response at all is an empty stream.
func TestGenerateFirstError(t *testing.T) {
	busy := &triton.Error{Code: triton.Unavailable, Model: "m", Version: 1, Err: errors.New("queue full")}
	for _, path := range []string{"/v2/models/m/generate", "/v2/models/m/generate_stream"} {
		var accepted int
		h := streamHandler(t, yielding([]item{{nil, busy}, {token(t, "late"), nil}}, &accepted))
		rec := post(h, path, `{"INPUT0":"x"}`)
		if rec.Code != http.StatusServiceUnavailable || rec.Body.String() != `{"error":"queue full"}` || rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s: status %d, %s, body %s", path, rec.Code, rec.Header().Get("Content-Type"), rec.Body.String())
		}
		if accepted != 0 {
			t.Errorf("%s: the stream went on after the error answered", path)
		}
	}
	var accepted int
	rec := post(streamHandler(t, yielding(nil, &accepted)), "/v2/models/m/generate_stream", `{"INPUT0":"x"}`)
	if rec.Code != http.StatusOK || rec.Body.Len() != 0 || rec.Header().Get("Content-Type") != sseContentType {
		t.Errorf("no response: status %d, %s, body %q", rec.Code, rec.Header().Get("Content-Type"), rec.Body.String())
	}
}

// readEvent reads one SSE event ("data: ...\n\n") from br.
func readEvent(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	line, err := br.ReadString('\n')
	if err != nil {
		t.Fatalf("reading an event: %v", err)
	}
	blank, err := br.ReadString('\n')
	if err != nil || blank != "\n" {
		t.Fatalf("event %q not ended by a blank line (%q, %v)", line, blank, err)
	}
	return line + blank
}

// Each event reaches the client as it is yielded: the streamer yields the
// next one only once the client has read the previous one, which it could
// not if events waited in a buffer.
func TestGenerateStreamFlushes(t *testing.T) {
	read := make(chan struct{}, 4)
	tokens := []string{"one", "two", "three"}
	h := streamHandler(t, func(ctx context.Context, req *triton.InferRequest) iter.Seq2[*triton.InferResponse, error] {
		return func(yield func(*triton.InferResponse, error) bool) {
			for i, s := range tokens {
				if i > 0 {
					select {
					case <-read:
					case <-ctx.Done():
						return
					}
				}
				if !yield(token(t, s), nil) {
					return
				}
			}
		}
	})
	ts := httptest.NewServer(h)
	defer ts.Close()
	// A safety net only: a stream that is not flushed would hang here.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rq, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/v2/models/m/generate_stream", strings.NewReader(`{"INPUT0":"x"}`))
	resp, err := ts.Client().Do(rq)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != sseContentType {
		t.Fatalf("status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	br := bufio.NewReader(resp.Body)
	for _, s := range tokens {
		want := event(`{"OUTPUT0":"` + s + `","id":"r","model_name":"m","model_version":"1"}`)
		if got := readEvent(t, br); got != want {
			t.Fatalf("event %q, want %q", got, want)
		}
		read <- struct{}{}
	}
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Fatalf("after the last event: %q, %v", rest, err)
	}
}

// A client that disconnects mid-stream cancels its request: the streamer
// sees its context end, and its next yield is refused.
func TestGenerateStreamDisconnect(t *testing.T) {
	cancelled := make(chan error, 1)
	yieldAfter := make(chan bool, 1)
	h := streamHandler(t, func(ctx context.Context, req *triton.InferRequest) iter.Seq2[*triton.InferResponse, error] {
		return func(yield func(*triton.InferResponse, error) bool) {
			if !yield(token(t, "first"), nil) {
				return
			}
			<-ctx.Done()
			cancelled <- ctx.Err()
			yieldAfter <- yield(nil, &triton.Error{Code: triton.Cancelled, Err: ctx.Err()})
		}
	})
	ts := httptest.NewServer(h)
	defer ts.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rq, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/v2/models/m/generate_stream", strings.NewReader(`{"INPUT0":"x"}`))
	resp, err := ts.Client().Do(rq)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	readEvent(t, br)
	cancel() // the client goes away
	_ = resp.Body.Close()
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Errorf("the streamer's context ended with %v, want context.Canceled", err)
	}
	if <-yieldAfter {
		t.Error("a yield after the disconnect was accepted")
	}
}
