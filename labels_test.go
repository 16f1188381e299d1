package triton_test

import (
	"context"
	"slices"
	"testing"

	"github.com/triton-go/triton"
)

const labeledConfig = `backend: "gofunc"
max_batch_size: 4
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 3 ] } ]
output [
  { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 3 ] label_filename: "labels.txt" },
  { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 3 ] }
]
`

func TestLabels(t *testing.T) {
	ctx := context.Background()
	srv := newServer(t, map[string]string{
		"m/config.pbtxt": labeledConfig,
		"m/labels.txt":   "cat\r\ndog\n\nbird\n",
		"m/1/x":          "",
	}, triton.WithBackend("gofunc", mirror), triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit}), triton.WithStartupModels("m"))
	labels, err := srv.Labels("m", 0, "OUTPUT0")
	if err != nil {
		t.Fatal(err)
	}
	// Lines as std::getline reads them, less a Windows carriage return.
	if want := []string{"cat", "dog", "", "bird"}; !slices.Equal(labels, want) {
		t.Errorf("labels %q, want %q", labels, want)
	}
	labels[0] = "changed"
	if again, _ := srv.Labels("m", 1, "OUTPUT0"); again[0] != "cat" {
		t.Error("changing the returned labels changed the server's")
	}
	if labels, err := srv.Labels("m", 1, "OUTPUT1"); err != nil || labels != nil {
		t.Errorf("output without a label file: %q, %v", labels, err)
	}
	_, err = srv.Labels("m", 1, "OUTPUT9")
	wantError(t, err, triton.InvalidArgument, "'OUTPUT9'", "'m'")
	_, err = srv.Labels("nope", 0, "OUTPUT0")
	wantError(t, err, triton.InvalidArgument, "'nope'")

	// A reload reads the label file again.
	err = srv.Load(ctx, "m", &triton.LoadOptions{
		Config: `{"backend":"gofunc","max_batch_size":4,"input":[{"name":"INPUT0","data_type":"TYPE_INT32","dims":[3]}],` +
			`"output":[{"name":"OUTPUT0","data_type":"TYPE_INT32","dims":[3],"label_filename":"labels.txt"}]}`,
		Files: map[string][]byte{"1/x": nil, "labels.txt": []byte("zebra")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if labels, err := srv.Labels("m", 0, "OUTPUT0"); err != nil || !slices.Equal(labels, []string{"zebra"}) {
		t.Errorf("after reload: %q, %v", labels, err)
	}
}

func TestModelSummary(t *testing.T) {
	srv := newServer(t, map[string]string{
		"m/config.pbtxt": labeledConfig + `model_transaction_policy { decoupled: true }`,
		"m/labels.txt":   "",
		"m/1/x":          "",
		"m/3/x":          "",
		"m/5/x":          "",
	}, triton.WithBackend("gofunc", mirror))
	sum, err := srv.ModelSummary(context.Background(), "m", 0)
	if err != nil {
		t.Fatal(err)
	}
	if sum != (triton.ModelSummary{Version: 5, MaxBatchSize: 4, Decoupled: true}) {
		t.Errorf("summary %+v", sum)
	}
	_, err = srv.ModelSummary(context.Background(), "m", 3)
	wantError(t, err, triton.NotFound, "version 3 is not found")
	if n := testing.AllocsPerRun(100, func() { _, _ = srv.ModelSummary(context.Background(), "m", 0) }); n != 0 {
		t.Errorf("ModelSummary allocates %v times", n)
	}
}
