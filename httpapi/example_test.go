package httpapi_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing/fstest"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/httpapi"
	"github.com/triton-go/triton/tensor"
)

// Example serves a model repository over Triton's HTTP protocol and sends
// it a JSON inference request, as any Triton client would.
func Example() {
	// A model that doubles an FP32 vector, written as a Go backend.
	double := backend.Func(func(ctx context.Context, b *backend.Batch) error {
		for _, r := range b.Requests {
			in, _ := r.Input("X")
			xs, err := tensor.View[float32](in)
			if err != nil {
				return err
			}
			ys := make([]float32, len(xs))
			for i, x := range xs {
				ys[i] = 2 * x
			}
			out, err := tensor.From("Y", in.Shape, ys)
			if err != nil {
				return err
			}
			r.SetOutput(out)
		}
		return nil
	})
	repo := fstest.MapFS{
		"double/config.pbtxt": {Data: []byte(`
name: "double"
backend: "double"
max_batch_size: 0
input [ { name: "X" data_type: TYPE_FP32 dims: [ -1 ] } ]
output [ { name: "Y" data_type: TYPE_FP32 dims: [ -1 ] } ]`)},
		"double/1/model": {},
	}
	srv, err := triton.New(triton.WithRepository(repo), triton.WithBackend("double", double))
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	// In a real program: http.ListenAndServe(":8000", httpapi.NewHandler(srv)).
	ts := httptest.NewServer(httpapi.NewHandler(srv))
	defer ts.Close()

	resp, err := http.Get(ts.URL + "/v2/health/ready")
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println("ready:", resp.StatusCode)

	resp, err = http.Post(ts.URL+"/v2/models/double/infer", "application/json",
		strings.NewReader(`{"id":"1","inputs":[{"name":"X","shape":[3],"datatype":"FP32","data":[1,2.5,-4]}]}`))
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, string(body))

	resp, err = http.Get(ts.URL + "/v2/models/nosuch")
	if err != nil {
		panic(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, string(body))
	http.DefaultClient.CloseIdleConnections()
	// Output:
	// ready: 200
	// 200 {"id":"1","model_name":"double","model_version":"1","outputs":[{"name":"Y","datatype":"FP32","shape":[3],"data":[2.0,5.0,-8.0]}]}
	// 400 {"error":"Request for unknown model: 'nosuch' is not found"}
}

// ExampleWithRestrictedAPI keeps model management and shared memory to
// callers that know a shared secret, as Triton's --http-restricted-api.
func ExampleWithRestrictedAPI() {
	repo := fstest.MapFS{"m/config.pbtxt": {Data: []byte(`name: "m" backend: "noop" input [ { name: "X" data_type: TYPE_FP32 dims: [1] } ] output [ { name: "Y" data_type: TYPE_FP32 dims: [1] } ]`)}, "m/1/model": {}}
	srv, err := triton.New(triton.WithRepository(repo), triton.WithBackend("noop", backend.Func(func(context.Context, *backend.Batch) error { return nil })))
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	h := httpapi.NewHandler(srv, httpapi.WithRestrictedAPI("model-repository,shared-memory", "Admin-Key", "s3cret"))

	r := httptest.NewRequest(http.MethodPost, "/v2/repository/index", nil)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	fmt.Println(w.Code, w.Body.String())

	r.Header.Set("Admin-Key", "s3cret")
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	fmt.Println(w.Code, w.Body.String())
	// Output:
	// 403 {"error":"This API is restricted, expecting header 'Admin-Key'"}
	// 200 [{"name":"m","version":"1","state":"READY"}]
}
