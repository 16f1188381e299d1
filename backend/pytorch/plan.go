package pytorch

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/tensor"
)

// argument is one argument of the module's forward, self excluded, with
// its TorchScript type ("Tensor", "List[str]", "Dict(str, Tensor)", ...)
// and that type as Triton's messages print it ("Tensor?" for
// Optional[Tensor]).
type argument struct{ name, typ, printed string }

// convention is how configuration tensor names map to forward's arguments
// and outputs (Triton's NamingConvention).
type convention uint8

const (
	// forwardArgument: every config input is named after a forward argument.
	forwardArgument convention = iota
	// namedIndex: every name is <name>__<index>.
	namedIndex
	// strictOrdering: the position in the configuration's list.
	strictOrdering
)

// feed is one tensor handed to forward: a config input, a sequence
// control or an implicit state's input.
type feed struct {
	name    string
	arg     int             // forward's argument (unused for a Dict input)
	dt      tensor.DataType // the config's datatype
	strings bool            // TYPE_STRING: passed as one List[str] for the batch
}

// fetch is one tensor taken from forward's (flattened) outputs: a config
// output or an implicit state's output.
type fetch struct {
	name  string
	index int             // in forward's outputs; checked after the run (Triton's rule)
	dt    tensor.DataType // the config's datatype
}

// plan is how a model's configuration meets its forward method, worked out
// (and checked) once per model version.
type plan struct {
	dict     bool // forward takes one Dict(str, Tensor): feeds are its keys
	args     int  // forward's arguments, self excluded
	feeds    []feed
	fetches  []fetch
	warnings []string // Triton's fallback warnings, for the log
}

// controlKinds are the sequence controls in the order Triton checks them.
var controlKinds = []modelconfig.ModelSequenceBatching_Control_Kind{
	modelconfig.ModelSequenceBatching_Control_CONTROL_SEQUENCE_START,
	modelconfig.ModelSequenceBatching_Control_CONTROL_SEQUENCE_END,
	modelconfig.ModelSequenceBatching_Control_CONTROL_SEQUENCE_READY,
	modelconfig.ModelSequenceBatching_Control_CONTROL_SEQUENCE_CORRID,
}

// torchTypes are the config datatypes libtorch has a scalar type for:
// Triton's list, and BF16 (kBFloat16) beyond it. TYPE_STRING is handled
// apart (List[str]); UINT16, UINT32 and UINT64 have no torch type.
var torchTypes = map[tensor.DataType]bool{
	tensor.Bool: true, tensor.Uint8: true, tensor.Int8: true, tensor.Int16: true,
	tensor.Int32: true, tensor.Int64: true, tensor.FP16: true, tensor.FP32: true,
	tensor.FP64: true, tensor.BF16: true,
}

// indexOf parses a <name>__<index> name as Triton does: the text after the
// first "__" must be all digits (an empty index reads as 0). ok is false
// when the name does not follow the convention; index is -1 when the
// digits do not fit an int.
func indexOf(name string) (index int, ok bool) {
	_, suffix, found := strings.Cut(name, "__")
	if !found {
		return 0, false
	}
	for _, c := range suffix {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	if suffix == "" {
		return 0, true
	}
	n, err := strconv.Atoi(suffix)
	if err != nil {
		return -1, true
	}
	return n, true
}

// makePlan checks cfg against forward's arguments and returns the plan,
// with Triton's errors (and codes: INVALID_ARG wraps
// backend.ErrInvalidInput, the rest are internal) in Triton's order,
// then this backend's own checks that Triton leaves to a crash or to the
// first request: indices beyond forward's arguments, two tensors on one
// argument, a tensor where forward takes List[str] and the reverse.
func makePlan(model string, cfg *modelconfig.ModelConfig, args []argument) (*plan, error) {
	p := &plan{args: len(args)}
	sb := cfg.GetSequenceBatching()

	// Sequence controls: <name>__<index> names, CORRID of a torch type.
	var controls []feed
	for _, kind := range controlKinds {
		name, dt := controlTensor(sb, kind)
		if name == "" {
			continue
		}
		index, ok := indexOf(name)
		if !ok {
			return nil, fmt.Errorf("input '%s' does not follow <name>__<index> naming convention.", name)
		}
		if kind == modelconfig.ModelSequenceBatching_Control_CONTROL_SEQUENCE_CORRID && !torchTypes[dt] {
			return nil, fmt.Errorf("input '%s' type '%s' is not supported by PyTorch.", name, dt.ConfigName())
		}
		controls = append(controls, feed{name: name, arg: index, dt: dt})
	}
	var made []feed // batch inputs: the server makes them for each batch
	for _, bi := range cfg.GetBatchInput() {
		for _, name := range bi.GetTargetName() {
			made = append(made, feed{name: name, dt: configType(bi.GetDataType())})
		}
	}
	expected := len(cfg.GetInput()) + len(made) + len(controls) + len(sb.GetState())

	// forward's arguments: one Dict(str, Tensor), or Tensors and Lists.
	if len(args) == 1 && strings.HasPrefix(args[0].typ, "Dict(") {
		p.dict = true
		if args[0].typ != "Dict(str, Tensor)" {
			return nil, invalidf("model '%s': forward's argument '%s' is %s; a Dict input must be Dict(str, Tensor)", model, args[0].name, args[0].typ)
		}
	} else {
		for _, a := range args[min(1, len(args)):] {
			if strings.HasPrefix(a.typ, "Dict(") {
				return nil, errors.New("Multiple inputs of kind DictType were detected. Only a single input of type Dict(str, Tensor) is supported.")
			}
		}
		for _, a := range args {
			if a.typ != "Tensor" && !strings.HasPrefix(a.typ, "List[") {
				return nil, fmt.Errorf("An input of type '%s' was detected in the model. Only a single input of type Dict(str, Tensor) or input(s) of type Tensor are supported.", a.printed)
			}
		}
		if len(args) != expected {
			return nil, invalidf("unable to load model '%s', configuration expects %d inputs, model provides %d", model, expected, len(args))
		}
	}
	if len(cfg.GetInput()) == 0 {
		return nil, errors.New("model configuration must contain at least one input, none were specified.")
	}

	// Inputs.
	names := make([]string, len(cfg.GetInput()))
	for i, in := range cfg.GetInput() {
		names[i] = in.GetName()
	}
	var conv convention
	if p.dict {
		// The names are the Dict's keys; only implicit state (below) asks
		// them to follow <name>__<index>.
		conv, _ = outputConvention(model, names)
	} else {
		var warn string
		conv, warn = inputConvention(model, names, args)
		if warn != "" {
			p.warnings = append(p.warnings, warn)
		}
	}
	if err := checkStates(model, sb, conv, true); err != nil {
		return nil, err
	}
	batching := cfg.GetMaxBatchSize() > 0
	for i, in := range cfg.GetInput() {
		f := feed{name: in.GetName(), arg: i, dt: configType(in.GetDataType())}
		switch conv {
		case forwardArgument:
			for k, a := range args {
				if a.name == f.name {
					f.arg = k
				}
			}
		case namedIndex:
			f.arg, _ = indexOf(f.name)
		}
		if err := checkType(model, "input", f.name, in.GetDataType(), ioDims(in.GetDims(), in.GetReshape()), batching); err != nil {
			return nil, err
		}
		f.strings = f.dt == tensor.Bytes
		p.feeds = append(p.feeds, f)
	}
	// Batch inputs come after the inputs, as Triton maps them: by their
	// names under the inputs' convention, or in order after the inputs.
	for k := range made {
		f := &made[k]
		if p.dict {
			continue // a key of the Dict, whatever the names' convention (Triton's AddInputToMap)
		}
		switch conv {
		case forwardArgument:
			f.arg = slices.IndexFunc(args, func(a argument) bool { return a.name == f.name })
			if f.arg < 0 {
				return nil, invalidf("batch input '%s' of model '%s' is not an argument of forward; the model's inputs are named after forward's arguments, so its batch inputs must be too", f.name, model)
			}
		case namedIndex:
			index, ok := indexOf(f.name)
			if !ok {
				return nil, fmt.Errorf("input '%s' does not follow <name>__<index> naming convention.", f.name)
			}
			f.arg = index
		case strictOrdering:
			f.arg = len(cfg.GetInput()) + k
		}
	}
	p.feeds = append(p.feeds, made...)
	for _, st := range sb.GetState() {
		f := feed{name: st.GetInputName(), dt: configType(st.GetDataType())}
		f.arg, _ = indexOf(f.name)
		if !torchTypes[f.dt] && f.dt != tensor.Bytes {
			return nil, fmt.Errorf("unsupported datatype %s for input state '%s' for model '%s'", st.GetDataType(), f.name, model)
		}
		if f.dt == tensor.Bytes && batching {
			// Triton checks the state's dims as empty here: with batching
			// a STRING state is always two-dimensional.
			return nil, fmt.Errorf("Triton only supports 1 dimensional List of String as input for '%s' for model '%s'", f.name, model)
		}
		f.strings = f.dt == tensor.Bytes
		p.feeds = append(p.feeds, f)
	}
	p.feeds = append(p.feeds, controls...)

	// Outputs.
	if len(cfg.GetOutput()) == 0 {
		return nil, errors.New("model configuration must contain at least one output, none were specified.")
	}
	outNames := make([]string, len(cfg.GetOutput()))
	for i, out := range cfg.GetOutput() {
		outNames[i] = out.GetName()
	}
	outConv, warn := outputConvention(model, outNames)
	if warn != "" {
		p.warnings = append(p.warnings, warn)
	}
	if err := checkStates(model, sb, outConv, false); err != nil {
		return nil, err
	}
	for i, out := range cfg.GetOutput() {
		f := fetch{name: out.GetName(), index: i, dt: configType(out.GetDataType())}
		if outConv == namedIndex {
			f.index, _ = indexOf(f.name)
		}
		if err := checkType(model, "output", f.name, out.GetDataType(), ioDims(out.GetDims(), out.GetReshape()), batching); err != nil {
			return nil, err
		}
		p.fetches = append(p.fetches, f)
	}
	for _, st := range sb.GetState() {
		f := fetch{name: st.GetOutputName(), dt: configType(st.GetDataType())}
		f.index, _ = indexOf(f.name)
		if !torchTypes[f.dt] && f.dt != tensor.Bytes {
			return nil, fmt.Errorf("unsupported datatype %s for state '%s' for model '%s'", st.GetDataType(), f.name, model)
		}
		if f.dt == tensor.Bytes && len(st.GetDims())+btoi(batching) > 1 {
			return nil, fmt.Errorf("Triton only supports 1 dimensional List of String as output for '%s' for model '%s'", f.name, model)
		}
		if k := fetchIndex(p.fetches, f.name); k >= 0 {
			if p.fetches[k].dt != f.dt {
				return nil, invalidf("model '%s': state output '%s' is %s, but the output of that name is %s", model, f.name, st.GetDataType(), p.fetches[k].dt.ConfigName())
			}
			continue
		}
		p.fetches = append(p.fetches, f)
	}

	if err := p.checkArguments(model, args); err != nil {
		return nil, err
	}
	return p, nil
}

// checkArguments is this backend's check beyond Triton's: every feed names
// an argument forward has, no two feeds share one, and each argument's
// type takes the feed (List[str] for TYPE_STRING, Tensor otherwise).
func (p *plan) checkArguments(model string, args []argument) error {
	if p.dict {
		for _, f := range p.feeds {
			if f.strings {
				return invalidf("input '%s' of model '%s' is TYPE_STRING, but forward takes Dict(str, Tensor), whose values are tensors", f.name, model)
			}
		}
		return nil
	}
	taken := make(map[int]string, len(p.feeds))
	for _, f := range p.feeds {
		if f.arg < 0 || f.arg >= len(args) {
			return invalidf("input '%s' of model '%s' refers to forward argument %s by its <name>__<index> name, but forward takes %d arguments", f.name, model, indexText(f), len(args))
		}
		if other, ok := taken[f.arg]; ok {
			return invalidf("inputs '%s' and '%s' of model '%s' both map to forward argument %d ('%s')", other, f.name, model, f.arg, args[f.arg].name)
		}
		taken[f.arg] = f.name
		a := args[f.arg]
		switch {
		case f.strings && a.typ != "List[str]":
			return invalidf("input '%s' of model '%s' is TYPE_STRING, passed as List[str], but forward's argument %d ('%s') is %s", f.name, model, f.arg, a.name, a.typ)
		case !f.strings && a.typ != "Tensor":
			return invalidf("input '%s' of model '%s' is %s, passed as a Tensor, but forward's argument %d ('%s') is %s", f.name, model, f.dt.ConfigName(), f.arg, a.name, a.typ)
		}
	}
	return nil
}

func indexText(f feed) string {
	if f.arg < 0 {
		_, s, _ := strings.Cut(f.name, "__")
		return s
	}
	return strconv.Itoa(f.arg)
}

// inputConvention is Triton's GetNamingConvention for inputs: every name
// is a forward argument, or every name is <name>__<index>, or strict
// ordering, with Triton's warning when the first name that is neither has
// a "__" (one without falls back silently, as in Triton).
func inputConvention(model string, names []string, args []argument) (convention, string) {
	all := true
	for _, n := range names {
		found := false
		for _, a := range args {
			found = found || a.name == n
		}
		all = all && found
	}
	if all {
		return forwardArgument, ""
	}
	for _, n := range names {
		if _, ok := indexOf(n); !ok {
			return strictOrdering, warnIfIndexed(n, fmt.Sprintf("input '%s' or previous input(s) are neither an input argument to the model '%s' nor do they follow the <name>__<index> naming convention. Falling back to enforcing strict ordering from model configuration.", n, model))
		}
	}
	return namedIndex, ""
}

// warnIfIndexed is warning when name has a "__" (its index is not a
// number), else "": Triton warns only then.
func warnIfIndexed(name, warning string) string {
	if strings.Contains(name, "__") {
		return warning
	}
	return ""
}

// outputConvention is Triton's GetNamingConvention for outputs.
func outputConvention(model string, names []string) (convention, string) {
	for _, n := range names {
		if _, ok := indexOf(n); !ok {
			return strictOrdering, warnIfIndexed(n, fmt.Sprintf("output '%s' or previous output(s) of the model '%s' do not follow the <name>__<index> naming convention. Falling back to enforcing strict ordering from model configuration.", n, model))
		}
	}
	return namedIndex, ""
}

// checkStates applies Triton's rules for implicit state: the inputs (or
// outputs) must follow <name>__<index>, and so must each state's
// input_name (or output_name).
func checkStates(model string, sb *modelconfig.ModelSequenceBatching, conv convention, inputs bool) error {
	states := sb.GetState()
	if len(states) == 0 {
		return nil
	}
	if conv != namedIndex {
		return invalidf("PyTorch model '%s' is using sequence batching with state but not all inputs and outputs follow the <name>__<index> naming convention. ", model)
	}
	for _, st := range states {
		name := st.GetOutputName()
		if inputs {
			name = st.GetInputName()
		}
		if _, ok := indexOf(name); !ok {
			return invalidf("PyTorch model '%s' is using sequence batching with state but state '%s' does not follow the <name>__<index> naming convention. ", model, name)
		}
	}
	return nil
}

// checkType refuses config datatypes libtorch has no type for, and STRING
// tensors of more than one dimension (the batch dimension counted).
func checkType(model, what, name string, dt modelconfig.DataType, dims []int64, batching bool) error {
	t := configType(dt)
	if !torchTypes[t] && t != tensor.Bytes {
		return fmt.Errorf("unsupported datatype %s for %s '%s' for model '%s'", dt, what, name, model)
	}
	if t == tensor.Bytes && len(dims)+btoi(batching) > 1 {
		return fmt.Errorf("Triton only supports 1 dimensional List of String as %s for '%s' for model '%s'", what, name, model)
	}
	return nil
}

// ioDims returns the dims a tensor has for the model: its reshape when it
// has one.
func ioDims(dims []int64, reshape *modelconfig.ModelTensorReshape) []int64 {
	if reshape != nil {
		return reshape.GetShape()
	}
	return dims
}

// controlTensor returns the name and datatype of the control of kind in
// sb ("" when there is none).
func controlTensor(sb *modelconfig.ModelSequenceBatching, kind modelconfig.ModelSequenceBatching_Control_Kind) (string, tensor.DataType) {
	for _, ci := range sb.GetControlInput() {
		for _, c := range ci.GetControl() {
			if c.GetKind() == kind {
				return ci.GetName(), configType(modelconfig.ControlDataType(ci))
			}
		}
	}
	return "", tensor.Invalid
}

// configType converts a config datatype (same numbering as
// tensor.DataType), giving Invalid for values outside the enum.
func configType(d modelconfig.DataType) tensor.DataType {
	if d < 0 || d > 255 || !tensor.DataType(d).Valid() {
		return tensor.Invalid
	}
	return tensor.DataType(d)
}

func fetchIndex(fs []fetch, name string) int {
	for k := range fs {
		if fs[k].name == name {
			return k
		}
	}
	return -1
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
