package client_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/client"
	"github.com/triton-go/triton/grpcapi"
	"github.com/triton-go/triton/httpapi"
	"github.com/triton-go/triton/internal/reverse"
	"github.com/triton-go/triton/internal/testmodels"
	"github.com/triton-go/triton/tensor"
)

// tinyServer is an in-process server with one model, text_reverse.
func tinyServer(t *testing.T) *triton.Server {
	return testmodels.NewServer(t, map[string]string{
		"text_reverse/config.pbtxt": reverseConfig("text_reverse"),
		"text_reverse/1/model.txt":  "",
	}, triton.WithBackend(reverse.Name, reverse.Backend))
}

func reverseOnce(t *testing.T, c client.Conn) error {
	t.Helper()
	resp, err := c.Infer(context.Background(), &triton.InferRequest{Model: "text_reverse", Inputs: []tensor.Tensor{texts(t, "abc")}})
	if err == nil {
		wantStrings(t, resp, "REVERSED", "cba")
	}
	return err
}

// serveGRPC serves srv with grpcapi on a loopback port until the test
// ends, with opts for the service and the server.
func serveGRPC(t testing.TB, srv *triton.Server, opts []grpcapi.Option, sopts ...grpc.ServerOption) string {
	t.Helper()
	g := grpc.NewServer(append(grpcapi.ServerOptions(), sopts...)...)
	grpcapi.New(srv, opts...).Register(g)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = g.Serve(lis)
	}()
	t.Cleanup(func() {
		g.Stop()
		<-done
	})
	return lis.Addr().String()
}

func TestTLS(t *testing.T) {
	srv := tinyServer(t)
	ts := httptest.NewUnstartedServer(httpapi.NewHandler(srv))
	ts.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake refused below
	ts.StartTLS()
	t.Cleanup(ts.Close)
	pool := x509.NewCertPool()
	pool.AddCert(ts.Certificate())
	cfg := &tls.Config{RootCAs: pool}

	for _, addr := range []string{ts.URL, strings.TrimPrefix(ts.URL, "https://")} {
		h, err := client.NewHTTP(addr, client.WithTLS(cfg))
		if err != nil {
			t.Fatal(err)
		}
		if err := reverseOnce(t, h); err != nil {
			t.Errorf("HTTPS %s: %v", addr, err)
		}
		_ = h.Close()
	}
	// Without the CA the handshake fails: Unavailable.
	h, err := client.NewHTTP(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, reverseOnce(t, h), triton.Unavailable, "certificate")
	_ = h.Close()

	addr := serveGRPC(t, srv, nil, grpc.Creds(credentials.NewServerTLSFromCert(&ts.TLS.Certificates[0])))
	g, err := client.NewGRPC(addr, client.WithTLS(cfg))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := reverseOnce(t, g); err != nil {
		t.Errorf("gRPC over TLS: %v", err)
	}
}

// WithHeader carries the header of a restricted API; WithKeepalive and a
// pool without idle connections still serve.
func TestHeaderKeepalivePool(t *testing.T) {
	srv := tinyServer(t)
	ts := httptest.NewServer(httpapi.NewHandler(srv, httpapi.WithRestrictedAPI("inference", "X-Infer-Key", "secret")))
	t.Cleanup(ts.Close)
	gaddr := serveGRPC(t, srv, []grpcapi.Option{grpcapi.WithRestrictedProtocol("inference", "infer-key", "secret")})
	ka := client.WithKeepalive(keepalive.ClientParameters{Time: 5 * time.Minute, Timeout: 20 * time.Second, PermitWithoutStream: true})
	for _, c := range []struct {
		name string
		dial func(opts ...client.Option) (client.Conn, error)
		hdr  client.Option
	}{
		{"http", func(o ...client.Option) (client.Conn, error) { return client.NewHTTP(ts.URL, o...) }, client.WithHeader("X-Infer-Key", "secret")},
		{"grpc", func(o ...client.Option) (client.Conn, error) { return client.NewGRPC(gaddr, o...) }, client.WithHeader("triton-grpc-protocol-infer-key", "secret")},
	} {
		t.Run(c.name, func(t *testing.T) {
			bare, err := c.dial()
			if err != nil {
				t.Fatal(err)
			}
			defer bare.Close()
			wantError(t, reverseOnce(t, bare), triton.Unavailable, "restricted")
			conn, err := c.dial(c.hdr, ka, client.WithMaxIdleConnsPerHost(0))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			for range 3 {
				if err := reverseOnce(t, conn); err != nil {
					t.Fatal(err)
				}
			}
			if live, err := conn.ServerLive(context.Background()); err != nil || !live {
				t.Errorf("ServerLive = %v, %v (health is not restricted)", live, err)
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	for _, c := range []struct {
		addr string
		opts []client.Option
		want string
	}{
		{"localhost", nil, "host:port"},
		{"ftp://h:1", nil, "scheme"},
		{"http://", nil, "no host"},
		{"http://h:1/?q=1", nil, "only scheme"},
		{"http://h:1", []client.Option{client.WithTLS(nil)}, "https"},
		{"h:1", []client.Option{client.WithCompression("br", "")}, "unknown compression"},
		{"h:1", []client.Option{client.WithMaxIdleConnsPerHost(-1)}, "negative"},
		{"h:1", []client.Option{client.WithHeader("bad name", "v")}, "header name"},
	} {
		_, err := client.NewHTTP(c.addr, c.opts...)
		wantError(t, err, triton.InvalidArgument, c.want)
	}
	for _, addr := range []string{"h:1", "http://h:1/prefix/", "https://h:1"} {
		h, err := client.NewHTTP(addr)
		if err != nil {
			t.Errorf("NewHTTP(%q): %v", addr, err)
			continue
		}
		_ = h.Close()
	}
	_, err := client.NewGRPC("h:1", client.WithCompression(client.Deflate, ""))
	wantError(t, err, triton.InvalidArgument, "gzip only")
}
