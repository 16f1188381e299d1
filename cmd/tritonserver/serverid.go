package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"google.golang.org/grpc"

	"github.com/triton-go/triton/grpcapi/inferencepb"
)

// --id names the server in its metadata, as tritonserver's does ("name"
// of GET /v2 and of gRPC ServerMetadata; "triton" by default). The
// adapters answer the library's name, so the server rewrites that one
// answer on its way out, after the adapters have checked restrictions.

// withServerID wraps an HTTP handler so that GET /v2 names the server id.
func withServerID(id string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v2" || r.Method != http.MethodGet {
			h.ServeHTTP(w, r)
			return
		}
		rec := &recorder{header: http.Header{}, code: http.StatusOK}
		h.ServeHTTP(rec, r)
		body := rec.body.Bytes()
		var md map[string]json.RawMessage
		if rec.code == http.StatusOK && rec.header.Get("Content-Encoding") == "" && json.Unmarshal(body, &md) == nil {
			md["name"], _ = json.Marshal(id)
			body, _ = json.Marshal(md)
		}
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(rec.code)
		_, _ = w.Write(body)
	})
}

// recorder keeps a small response (server metadata) to rewrite it.
type recorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) WriteHeader(code int)        { r.code = code }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }

// serverIDInterceptor makes gRPC ServerMetadata name the server id.
func serverIDInterceptor(id string) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		if md, ok := resp.(*inferencepb.ServerMetadataResponse); ok && err == nil {
			md.Name = id
		}
		return resp, err
	}
}
