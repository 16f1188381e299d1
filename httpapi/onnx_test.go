//go:build cgo

package httpapi_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/triton-go/triton"
	_ "github.com/triton-go/triton/backend/onnxruntime"
	"github.com/triton-go/triton/httpapi"
	"github.com/triton-go/triton/internal/testenv"
)

// TestONNXAddSub serves backend/onnxruntime's add_sub.onnx (OUTPUT0 =
// INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1, FP32 [batch, 16]) over HTTP
// with the ONNX Runtime backend.
func TestONNXAddSub(t *testing.T) {
	model := filepath.Join("..", "backend", "onnxruntime", "testdata", "models", "add_sub.onnx")
	testenv.Need(t, model, "the ONNX test models are committed under backend/onnxruntime/testdata")
	testenv.NeedLibrary(t)
	onnx, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, data []byte) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("add_sub/config.pbtxt", []byte(`
name: "add_sub"
backend: "onnxruntime"
max_batch_size: 8
input [
  { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] },
  { name: "INPUT1" data_type: TYPE_FP32 dims: [ 16 ] }
]
output [
  { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] },
  { name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 16 ] }
]
`))
	write("add_sub/1/model.onnx", onnx)
	srv, err := triton.NewFromDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	ts, client := newHTTPServer(t, httpapi.NewHandler(srv))

	wantMeta := `{"name":"add_sub","versions":["1"],"platform":"onnxruntime_onnx","inputs":[{"name":"INPUT0","datatype":"FP32","shape":[-1,16]},{"name":"INPUT1","datatype":"FP32","shape":[-1,16]}],"outputs":[{"name":"OUTPUT0","datatype":"FP32","shape":[-1,16]},{"name":"OUTPUT1","datatype":"FP32","shape":[-1,16]}]}`
	resp, err := client.Get(ts.URL + "/v2/models/add_sub")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || b.String() != wantMeta {
		t.Errorf("metadata %d %s", resp.StatusCode, b.String())
	}

	// JSON in, JSON out; OUTPUT1 classified.
	x := make([]string, 16)
	y := make([]string, 16)
	for i := range x {
		x[i] = fmt.Sprint(float32(i) + 0.5)
		y[i] = "1"
	}
	body := `{"id":"onnx","inputs":[` +
		`{"name":"INPUT0","shape":[1,16],"datatype":"FP32","data":[` + strings.Join(x, ",") + `]},` +
		`{"name":"INPUT1","shape":[1,16],"datatype":"FP32","data":[` + strings.Join(y, ",") + `]}],` +
		`"outputs":[{"name":"OUTPUT0"},{"name":"OUTPUT1","parameters":{"classification":2}}]}`
	resp, err = client.Post(ts.URL+inferPath("add_sub"), "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	b.ReadFrom(resp.Body)
	resp.Body.Close()
	want := `{"id":"onnx","model_name":"add_sub","model_version":"1","outputs":[` +
		`{"name":"OUTPUT0","datatype":"FP32","shape":[1,16],"data":[1.5,2.5,3.5,4.5,5.5,6.5,7.5,8.5,9.5,10.5,11.5,12.5,13.5,14.5,15.5,16.5]},` +
		`{"name":"OUTPUT1","datatype":"BYTES","shape":[1,2],"data":["14.500000:15","13.500000:14"]}]}`
	if resp.StatusCode != 200 || b.String() != want {
		t.Errorf("JSON infer: %d\n got %s\nwant %s", resp.StatusCode, b.String(), want)
	}

	// Binary in, binary out, batch of 2.
	in0, in1 := make([]float32, 32), make([]float32, 32)
	for i := range in0 {
		in0[i], in1[i] = float32(i), 2
	}
	bin, hl := binaryBody(`{"inputs":[`+
		`{"name":"INPUT0","shape":[2,16],"datatype":"FP32","parameters":{"binary_data_size":128}},`+
		`{"name":"INPUT1","shape":[2,16],"datatype":"FP32","parameters":{"binary_data_size":128}}],`+
		`"parameters":{"binary_data_output":true}}`, le(in0...), le(in1...))
	r := req{path: inferPath("add_sub"), body: bin, header: map[string]string{"Inference-Header-Content-Length": hl}}
	rec := serve(httpapi.NewHandler(srv), r)
	wantStatus(t, rec, 200)
	_, rest := splitBinary(t, rec)
	sum, diff := make([]float32, 32), make([]float32, 32)
	for i := range sum {
		sum[i], diff[i] = in0[i]+2, in0[i]-2
	}
	if !bytes.Equal(rest, append(le(sum...), le(diff...)...)) {
		t.Errorf("binary outputs differ")
	}
}
