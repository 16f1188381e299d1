package fuzztensor_test

import (
	"testing"

	"github.com/triton-go/triton/internal/fuzztensor"
	"github.com/triton-go/triton/tensor"
)

func TestMakeFits(t *testing.T) {
	x := fuzztensor.Make("X", tensor.FP32, []byte{2, 3}, []byte{1, 2, 3}, true)
	if !x.Shape.Equal(tensor.Shape{2, 3}) || len(x.Data) != 24 || x.Data[3] != 1 || x.Data[23] != 3 {
		t.Fatalf("FP32 [2 3]: shape %v, %d bytes %v", x.Shape, len(x.Data), x.Data)
	}
	if err := x.Validate(); err != nil {
		t.Fatal(err)
	}
	s := fuzztensor.Make("S", tensor.Bytes, []byte{3}, []byte("abcdefg"), true)
	strs, err := tensor.Strings(s)
	if err != nil || len(strs) != 3 || strs[0]+strs[1]+strs[2] != "abcdefg" {
		t.Fatalf("BYTES [3]: %q %v", strs, err)
	}
}

func TestMakeKeepsWhatDoesNotFit(t *testing.T) {
	for _, c := range []struct {
		shape []byte
		fit   bool
	}{
		{[]byte{2, 3}, false},    // not asked to
		{[]byte{255, 3}, true},   // a negative dimension
		{[]byte{127, 127}, true}, // beyond MaxFit
	} {
		x := fuzztensor.Make("X", tensor.FP32, c.shape, []byte{9}, c.fit)
		if len(x.Data) != 1 || x.Data[0] != 9 {
			t.Errorf("shape %v fit %v: data %v, want the fuzzer's", x.Shape, c.fit, x.Data)
		}
	}
	if x := fuzztensor.Make("X", tensor.FP32, []byte{1, 2, 3, 4, 5}, nil, false); len(x.Shape) != 4 || x.Shape[0] != 1 {
		t.Errorf("five shape bytes: %v", x.Shape)
	}
}
