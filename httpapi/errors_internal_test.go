package httpapi

import (
	"net/http"
	"testing"

	"github.com/triton-go/triton"
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
