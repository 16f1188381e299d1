package python_test

import (
	"testing"

	"github.com/triton-go/triton/tensor"
)

// TestAddSub serves Triton's add/sub example model unchanged.
func TestAddSub(t *testing.T) {
	srv := newRepo(t).copy("add_sub").Serve()
	a := []float32{1, 2, 3, 4}
	b := []float32{10, 20, 30, 40}
	resp, err := infer(t, srv, "add_sub", must(tensor.From("INPUT0", tensor.Shape{1, 4}, a)), must(tensor.From("INPUT1", tensor.Shape{1, 4}, b)))
	if err != nil {
		t.Fatal(err)
	}
	sum, diff := floats(t, resp, "OUTPUT0"), floats(t, resp, "OUTPUT1")
	for i := range a {
		if sum[i] != a[i]+b[i] || diff[i] != a[i]-b[i] {
			t.Fatalf("element %d: %v %v", i, sum[i], diff[i])
		}
	}
}
