package client_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"net/http/httptest"
	"strings"
	"testing/fstest"

	"google.golang.org/grpc"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/client"
	"github.com/triton-go/triton/grpcapi"
	"github.com/triton-go/triton/httpapi"
	"github.com/triton-go/triton/tensor"
)

// upper is a Go backend: TEXT (BYTES) comes back upper-cased as UPPER.
var upper = backend.Func(func(ctx context.Context, b *backend.Batch) error {
	for _, r := range b.Requests {
		in, _ := r.Input("TEXT")
		words, err := tensor.Strings(in)
		if err != nil {
			return err
		}
		for i, w := range words {
			words[i] = strings.ToUpper(w)
		}
		out, err := tensor.FromStrings("UPPER", in.Shape, words)
		if err != nil {
			return err
		}
		r.SetOutput(out)
	}
	return nil
})

// words is a decoupled Go backend: one response per word of TEXT.
var words = backend.Func(func(ctx context.Context, b *backend.Batch) error {
	for _, r := range b.Requests {
		in, _ := r.Input("TEXT")
		text, err := tensor.Strings(in)
		if err != nil {
			return err
		}
		for _, w := range strings.Fields(text[0]) {
			out, _ := tensor.FromStrings("WORD", tensor.Shape{1}, []string{w})
			if err := r.Sender().Send(ctx, backend.Response{Outputs: []tensor.Tensor{out}}); err != nil {
				return err
			}
		}
		if err := r.Sender().Send(ctx, backend.Response{Final: true}); err != nil {
			return err
		}
	}
	return nil
})

// exampleServer serves the models "upper" and "words" in-process.
func exampleServer() *triton.Server {
	srv, err := triton.New(
		triton.WithRepository(fstest.MapFS{
			"upper/config.pbtxt": {Data: []byte(`backend: "upper"
input [ { name: "TEXT" data_type: TYPE_STRING dims: [ -1 ] } ]
output [ { name: "UPPER" data_type: TYPE_STRING dims: [ -1 ] } ]`)},
			"upper/1/model.txt": {},
			"words/config.pbtxt": {Data: []byte(`backend: "words"
model_transaction_policy { decoupled: true }
input [ { name: "TEXT" data_type: TYPE_STRING dims: [ 1 ] } ]
output [ { name: "WORD" data_type: TYPE_STRING dims: [ 1 ] } ]`)},
			"words/1/model.txt": {},
		}),
		triton.WithBackend("upper", upper),
		triton.WithBackend("words", words),
	)
	if err != nil {
		log.Fatal(err)
	}
	return srv
}

// shout runs the model "upper" through any Inferer: the server itself, a
// Model handle, or a client, in-process or remote.
func shout(ctx context.Context, inf client.Inferer, s string) (string, error) {
	in, err := tensor.FromStrings("TEXT", tensor.Shape{1}, []string{s})
	if err != nil {
		return "", err
	}
	resp, err := inf.Infer(ctx, &triton.InferRequest{Model: "upper", Inputs: []tensor.Tensor{in}})
	if err != nil {
		return "", err
	}
	out, _ := resp.Output("UPPER")
	words, err := tensor.Strings(out)
	if err != nil {
		return "", err
	}
	return words[0], nil
}

// Code written against Inferer runs in-process or remote unchanged.
func Example() {
	ctx := context.Background()
	srv := exampleServer()
	defer srv.Close()

	// The server's HTTP protocol, as tritonserver serves it.
	ts := httptest.NewServer(httpapi.NewHandler(srv))
	defer ts.Close()
	remote, err := client.NewHTTP(ts.URL) // or "host:8000"
	if err != nil {
		log.Fatal(err)
	}
	defer remote.Close()

	for _, inf := range []client.Inferer{srv, srv.Model("upper"), client.Local(srv), remote} {
		s, err := shout(ctx, inf, "hello")
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%T: %s\n", inf, s)
	}
	// Output:
	// *triton.Server: HELLO
	// *triton.Model: HELLO
	// *client.local: HELLO
	// *client.HTTP: HELLO
}

// A decoupled model's responses stream over gRPC, each as the model sends
// it.
func ExampleGRPC_InferStream() {
	srv := exampleServer()
	defer srv.Close()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	g := grpc.NewServer(grpcapi.ServerOptions()...)
	grpcapi.New(srv).Register(g)
	go g.Serve(lis)
	defer g.Stop()

	conn, err := client.NewGRPC(lis.Addr().String()) // or "host:8001"
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	in, _ := tensor.FromStrings("TEXT", tensor.Shape{1}, []string{"one two three"})
	req := &triton.InferRequest{Model: "words", Inputs: []tensor.Tensor{in}}
	for resp, err := range conn.InferStream(context.Background(), req) {
		if err != nil {
			log.Fatal(err)
		}
		out, _ := resp.Output("WORD")
		w, _ := tensor.Strings(out)
		fmt.Println(w[0])
	}
	// Output:
	// one
	// two
	// three
}

// Errors carry the server's code, whatever the transport.
func ExampleNewHTTP_errors() {
	srv := exampleServer()
	defer srv.Close()
	ts := httptest.NewServer(httpapi.NewHandler(srv))
	defer ts.Close()
	conn, err := client.NewHTTP(ts.URL, client.WithCompression(client.Gzip, client.Gzip))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()

	_, err = conn.Infer(context.Background(), &triton.InferRequest{Model: "nope", ID: "r1"})
	fmt.Println(triton.CodeOf(err))
	fmt.Println(err)
	// Output:
	// InvalidArgument
	// triton: model "nope": request "r1": Request for unknown model: 'nope' is not found
}

// Models are loaded and unloaded through the Repository extension, which
// every Conn of this package implements.
func ExampleRepository() {
	ctx := context.Background()
	srv, err := triton.New(
		triton.WithRepository(fstest.MapFS{
			"upper/config.pbtxt": {Data: []byte(`backend: "upper"
input [ { name: "TEXT" data_type: TYPE_STRING dims: [ -1 ] } ]
output [ { name: "UPPER" data_type: TYPE_STRING dims: [ -1 ] } ]`)},
			"upper/1/model.txt": {},
		}),
		triton.WithBackend("upper", upper),
		triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit}),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	var conn client.Conn = client.Local(srv)
	defer conn.Close()

	repo := conn.(client.Repository)
	if err := repo.Load(ctx, "upper", nil); err != nil {
		log.Fatal(err)
	}
	idx, err := repo.Index(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range idx {
		fmt.Println(m.Name, m.Version, m.State)
	}
	// Output:
	// upper 1 READY
}
