package responsecache_test

import (
	"bytes"
	"cmp"
	"slices"
	"testing"

	"github.com/triton-go/triton/responsecache"
	"github.com/triton-go/triton/tensor"
)

// inputsFrom carves up to four inputs out of blob: name, data type, shape
// and data all come from it, so the fuzzer explores boundaries between
// fields and between inputs.
func inputsFrom(blob []byte) []tensor.Tensor {
	next := func(max int) []byte {
		if len(blob) == 0 {
			return nil
		}
		n := int(blob[0]) % (max + 1)
		blob = blob[1:]
		n = min(n, len(blob))
		b := blob[:n]
		blob = blob[n:]
		return b
	}
	var ins []tensor.Tensor
	for len(blob) > 0 && len(ins) < 4 {
		t := tensor.Tensor{Name: string(next(3))}
		if len(blob) > 0 {
			t.DataType, blob = tensor.DataType(blob[0]), blob[1:]
		}
		for _, d := range next(3) {
			t.Shape = append(t.Shape, int64(int8(d))*1e9) // negative and large dims too
		}
		t.Data = next(8)
		ins = append(ins, t)
	}
	return ins
}

// FuzzKey checks that the key is injective by decoding it: DecodeKey gives
// back the model, the version and the inputs sorted by name, so two calls
// with equal keys are the same call up to input order.
func FuzzKey(f *testing.F) {
	f.Add("m", int64(1), []byte{})
	f.Add("", int64(-1), []byte{1, 'a', 11, 1, 4, 4, 'a', 'b', 'c', 'd'})
	f.Add("model", int64(1<<62), []byte{2, 'b', 'a', 13, 0, 3, 0, 0, 0, 1, 'x', 0, 2, 1, 2, 0})
	f.Fuzz(func(t *testing.T, model string, version int64, blob []byte) {
		ins := inputsFrom(blob)
		key := responsecache.Key(model, version, ins)
		d, err := responsecache.DecodeKey(key)
		if err != nil {
			t.Fatal(err)
		}
		want := slices.Clone(ins)
		slices.SortStableFunc(want, func(a, b tensor.Tensor) int { return cmp.Compare(a.Name, b.Name) })
		if d.Model != model || d.Version != version || !equalTensors(d.Inputs, want) {
			t.Fatalf("decoded %q v%d %v, want %q v%d %v", d.Model, d.Version, d.Inputs, model, version, want)
		}
		// Reversing the inputs changes nothing when their names differ.
		rev := slices.Clone(ins)
		slices.Reverse(rev)
		distinct := len(slices.CompactFunc(slices.Clone(want), func(a, b tensor.Tensor) bool { return a.Name == b.Name })) == len(want)
		if distinct && !bytes.Equal(responsecache.Key(model, version, rev), key) {
			t.Error("input order changes the key")
		}
	})
}
