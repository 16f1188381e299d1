package client_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/client"
	"github.com/triton-go/triton/httpapi"
	"github.com/triton-go/triton/internal/pixels"
	"github.com/triton-go/triton/internal/testmodels"
)

// TestTimingAllocs checks that timing costs no allocation: a pixels
// request to the adapters in this process (client and server allocations
// counted together, as AllocsPerRun counts the whole process) allocates as
// much with a context from WithTiming as without one (HTTP 127, gRPC 173,
// Local 5 on Go 1.26, both ways; the HTTP figure was 137 before the body
// went as one buffer and the response header was read without
// encoding/json, gRPC's the same before Timing existed).
func TestTimingAllocs(t *testing.T) {
	srv := testmodels.NewServer(t, map[string]string{"pixels/config.pbtxt": repoModels["pixels"], "pixels/1/model.txt": ""},
		triton.WithBackend(pixels.Name, pixels.Backend))
	ts := httptest.NewServer(httpapi.NewHandler(srv))
	t.Cleanup(ts.Close)
	gaddr := serveGRPC(t, srv, nil)
	for _, c := range []struct {
		name string
		dial func() (client.Conn, error)
	}{
		{"http", func() (client.Conn, error) { return client.NewHTTP(ts.URL) }},
		{"grpc", func() (client.Conn, error) { return client.NewGRPC(gaddr) }},
		{"local", func() (client.Conn, error) { return client.Local(srv), nil }},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := c.dial()
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			req := pixelsRequest(t, "pixels", images(1))
			var tm client.Timing
			plain := context.Background()
			timed := client.WithTiming(plain, &tm)
			allocs := func(ctx context.Context) float64 {
				return testing.AllocsPerRun(500, func() {
					if _, err := conn.Infer(ctx, req); err != nil {
						t.Fatal(err)
					}
				})
			}
			// A collection in the middle of a run empties sync.Pools and
			// adds an allocation or two, the server's goroutines included:
			// the least of five runs counts, with one allocation of slack
			// for the server's share of that noise.
			var without, with float64
			for i := range 5 {
				a, b := allocs(plain), allocs(timed)
				if i == 0 || a < without {
					without = a
				}
				if i == 0 || b < with {
					with = b
				}
			}
			t.Logf("allocations a request (client and server): %v without timing, %v with (%+v)", without, with, tm)
			if with > without+1 {
				t.Errorf("%v allocations a request with timing, %v without", with, without)
			}
		})
	}
}
