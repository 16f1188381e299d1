package lightgbm_test

import (
	"fmt"
	"log"
	"math"

	"github.com/triton-go/triton/backend/fil"
	"github.com/triton-go/triton/backend/fil/lightgbm"
)

// A Forest is what the FIL backend serves.
var _ fil.Forest = (*lightgbm.Forest)(nil)

func ExampleLoad() {
	f, err := lightgbm.Load("testdata/binary/binary/model.txt")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	fmt.Println(f.Objective(), f.Features(), "features")

	// Two rows, all ones and all missing (NaN). LightGBM 4.1 predicts
	// 0.48378672836206355 and 0.60882784243000909 for them.
	rows := make([]float32, 2*f.Features())
	for i := range f.Features() {
		rows[i] = 1
		rows[f.Features()+i] = float32(math.NaN())
	}
	out := make([]float32, 2*f.Outputs())
	if err := f.Predict(rows, 2, out); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("P(class 1): %.4f %.4f\n", out[0], out[1])
	// Output:
	// binary sigmoid:0.7 28 features
	// P(class 1): 0.4838 0.6088
}
