package warmup_test

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/triton-go/triton/tensor"
	"github.com/triton-go/triton/warmup"
)

// FuzzFileData feeds arbitrary file contents to a BYTES input S, an FP32
// input F, or both (reading the same file), of dims [dims] in a batch of
// 1 to 4 rows. Samples must never panic, must accept the file exactly when
// it is one valid row for every input that reads it, must then return it
// byte for byte in every row of the batch, and must otherwise fail with an
// error naming the input (wrapping tensor.ErrInvalid for BYTES).
func FuzzFileData(f *testing.F) {
	f.Add([]byte{}, uint8(0), uint8(1), uint8(2))
	f.Add(make([]byte, 8), uint8(2), uint8(3), uint8(2))
	f.Add(tensor.AppendElement(nil, []byte("a")), uint8(1), uint8(1), uint8(0))
	f.Add(tensor.AppendElement(tensor.AppendElement(nil, []byte("ab\x00")), nil), uint8(2), uint8(2), uint8(0))
	f.Add([]byte{5, 0, 0, 0, 'a', 'b', 'c', 'd', 'e'}, uint8(1), uint8(2), uint8(0))
	f.Add([]byte{1, 0, 0, 0, 'x', 0, 0, 0}, uint8(2), uint8(2), uint8(1))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, uint8(1), uint8(4), uint8(2))
	f.Add([]byte{0, 0, 0}, uint8(1), uint8(1), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, dims, batch, which uint8) {
		d := strconv.Itoa(int(dims % 16))
		bs := int64(batch%4 + 1)
		useS, useF := which%3 != 1, which%3 != 0
		cfg := `name: "m" max_batch_size: 4
input { name: "S" data_type: TYPE_STRING dims: [-1] optional: true }
input { name: "F" data_type: TYPE_FP32 dims: [-1] optional: true }
model_warmup { name: "fuzz" batch_size: ` + strconv.FormatInt(bs, 10)
		if useS {
			cfg += ` inputs { key: "S" value { data_type: TYPE_STRING dims: [` + d + `] input_data_file: "in" } }`
		}
		if useF {
			cfg += ` inputs { key: "F" value { data_type: TYPE_FP32 dims: [` + d + `] input_data_file: "in" } }`
		}
		ss, err := warmup.Samples(parse(t, cfg+"}"), fstest.MapFS{"warmup/in": {Data: data}})

		n := int64(dims % 16)
		okS := !useS || tensor.ValidateBytes(data, n) == nil
		okF := !useF || int64(len(data)) == 4*n
		if err != nil {
			if okS && okF {
				t.Fatalf("valid file rejected: %v", err)
			}
			// Inputs are checked in name order: F, then S.
			if !okF {
				if !strings.Contains(err.Error(), `sample "fuzz": input "F": `) {
					t.Fatalf("error %q does not name input F", err)
				}
				return
			}
			if !strings.Contains(err.Error(), `sample "fuzz": input "S": `) || !errors.Is(err, tensor.ErrInvalid) {
				t.Fatalf("error %q does not name input S or does not wrap tensor.ErrInvalid", err)
			}
			return
		}
		if !okS || !okF {
			t.Fatalf("invalid file accepted (BYTES ok %v, FP32 ok %v)", okS, okF)
		}
		if got := len(ss[0].Inputs); got != btoi(useS)+btoi(useF) {
			t.Fatalf("%d inputs", got)
		}
		for _, in := range ss[0].Inputs {
			if err := in.Validate(); err != nil {
				t.Fatal(err)
			}
			if !in.Shape.Equal(tensor.Shape{bs, n}) {
				t.Fatalf("%s: shape %v, want [%d,%d]", in.Name, in.Shape, bs, n)
			}
			if want := bytes.Repeat(data, int(bs)); !bytes.Equal(in.Data, want) {
				t.Fatalf("%s: data % x, want % x", in.Name, in.Data, want)
			}
		}
	})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
