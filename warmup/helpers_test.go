package warmup_test

import (
	"bytes"
	"io/fs"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"google.golang.org/protobuf/encoding/prototext"

	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/tensor"
	"github.com/triton-go/triton/warmup"
)

// parse parses a config.pbtxt text.
func parse(t testing.TB, text string) *modelconfig.ModelConfig {
	t.Helper()
	cfg := &modelconfig.ModelConfig{}
	if err := prototext.Unmarshal([]byte(text), cfg); err != nil {
		t.Fatalf("parsing config: %v\n%s", err, text)
	}
	return cfg
}

// allTypes lists every valid data type.
var allTypes = []tensor.DataType{
	tensor.Bool, tensor.Uint8, tensor.Uint16, tensor.Uint32, tensor.Uint64,
	tensor.Int8, tensor.Int16, tensor.Int32, tensor.Int64,
	tensor.FP16, tensor.FP32, tensor.FP64, tensor.Bytes, tensor.BF16,
}

// oneInput returns a config with one input IN of type dt and dims, and
// one warm-up sample "s" of batch size bs giving IN with source (a text
// fragment such as "zero_data: true").
func oneInput(dt tensor.DataType, mbs int, dims string, bs int, source string) string {
	return strings.NewReplacer(
		"$MBS", strconv.Itoa(mbs), "$DT", dt.ConfigName(), "$DIMS", dims, "$BS", strconv.Itoa(bs), "$SRC", source,
	).Replace(`
name: "m"
backend: "fake"
max_batch_size: $MBS
input { name: "IN" data_type: $DT dims: $DIMS }
output { name: "OUT" data_type: TYPE_FP32 dims: [1] }
model_warmup {
  name: "s"
  batch_size: $BS
  inputs { key: "IN" value { data_type: $DT dims: $DIMS $SRC } }
}`)
}

// only returns the single input of the single sample of cfg.
func only(t testing.TB, cfg *modelconfig.ModelConfig, dir fs.FS) (warmup.Sample, tensor.Tensor) {
	t.Helper()
	ss, err := warmup.Samples(cfg, dir)
	if err != nil {
		t.Fatalf("Samples: %v", err)
	}
	if len(ss) != 1 || len(ss[0].Inputs) != 1 {
		t.Fatalf("got %d samples (%+v), want 1 with 1 input", len(ss), ss)
	}
	in := ss[0].Inputs[0]
	if err := in.Validate(); err != nil {
		t.Fatalf("input does not validate: %v", err)
	}
	return ss[0], in
}

// checkRows checks that t has shape [b]+dims and that its b rows are
// identical, and returns the first row's data.
func checkRows(t testing.TB, in tensor.Tensor, b int64, dims tensor.Shape) []byte {
	t.Helper()
	want := append(tensor.Shape{b}, dims...)
	if !in.Shape.Equal(want) {
		t.Fatalf("shape %v, want %v", in.Shape, want)
	}
	first, err := in.SliceRows(0, 1)
	if err != nil {
		t.Fatal(err)
	}
	for r := int64(1); r < b; r++ {
		row, err := in.SliceRows(r, r+1)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(row.Data, first.Data) {
			t.Fatalf("row %d differs from row 0:\n% x\n% x", r, row.Data, first.Data)
		}
	}
	return first.Data
}

// recordFS wraps an fs.FS and records every name opened.
type recordFS struct {
	fs.FS
	mu     sync.Mutex
	opened []string
}

func (r *recordFS) Open(name string) (fs.File, error) {
	r.mu.Lock()
	r.opened = append(r.opened, name)
	r.mu.Unlock()
	return r.FS.Open(name)
}

// trap is a model folder whose files outside warmup/ would satisfy the
// escaping names the tests try, so that only the path checks can reject
// them.
func trap() fstest.MapFS {
	row := make([]byte, 8) // two FP32 elements
	return fstest.MapFS{
		"x":             {Data: row},
		"etc/passwd":    {Data: row},
		"warmup/ok.bin": {Data: row},
	}
}
