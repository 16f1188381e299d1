package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/batcher"
)

// TestHTTPStatus pins the one Code → HTTP status table (protocol spec
// §0.2, plus DeadlineExceeded → 504) for every code.
func TestHTTPStatus(t *testing.T) {
	want := map[triton.Code]int{
		triton.Unknown:          http.StatusBadRequest,
		triton.Internal:         http.StatusInternalServerError,
		triton.NotFound:         http.StatusNotFound,
		triton.InvalidArgument:  http.StatusBadRequest,
		triton.Unavailable:      http.StatusServiceUnavailable,
		triton.Unsupported:      http.StatusNotImplemented,
		triton.AlreadyExists:    http.StatusBadRequest,
		triton.Cancelled:        http.StatusBadRequest,
		triton.DeadlineExceeded: http.StatusGatewayTimeout,
	}
	for c := triton.Code(0); c <= triton.DeadlineExceeded; c++ {
		w, ok := want[c]
		if !ok {
			t.Fatalf("code %v has no expected status in this test: add it", c)
		}
		if got := httpStatus(c); got != w {
			t.Errorf("httpStatus(%v) = %d, want %d", c, got, w)
		}
	}
	if got := httpStatus(triton.DeadlineExceeded + 1); got != http.StatusInternalServerError {
		t.Errorf("httpStatus(unknown code) = %d, want 500", got)
	}
}

// TestRoutesMatchTriton checks the route patterns against paths whose
// Triton routing is known.
func TestRoutesMatchTriton(t *testing.T) {
	for _, tc := range []struct {
		path  string
		match []string // nil: no match
	}{
		{"/v2/models/m", []string{"m", "", ""}},
		{"/v2/models/m/versions/3/infer", []string{"m", "3", "infer"}},
		{"/v2/models/m/versions/x/infer", nil},
		{"/v2/models/m/trace/setting", []string{"m", "", "trace/setting"}},
		{"/v2/models/versions/versions/1", []string{"versions", "1", ""}},
		{"/v2/models/m/", nil},
		{"/v2/models//ready", nil},
		{"/v2/models/a/b/ready", nil},
		{"/v2/models/m/infer/", nil},
		{"/v2/models/m/versions/1/versions/2", nil},
	} {
		m := modelRoute.FindStringSubmatch(tc.path)
		if (m == nil) != (tc.match == nil) {
			t.Errorf("%s: match %v, want %v", tc.path, m, tc.match)
			continue
		}
		for i, w := range tc.match {
			if m[i+1] != w {
				t.Errorf("%s: group %d = %q, want %q", tc.path, i+1, m[i+1], w)
			}
		}
	}
}

// TestRetryAfter: a refusal of the deadline-aware schedule answers 503
// with Retry-After, whole seconds rounded up and at least 1; other errors
// have none.
func TestRetryAfter(t *testing.T) {
	h := &handler{log: zap.NewNop()}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&triton.Error{Code: triton.Unavailable, Model: "m", Err: &batcher.Refused{Finish: 2500 * time.Millisecond, Batch: 500 * time.Millisecond}}, "2"},
		{&triton.Error{Code: triton.Unavailable, Model: "m", Err: &batcher.Refused{Finish: 2600 * time.Millisecond, Batch: 500 * time.Millisecond}}, "3"},
		{&triton.Error{Code: triton.Unavailable, Model: "m", Err: &batcher.Refused{Finish: 3 * time.Millisecond, Batch: 3 * time.Millisecond}}, "1"},
		{&triton.Error{Code: triton.Unavailable, Model: "m", Err: batcher.ErrQueueFull}, ""},
	} {
		rec := httptest.NewRecorder()
		h.writeError(rec, tc.err)
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != tc.want {
			t.Errorf("%v: status %d, Retry-After %q; want 503, %q", tc.err, rec.Code, rec.Header().Get("Retry-After"), tc.want)
		}
	}
}
