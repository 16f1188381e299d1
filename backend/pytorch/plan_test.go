package pytorch

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/prototext"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/tensor"
)

func parse(t *testing.T, text string) *modelconfig.ModelConfig {
	t.Helper()
	cfg := &modelconfig.ModelConfig{}
	if err := prototext.Unmarshal([]byte(text), cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func tensors(names ...string) []argument {
	args := make([]argument, len(names))
	for i, n := range names {
		args[i] = argument{name: n, typ: "Tensor"}
	}
	return args
}

const twoOutputs = `output [ { name: "OUT__0" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "OUT__1" data_type: TYPE_FP32 dims: [ 4 ] } ]`

func TestIndexOf(t *testing.T) {
	for _, c := range []struct {
		name  string
		index int
		ok    bool
	}{
		{"INPUT__0", 0, true}, {"x__12", 12, true}, {"x__", 0, true}, {"a__b__1", 0, false},
		{"INPUT0", 0, false}, {"x_1", 0, false}, {"x__1a", 0, false}, {"x__99999999999999999999", -1, true},
	} {
		index, ok := indexOf(c.name)
		if index != c.index || ok != c.ok {
			t.Errorf("indexOf(%q) = %d, %v; want %d, %v", c.name, index, ok, c.index, c.ok)
		}
	}
}

// TestPlanConventions checks the three naming conventions: the argument
// each input feeds, the output index each output reads, and Triton's
// fallback warnings.
func TestPlanConventions(t *testing.T) {
	for _, c := range []struct {
		name     string
		config   string
		args     []argument
		feeds    map[string]int
		fetches  map[string]int
		warnings []string
	}{{
		name:    "forward argument names",
		config:  `input [ { name: "b" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "a" data_type: TYPE_FP32 dims: [ 4 ] } ]` + twoOutputs,
		args:    tensors("a", "b"),
		feeds:   map[string]int{"a": 0, "b": 1},
		fetches: map[string]int{"OUT__0": 0, "OUT__1": 1},
	}, {
		name: "named index",
		config: `input [ { name: "X__1" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "Y__0" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "S__1" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "D__0" data_type: TYPE_FP32 dims: [ 4 ] } ]`,
		args:    tensors("a", "b"),
		feeds:   map[string]int{"X__1": 1, "Y__0": 0},
		fetches: map[string]int{"S__1": 1, "D__0": 0},
	}, {
		name: "strict ordering",
		config: `name: "m" input [ { name: "X__1" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "second" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "sum" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "D__x" data_type: TYPE_FP32 dims: [ 4 ] } ]`,
		args:    tensors("a", "b"),
		feeds:   map[string]int{"X__1": 0, "second": 1},
		fetches: map[string]int{"sum": 0, "D__x": 1},
		// Silent, as Triton: the first names off the convention have no "__".
	}, {
		name: "strict ordering, warned",
		config: `name: "m" input [ { name: "X__1" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "Y__b" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "D__x" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "sum" data_type: TYPE_FP32 dims: [ 4 ] } ]`,
		args:    tensors("a", "b"),
		feeds:   map[string]int{"X__1": 0, "Y__b": 1},
		fetches: map[string]int{"D__x": 0, "sum": 1},
		warnings: []string{
			"input 'Y__b' or previous input(s) are neither an input argument to the model 'm' nor do they follow the <name>__<index> naming convention. Falling back to enforcing strict ordering from model configuration.",
			"output 'D__x' or previous output(s) of the model 'm' do not follow the <name>__<index> naming convention. Falling back to enforcing strict ordering from model configuration.",
		},
	}, {
		name:    "dict input",
		config:  `input [ { name: "b" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "a" data_type: TYPE_FP32 dims: [ 4 ] } ] output [ { name: "OUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ]`,
		args:    []argument{{"d", "Dict(str, Tensor)", ""}},
		feeds:   map[string]int{"b": 0, "a": 1},
		fetches: map[string]int{"OUT__0": 0},
	}, {
		name: "sequence controls and state",
		config: `max_batch_size: 4
input [ { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ]
sequence_batching {
  control_input [ { name: "START__3" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] },
                  { name: "CORRID__2" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_INT64 } ] } ]
  state [ { input_name: "STATE__1" output_name: "STATE_OUT__1" data_type: TYPE_FP32 dims: [ 4 ] } ]
}`,
		args:    tensors("x", "state", "corrid", "start"),
		feeds:   map[string]int{"INPUT__0": 0, "STATE__1": 1, "CORRID__2": 2, "START__3": 3},
		fetches: map[string]int{"OUTPUT__0": 0, "STATE_OUT__1": 1},
	}} {
		t.Run(c.name, func(t *testing.T) {
			p, err := makePlan("m", parse(t, c.config), c.args)
			if err != nil {
				t.Fatal(err)
			}
			feeds := map[string]int{}
			for _, f := range p.feeds {
				feeds[f.name] = f.arg
			}
			if p.dict {
				for i, f := range p.feeds {
					feeds[f.name] = i
				}
			}
			if !mapsEqual(feeds, c.feeds) {
				t.Errorf("feeds %v, want %v", feeds, c.feeds)
			}
			fetches := map[string]int{}
			for _, f := range p.fetches {
				fetches[f.name] = f.index
			}
			if !mapsEqual(fetches, c.fetches) {
				t.Errorf("fetches %v, want %v", fetches, c.fetches)
			}
			if !slices.Equal(p.warnings, c.warnings) {
				t.Errorf("warnings\n%q\nwant\n%q", p.warnings, c.warnings)
			}
		})
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestPlanErrors checks each load-time refusal: Triton's exact text and
// code, and this backend's own checks.
func TestPlanErrors(t *testing.T) {
	one := `input [ { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ] output [ { name: "OUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ]`
	for _, c := range []struct {
		name    string
		config  string
		args    []argument
		want    string
		invalid bool // INVALID_ARG (else internal)
	}{
		{"argument count", `input [ { name: "a" data_type: TYPE_FP32 dims: [ 4 ] } ] output [ { name: "OUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ]`,
			tensors("a", "b"), "unable to load model 'm', configuration expects 1 inputs, model provides 2", true},
		{"two dicts", one, []argument{{"x", "Tensor", ""}, {"d", "Dict(str, Tensor)", ""}},
			"Multiple inputs of kind DictType were detected. Only a single input of type Dict(str, Tensor) is supported.", false},
		{"optional argument", one, []argument{{"x", "Tensor", ""}, {"y", "Optional[Tensor]", "Tensor?"}},
			"An input of type 'Tensor?' was detected in the model. Only a single input of type Dict(str, Tensor) or input(s) of type Tensor are supported.", false},
		{"int argument", one, []argument{{"n", "int", "int"}},
			"An input of type 'int' was detected in the model. Only a single input of type Dict(str, Tensor) or input(s) of type Tensor are supported.", false},
		{"no inputs", `output [ { name: "OUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ]`, nil,
			"model configuration must contain at least one input, none were specified.", false},
		{"no outputs", `input [ { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ]`, tensors("x"),
			"model configuration must contain at least one output, none were specified.", false},
		{"uint16 input", `input [ { name: "INPUT__0" data_type: TYPE_UINT16 dims: [ 4 ] } ] output [ { name: "OUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ]`, tensors("x"),
			"unsupported datatype TYPE_UINT16 for input 'INPUT__0' for model 'm'", false},
		{"uint64 output", `input [ { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ] output [ { name: "OUT__0" data_type: TYPE_UINT64 dims: [ 4 ] } ]`, tensors("x"),
			"unsupported datatype TYPE_UINT64 for output 'OUT__0' for model 'm'", false},
		{"uint32 state", `input [ { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ] output [ { name: "OUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ]
sequence_batching { state [ { input_name: "S__1" output_name: "S_OUT__1" data_type: TYPE_UINT32 dims: [ 1 ] } ] }`, tensors("x", "s"),
			"unsupported datatype TYPE_UINT32 for input state 'S__1' for model 'm'", false},
		{"2-D string input", `max_batch_size: 2 input [ { name: "INPUT__0" data_type: TYPE_STRING dims: [ 1 ] } ] output [ { name: "OUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ]`,
			[]argument{{"x", "List[str]", ""}}, "Triton only supports 1 dimensional List of String as input for 'INPUT__0' for model 'm'", false},
		{"2-D string output", `input [ { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ] output [ { name: "OUT__0" data_type: TYPE_STRING dims: [ 2, 2 ] } ]`,
			tensors("x"), "Triton only supports 1 dimensional List of String as output for 'OUT__0' for model 'm'", false},
		{"control name", `input [ { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ] output [ { name: "OUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ]
sequence_batching { control_input [ { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] } ] }`,
			tensors("x", "s"), "input 'START' does not follow <name>__<index> naming convention.", false},
		{"corrid type", `input [ { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ] output [ { name: "OUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ]
sequence_batching { control_input [ { name: "CORRID__1" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } ] } ] }`,
			tensors("x", "c"), "input 'CORRID__1' type 'TYPE_UINT64' is not supported by PyTorch.", false},
		{"state without named index", `name: "m" input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ] output [ { name: "OUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ]
sequence_batching { state [ { input_name: "S__1" output_name: "S_OUT__1" data_type: TYPE_FP32 dims: [ 4 ] } ] }`, tensors("x", "s"),
			"PyTorch model 'm' is using sequence batching with state but not all inputs and outputs follow the <name>__<index> naming convention. ", true},
		{"state name", `input [ { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ] output [ { name: "OUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ]
sequence_batching { state [ { input_name: "STATE" output_name: "S_OUT__1" data_type: TYPE_FP32 dims: [ 4 ] } ] }`, tensors("x", "s"),
			"PyTorch model 'm' is using sequence batching with state but state 'STATE' does not follow the <name>__<index> naming convention. ", true},
		{"state output name", `input [ { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ] output [ { name: "OUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ]
sequence_batching { state [ { input_name: "S__1" output_name: "S_OUT" data_type: TYPE_FP32 dims: [ 4 ] } ] }`, tensors("x", "s"),
			"PyTorch model 'm' is using sequence batching with state but state 'S_OUT' does not follow the <name>__<index> naming convention. ", true},
		// This backend's checks, where Triton would crash or fail each request.
		{"index beyond forward", `input [ { name: "INPUT__0" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "INPUT__5" data_type: TYPE_FP32 dims: [ 4 ] } ] output [ { name: "OUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ]`,
			tensors("a", "b"), "input 'INPUT__5' of model 'm' refers to forward argument 5 by its <name>__<index> name, but forward takes 2 arguments", true},
		{"one argument twice", `input [ { name: "A__0" data_type: TYPE_FP32 dims: [ 4 ] }, { name: "B__0" data_type: TYPE_FP32 dims: [ 4 ] } ] output [ { name: "OUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ]`,
			tensors("a", "b"), "inputs 'A__0' and 'B__0' of model 'm' both map to forward argument 0 ('a')", true},
		{"string for a tensor", `input [ { name: "INPUT__0" data_type: TYPE_STRING dims: [ -1 ] } ] output [ { name: "OUT__0" data_type: TYPE_FP32 dims: [ 4 ] } ]`,
			tensors("x"), "input 'INPUT__0' of model 'm' is TYPE_STRING, passed as List[str], but forward's argument 0 ('x') is Tensor", true},
		{"tensor for a list", one, []argument{{"x", "List[str]", ""}},
			"input 'INPUT__0' of model 'm' is TYPE_FP32, passed as a Tensor, but forward's argument 0 ('x') is List[str]", true},
		{"dict of ints", one, []argument{{"d", "Dict(str, int)", ""}},
			"model 'm': forward's argument 'd' is Dict(str, int); a Dict input must be Dict(str, Tensor)", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := makePlan("m", parse(t, c.config), c.args)
			if err == nil {
				t.Fatalf("no error, want %q", c.want)
			}
			if err.Error() != c.want {
				t.Errorf("error\n%q\nwant\n%q", err, c.want)
			}
			if got := errors.Is(err, backend.ErrInvalidInput); got != c.invalid {
				t.Errorf("errors.Is(err, ErrInvalidInput) = %v, want %v", got, c.invalid)
			}
		})
	}
}

// TestPlanBatchInputs: batch inputs are forward arguments after the
// config's inputs, mapped under the inputs' naming convention (Triton's
// AddInputToMap), and counted in the arguments forward must take.
func TestPlanBatchInputs(t *testing.T) {
	const out = ` output [ { name: "OUT__0" data_type: TYPE_FP32 dims: [ -1 ] } ] max_batch_size: 4`
	bi := func(targets string) string {
		return ` batch_input [ { kind: BATCH_ACCUMULATED_ELEMENT_COUNT target_name: [ ` + targets + ` ] data_type: TYPE_INT32 source_input: "%s" } ]`
	}
	for _, c := range []struct {
		name   string
		input  string // the config input's name
		bi     string
		args   []argument
		feeds  map[string]int
		errSub string
	}{
		{name: "named index", input: "X__0", bi: bi(`"N__2", "M__1"`), args: tensors("x", "m", "n"), feeds: map[string]int{"X__0": 0, "N__2": 2, "M__1": 1}},
		{name: "forward arguments", input: "x", bi: bi(`"offsets"`), args: tensors("offsets", "x"), feeds: map[string]int{"x": 1, "offsets": 0}},
		{name: "strict ordering", input: "INPUT", bi: bi(`"A", "B"`), args: tensors("p", "q", "r"), feeds: map[string]int{"INPUT": 0, "A": 1, "B": 2}},
		{name: "dict keys", input: "X__0", bi: bi(`"offsets"`), args: []argument{{"d", "Dict(str, Tensor)", ""}}, feeds: map[string]int{"X__0": 0, "offsets": 0}},
		{name: "counted", input: "X__0", bi: bi(`"N__1"`), args: tensors("x"), errSub: "configuration expects 2 inputs, model provides 1"},
		{name: "not an argument", input: "x", bi: bi(`"offsets"`), args: tensors("x", "y"), errSub: "batch input 'offsets' of model 'm' is not an argument of forward"},
		{name: "not indexed", input: "X__0", bi: bi(`"N"`), args: tensors("x", "n"), errSub: "input 'N' does not follow <name>__<index> naming convention."},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := parse(t, `input [ { name: "`+c.input+`" data_type: TYPE_FP32 dims: [ -1 ] allow_ragged_batch: true } ]`+out+
				strings.ReplaceAll(c.bi, "%s", c.input))
			p, err := makePlan("m", cfg, c.args)
			if c.errSub != "" {
				if err == nil || !strings.Contains(err.Error(), c.errSub) {
					t.Fatalf("error %v, want one with %q", err, c.errSub)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int{}
			for _, f := range p.feeds {
				got[f.name] = f.arg
				if f.name != c.input && (f.dt != tensor.Int32 || f.strings) {
					t.Errorf("batch input %s: %v, want TYPE_INT32 as a Tensor", f.name, f.dt)
				}
			}
			if !maps.Equal(got, c.feeds) {
				t.Errorf("feeds %v, want %v", got, c.feeds)
			}
		})
	}
}

// TestPlanTypes checks the datatypes libtorch takes: Triton's, and BF16
// beyond them; strings go as List[str].
func TestPlanTypes(t *testing.T) {
	for _, dt := range []string{"BOOL", "UINT8", "INT8", "INT16", "INT32", "INT64", "FP16", "BF16", "FP32", "FP64"} {
		cfg := parse(t, `input [ { name: "INPUT__0" data_type: TYPE_`+dt+` dims: [ 4 ] } ] output [ { name: "OUT__0" data_type: TYPE_`+dt+` dims: [ 4 ] } ]`)
		p, err := makePlan("m", cfg, tensors("x"))
		if err != nil {
			t.Errorf("TYPE_%s: %v", dt, err)
			continue
		}
		if got := p.feeds[0].dt.String(); got != dt || p.feeds[0].strings {
			t.Errorf("TYPE_%s: feed %+v", dt, p.feeds[0])
		}
	}
	cfg := parse(t, `max_batch_size: 4 input [ { name: "INPUT__0" data_type: TYPE_STRING dims: [ 1 ] reshape: { shape: [ ] } } ] output [ { name: "OUT__0" data_type: TYPE_STRING dims: [ 1 ] reshape: { shape: [ ] } } ]`)
	p, err := makePlan("m", cfg, []argument{{"x", "List[str]", ""}})
	if err != nil {
		t.Fatal(err)
	}
	if !p.feeds[0].strings || p.fetches[0].dt != tensor.Bytes {
		t.Errorf("string input %+v, output %+v", p.feeds[0], p.fetches[0])
	}
}
