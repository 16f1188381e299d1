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

// BenchmarkInfer is one pixels request (784 bytes in, 3136 out) from each
// client to the same in-process server: Local's cost is the server's
// alone; HTTP and gRPC add encoding, a loopback round trip and decoding.
func BenchmarkInfer(b *testing.B) {
	srv := testmodels.NewServer(b, map[string]string{"pixels/config.pbtxt": repoModels["pixels"], "pixels/1/model.txt": ""},
		triton.WithBackend(pixels.Name, pixels.Backend))
	ts := httptest.NewServer(httpapi.NewHandler(srv))
	b.Cleanup(ts.Close)
	gaddr := serveGRPC(b, srv, nil)
	for _, c := range []struct {
		name string
		dial func() (client.Conn, error)
	}{
		{"local", func() (client.Conn, error) { return client.Local(srv), nil }},
		{"http", func() (client.Conn, error) { return client.NewHTTP(ts.URL) }},
		{"grpc", func() (client.Conn, error) { return client.NewGRPC(gaddr) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			conn, err := c.dial()
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			req := pixelsRequest(b, "pixels", images(1))
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := conn.Infer(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
