package repository

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/triton-go/triton/modelconfig"
)

// Bounds on the numbers of a config whose cost the server pays when the
// model loads, before any request comes. Triton has none; without them one
// line of a config (or of a load's override) could make the server
// allocate without limit before failing.
const (
	// MaxInstances is the most instances a model may have, summed over
	// its instance groups (a KIND_GPU group's count counts once per GPU).
	MaxInstances = 1024
	// MaxPriorityLevels is the most dynamic_batching.priority_levels: the
	// server keeps a queue per level.
	MaxPriorityLevels = 10_000
)

// ValidateOptions gives Validate what it cannot read from the config.
type ValidateOptions struct {
	// ModelName is the model's folder name; the config's name must match
	// it. Empty skips that check.
	ModelName string
	// KnownModel reports whether a model of that name exists in the
	// repositories; ensemble steps naming other models are checked with
	// it. Nil skips the check (for example when validating one config on
	// its own).
	KnownModel func(name string) bool
}

// Validate checks a model configuration against the rules Triton enforces
// when it loads a model. Call it after [Normalize]: some rules (instance
// group kinds, preferred batch sizes) assume the defaults are filled in.
//
// Every problem found is reported, not only the first: the result is nil
// or an errors.Join of *[ConfigError] values, each with Path set to path
// and Field naming the offending field ("input[1].dims",
// "dynamic_batching.preferred_batch_size"). The reasons use Triton's
// wording where Triton has one, so messages look familiar to Triton users.
//
// What is checked: the name against the folder; platform and backend (a
// known platform, paired with its backend; backend names themselves are
// not checked here, since the server's backend registry decides what
// exists); max_batch_size; inputs and outputs (name, data type, dims,
// duplicates, reshape, image formats); batch inputs and outputs; dynamic
// batching (preferred sizes, priority levels, queue policies); sequence
// batching (control inputs, strategies, implicit state); instance groups;
// ensembles (their restrictions and the data flow between steps); the
// response cache against sequence batching and decoupled models; warm-up
// samples; and per-model metric settings. What needs the model files, the
// GPUs of the machine or other models' configs (shapes agreeing across an
// ensemble, labels files, KIND_GPU without GPUs) is left to the loader.
func Validate(path string, cfg *modelconfig.ModelConfig, opts ValidateOptions) error {
	if cfg == nil {
		return &ConfigError{Path: path, Err: errors.New("no model configuration")}
	}
	v := &validator{path: path, cfg: cfg, model: cfg.GetName()}
	if v.model == "" {
		v.model = opts.ModelName
	}
	v.checkName(opts.ModelName)
	v.checkPlatform()
	if cfg.GetMaxBatchSize() < 0 {
		v.add("max_batch_size", "'max_batch_size' must be non-negative value for %s", v.model)
	}
	v.checkInputs()
	v.checkOutputs()
	v.checkBatchInputs()
	v.checkBatchOutputs()
	v.checkDynamicBatching()
	v.checkSequenceBatching()
	if isEnsemble(cfg) {
		v.checkEnsemble(opts.KnownModel)
	} else {
		v.checkInstanceGroups()
		v.checkWarmup()
	}
	v.checkResponseCache()
	v.checkMetrics()
	return errors.Join(v.errs...)
}

// validator collects the problems of one config.
type validator struct {
	path  string
	model string // model name for messages
	cfg   *modelconfig.ModelConfig
	errs  []error
}

func (v *validator) add(field, format string, args ...any) {
	v.errs = append(v.errs, &ConfigError{Path: v.path, Field: field, Err: fmt.Errorf(format, args...)})
}

func (v *validator) checkName(folder string) {
	name := v.cfg.GetName()
	switch {
	case name == "":
		v.add("name", "model configuration must specify 'name'")
	case folder != "" && name != folder:
		v.add("name", "model name '%s' in config does not match folder '%s'", name, folder)
	}
}

func (v *validator) checkPlatform() {
	platform, backend := v.cfg.GetPlatform(), v.cfg.GetBackend()
	switch {
	case platform == ensemblePlatform || v.cfg.GetEnsembleScheduling() != nil:
		// checkEnsemble owns the rules of ensembles.
	case platform == "" && backend == "":
		v.add("platform", "must specify 'platform' or 'backend' for '%s'", v.model)
	case platform == "":
		// Any backend name may be registered with the server.
	default:
		want, ok := BackendForPlatform(platform)
		switch {
		case !ok:
			v.add("platform", "unknown platform '%s' for '%s'; known platforms: %s",
				platform, v.model, strings.Join(knownPlatforms(), ", "))
		case backend != "" && backend != want:
			v.add("backend", "unexpected 'platform' and 'backend' pair, got:%s, %s", platform, backend)
		}
	}
}

// ioSpec describes a model input or output for the shared checks.
type ioSpec struct {
	field    string // "input[2]"
	what     string // "model input 'x'"
	name     string
	dataType modelconfig.DataType
	dims     []int64
	reshape  *modelconfig.ModelTensorReshape
}

func (v *validator) checkInputs() {
	ts := make([]ioSpec, len(v.cfg.GetInput()))
	for i, in := range v.cfg.GetInput() {
		ts[i] = ioSpec{
			field: fmt.Sprintf("input[%d]", i), what: fmt.Sprintf("model input '%s'", in.GetName()),
			name: in.GetName(), dataType: in.GetDataType(), dims: in.GetDims(), reshape: in.GetReshape(),
		}
		v.checkFormat(ts[i], in.GetFormat())
	}
	v.checkTensors("input", ts)
}

func (v *validator) checkOutputs() {
	ts := make([]ioSpec, len(v.cfg.GetOutput()))
	for i, out := range v.cfg.GetOutput() {
		ts[i] = ioSpec{
			field: fmt.Sprintf("output[%d]", i), what: fmt.Sprintf("model output '%s'", out.GetName()),
			name: out.GetName(), dataType: out.GetDataType(), dims: out.GetDims(), reshape: out.GetReshape(),
		}
	}
	v.checkTensors("output", ts)
}

func (v *validator) checkTensors(kind string, ts []ioSpec) {
	seen := map[string]int{}
	for i, t := range ts {
		if t.name == "" {
			v.add(t.field+".name", "model %s must specify 'name'", kind)
		} else if j, dup := seen[t.name]; dup {
			v.add(t.field+".name", "%s is declared more than once (also %s[%d]) for %s", t.what, kind, j, v.model)
		} else {
			seen[t.name] = i
		}
		v.checkDataType(t.field+".data_type", t.what, t.dataType)
		dimsOK := v.checkDims(t.field+".dims", t.what, t.dims)
		v.checkReshape(t, dimsOK)
	}
}

func (v *validator) checkDataType(field, what string, dt modelconfig.DataType) {
	if dt == modelconfig.DataType_TYPE_INVALID {
		v.add(field, "%s must specify 'data_type' for %s", what, v.model)
	} else if _, ok := modelconfig.DataType_name[int32(dt)]; !ok {
		v.add(field, "%s has unknown data_type %d for %s", what, int32(dt), v.model)
	}
}

// checkDims applies Triton's rule for dims: non-empty, each >= 1 or -1.
// It reports whether the dims are usable for further checks.
func (v *validator) checkDims(field, what string, dims []int64) bool {
	if len(dims) == 0 {
		v.add(field, "%s must specify 'dims' for %s", what, v.model)
		return false
	}
	return v.checkDimValues(field, what, dims)
}

func (v *validator) checkDimValues(field, what string, dims []int64) bool {
	for _, d := range dims {
		if d < 1 && d != -1 {
			v.add(field, "%s: dimension must be integer >= 1, or -1 to indicate a variable-size dimension, got %d",
				what, d)
			return false
		}
	}
	return true
}

func (v *validator) checkReshape(t ioSpec, dimsOK bool) {
	if t.reshape == nil {
		return
	}
	shape := t.reshape.GetShape()
	field := t.field + ".reshape"
	// Triton allows `reshape: { shape: [ ] }` only for batching models.
	if len(shape) == 0 && v.cfg.GetMaxBatchSize() <= 0 {
		v.add(field, "%s cannot have empty reshape for non-batching model as scalar tensors are not supported for %s",
			t.what, v.model)
		return
	}
	if !v.checkDimValues(field+".shape", t.what+" reshape", shape) || !dimsOK {
		return
	}
	if !sameElementCount(t.dims, shape) {
		v.add(field, "%s has different size for dims and reshape for %s: dims %v, reshape %v",
			t.what, v.model, t.dims, shape)
	}
}

// sameElementCount compares dims and reshape the way Triton does: the
// runs of fixed dimensions between variable (-1) dimensions must hold the
// same number of elements, so [2, 4, -1, 6] may become [8, -1, 1, 6].
// This also requires the same number of -1s. When a product overflows the
// comparison is skipped (no real tensor is that large).
func sameElementCount(dims, shape []int64) bool {
	a, okA := runProducts(dims)
	b, okB := runProducts(shape)
	if !okA || !okB {
		return true
	}
	return slices.Equal(a, b)
}

func runProducts(dims []int64) ([]int64, bool) {
	out := []int64{}
	cur := int64(1)
	for _, d := range dims {
		if d == -1 {
			out = append(out, cur)
			cur = 1
			continue
		}
		if d != 0 && cur > math.MaxInt64/d {
			return nil, false
		}
		cur *= d
	}
	return append(out, cur), true
}

func (v *validator) checkFormat(t ioSpec, format modelconfig.ModelInput_Format) {
	switch format {
	case modelconfig.ModelInput_FORMAT_NONE:
	case modelconfig.ModelInput_FORMAT_NHWC, modelconfig.ModelInput_FORMAT_NCHW:
		if n := len(t.dims); n != 3 {
			msg := fmt.Sprintf("%s has format %s, which needs exactly 3 dims (the non-batch dimensions), got %d for %s",
				t.what, format, n, v.model)
			if n == 4 && v.cfg.GetMaxBatchSize() > 0 {
				msg += "; with max_batch_size > 0 the batch dimension is implicit and must not be written into dims"
			}
			v.add(t.field+".format", "%s", msg)
		}
	default:
		v.add(t.field+".format", "%s has unknown format %d for %s", t.what, int32(format), v.model)
	}
}

func (v *validator) inputNames() map[string]bool {
	names := map[string]bool{}
	for _, in := range v.cfg.GetInput() {
		names[in.GetName()] = true
	}
	return names
}

func (v *validator) outputNames() map[string]bool {
	names := map[string]bool{}
	for _, out := range v.cfg.GetOutput() {
		names[out.GetName()] = true
	}
	return names
}

func (v *validator) checkBatchInputs() {
	inputs := v.inputNames()
	targets := map[string]bool{}
	sequence := map[string]string{} // the inputs the sequence batcher makes, and what each is
	for _, ci := range v.cfg.GetSequenceBatching().GetControlInput() {
		sequence[ci.GetName()] = "control input"
	}
	for _, st := range v.cfg.GetSequenceBatching().GetState() {
		sequence[st.GetInputName()] = "state input"
	}
	for i, bi := range v.cfg.GetBatchInput() {
		f := fmt.Sprintf("batch_input[%d]", i)
		kind := bi.GetKind()
		if _, ok := modelconfig.BatchInput_Kind_name[int32(kind)]; !ok {
			v.add(f+".kind", "batch input has unknown kind %d for %s", int32(kind), v.model)
		}
		if len(bi.GetTargetName()) == 0 {
			v.add(f+".target_name", "batch input kind '%s' must specify 'target_name' for %s", kind, v.model)
		}
		// Beyond Triton, which would feed the model one of two tensors of
		// the same name.
		for _, t := range bi.GetTargetName() {
			switch {
			case inputs[t]:
				v.add(f+".target_name", "batch input target '%s' is also a model input of %s; the server makes batch inputs, requests do not send them", t, v.model)
			case targets[t]:
				v.add(f+".target_name", "batch input target '%s' is named more than once", t)
			case sequence[t] != "":
				v.add(f+".target_name", "batch input target '%s' is also a sequence batching %s of %s; each input is made by one of them", t, sequence[t], v.model)
			}
			targets[t] = true
		}
		switch dt := bi.GetDataType(); dt {
		case modelconfig.DataType_TYPE_INT32, modelconfig.DataType_TYPE_FP32:
		default:
			v.add(f+".data_type", "batch input kind '%s' data type must be TYPE_INT32 or TYPE_FP32 for %s, got %s",
				kind, v.model, dt)
		}
		if (kind == modelconfig.BatchInput_BATCH_ITEM_SHAPE || kind == modelconfig.BatchInput_BATCH_ITEM_SHAPE_FLATTEN) && v.cfg.GetMaxBatchSize() == 0 {
			// Beyond Triton, which takes the first dimension for the batch
			// whether the model batches or not.
			v.add(f+".kind", "batch input kind '%s' describes the items of a batch, but %s does not batch (max_batch_size 0)", kind, v.model)
		}
		if n := len(bi.GetSourceInput()); n != 1 {
			v.add(f+".source_input", "batch input kind '%s' expects 1 source input, got %d", kind, n)
		} else if src := bi.GetSourceInput()[0]; !inputs[src] {
			v.add(f+".source_input", "batch input kind '%s' source input '%s' is not a model input of %s",
				kind, src, v.model)
		}
	}
}

func (v *validator) checkBatchOutputs() {
	inputs, outputs := v.inputNames(), v.outputNames()
	targets := map[string]bool{}
	for i, bo := range v.cfg.GetBatchOutput() {
		f := fmt.Sprintf("batch_output[%d]", i)
		kind := bo.GetKind()
		if _, ok := modelconfig.BatchOutput_Kind_name[int32(kind)]; !ok {
			v.add(f+".kind", "batch output has unknown kind %d for %s", int32(kind), v.model)
		}
		if n := len(bo.GetSourceInput()); n != 1 {
			v.add(f+".source_input", "batch output kind '%s' expects 1 source input, got %d", kind, n)
		} else if src := bo.GetSourceInput()[0]; !inputs[src] {
			v.add(f+".source_input", "batch output kind '%s' source input '%s' is not a model input of %s",
				kind, src, v.model)
		}
		if len(bo.GetTargetName()) == 0 {
			v.add(f+".target_name", "batch output kind '%s' must specify 'target_name' for %s", kind, v.model)
		}
		for _, t := range bo.GetTargetName() {
			switch {
			case !outputs[t]:
				v.add(f+".target_name", "batch output target '%s' is not a model output of %s", t, v.model)
			case targets[t]:
				v.add(f+".target_name", "batch output target '%s' is named more than once for %s", t, v.model)
			}
			targets[t] = true
		}
	}
}

// checkPreferred applies Triton's rules for preferred batch sizes; what
// is "dynamic batching" or "sequence batching".
func (v *validator) checkPreferred(field, what string, sizes []int32) {
	mbs := v.cfg.GetMaxBatchSize()
	for _, p := range sizes {
		if p < 1 {
			v.add(field, "%s preferred size must be positive for %s, got %d", what, v.model, p)
		} else if p > mbs {
			v.add(field, "%s preferred size must be <= max batch size for %s, got %d (max_batch_size %d)",
				what, v.model, p, mbs)
		}
	}
}

func (v *validator) checkDynamicBatching() {
	db := v.cfg.GetDynamicBatching()
	if db == nil {
		return
	}
	if v.cfg.GetMaxBatchSize() == 0 {
		// Triton would quietly run every request alone; say so instead.
		v.add("dynamic_batching", "dynamic batching needs max_batch_size > 0 for %s; without batching remove dynamic_batching", v.model)
	}
	v.checkPreferred("dynamic_batching.preferred_batch_size", "dynamic batching", db.GetPreferredBatchSize())
	levels := db.GetPriorityLevels()
	if levels > MaxPriorityLevels {
		v.add("dynamic_batching.priority_levels", "priority_levels %d of %s is above the limit of %d", levels, v.model, MaxPriorityLevels)
	}
	if levels > 0 {
		if d := db.GetDefaultPriorityLevel(); d < 1 || d > levels {
			v.add("dynamic_batching.default_priority_level",
				"default priority level must be in range [1, %d] for %s, got %d", levels, v.model, d)
		}
	}
	keys := slices.Sorted(maps.Keys(db.GetPriorityQueuePolicy()))
	for _, k := range keys {
		if k < 1 || k > levels {
			v.add(fmt.Sprintf("dynamic_batching.priority_queue_policy[%d]", k),
				"priority queue policy must have priority level in range [1, %d] for %s", levels, v.model)
		}
	}
	if !db.GetPreserveOrdering() {
		return
	}
	if levels > 1 {
		v.add("dynamic_batching.priority_levels",
			"Only one priority level is allowed when 'preserve_ordering' is true for %s", v.model)
	}
	const delayMsg = "Queue policy can not have DELAY as timeout action when 'preserve_ordering' is true for %s"
	if db.GetDefaultQueuePolicy().GetTimeoutAction() == modelconfig.ModelQueuePolicy_DELAY {
		v.add("dynamic_batching.default_queue_policy.timeout_action", delayMsg, v.model)
	}
	for _, k := range keys {
		if db.GetPriorityQueuePolicy()[k].GetTimeoutAction() == modelconfig.ModelQueuePolicy_DELAY {
			v.add(fmt.Sprintf("dynamic_batching.priority_queue_policy[%d].timeout_action", k), delayMsg, v.model)
		}
	}
}

// corridTypes are the data types a CONTROL_SEQUENCE_CORRID tensor may use.
var corridTypes = []modelconfig.DataType{
	modelconfig.DataType_TYPE_UINT64, modelconfig.DataType_TYPE_INT64,
	modelconfig.DataType_TYPE_UINT32, modelconfig.DataType_TYPE_INT32,
	modelconfig.DataType_TYPE_STRING,
}

func (v *validator) checkSequenceBatching() {
	sb := v.cfg.GetSequenceBatching()
	if sb == nil {
		return
	}
	v.checkControlInputs(sb)
	if d := sb.GetDirect(); d != nil {
		if u := d.GetMinimumSlotUtilization(); u < 0 || u > 1 || math.IsNaN(float64(u)) {
			v.add("sequence_batching.direct.minimum_slot_utilization",
				"sequence batching minimum slot utilization must be in range (0.0, 1.0] for %s, got %g", v.model, u)
		}
	}
	if o := sb.GetOldest(); o != nil {
		v.checkPreferred("sequence_batching.oldest.preferred_batch_size", "sequence batching", o.GetPreferredBatchSize())
	}
	v.checkStates(sb.GetState())
}

func (v *validator) checkControlInputs(sb *modelconfig.ModelSequenceBatching) {
	kinds := map[modelconfig.ModelSequenceBatching_Control_Kind]bool{}
	tensors := map[string]bool{}
	for j, ci := range sb.GetControlInput() {
		f := fmt.Sprintf("sequence_batching.control_input[%d]", j)
		name := ci.GetName()
		switch {
		case name == "":
			v.add(f+".name", "sequence batching control input must specify 'name' for %s", v.model)
		case tensors[name]:
			v.add(f+".name", "sequence batching control tensor '%s' is listed more than once for %s; a tensor carries one control",
				name, v.model)
		}
		tensors[name] = true
		if n := len(ci.GetControl()); n != 1 {
			v.add(f+".control", "sequence batching control tensor '%s' must carry exactly one control for %s, got %d",
				name, v.model, n)
		}
		for k, c := range ci.GetControl() {
			cf := fmt.Sprintf("%s.control[%d]", f, k)
			kind := c.GetKind()
			if kinds[kind] {
				v.add(cf+".kind", "sequence batching specifies multiple %s tensors for %s", kind, v.model)
			}
			kinds[kind] = true
			v.checkControl(cf, kind, c)
		}
	}
}

func (v *validator) checkControl(field string, kind modelconfig.ModelSequenceBatching_Control_Kind, c *modelconfig.ModelSequenceBatching_Control) {
	lists := []struct {
		name string
		n    int
	}{
		{"int32_false_true", len(c.GetInt32FalseTrue())},
		{"fp32_false_true", len(c.GetFp32FalseTrue())},
		{"bool_false_true", len(c.GetBoolFalseTrue())},
	}
	set := 0
	for _, l := range lists {
		if l.n > 0 {
			set++
		}
	}
	switch kind {
	case modelconfig.ModelSequenceBatching_Control_CONTROL_SEQUENCE_START,
		modelconfig.ModelSequenceBatching_Control_CONTROL_SEQUENCE_READY,
		modelconfig.ModelSequenceBatching_Control_CONTROL_SEQUENCE_END:
		if set != 1 {
			v.add(field, "sequence batching must specify exactly one of 'int32_false_true', 'fp32_false_true' or 'bool_false_true' for %s for %s",
				kind, v.model)
			return
		}
		for _, l := range lists {
			if l.n > 0 && l.n != 2 {
				v.add(field+"."+l.name, "sequence batching control '%s' must have exactly 2 entries [false, true] for %s for %s, got %d",
					l.name, kind, v.model, l.n)
			}
		}
	case modelconfig.ModelSequenceBatching_Control_CONTROL_SEQUENCE_CORRID:
		if set != 0 {
			v.add(field, "sequence batching must not specify 'int32_false_true', 'fp32_false_true' or 'bool_false_true' for %s for %s",
				kind, v.model)
		}
		if dt := c.GetDataType(); !slices.Contains(corridTypes, dt) {
			v.add(field+".data_type", "sequence batching control %s data type must be TYPE_UINT64, TYPE_INT64, TYPE_UINT32, TYPE_INT32 or TYPE_STRING for %s, got %s",
				kind, v.model, dt)
		}
	default:
		v.add(field+".kind", "sequence batching control has unknown kind %d for %s", int32(kind), v.model)
	}
}

func (v *validator) checkStates(states []*modelconfig.ModelSequenceBatching_State) {
	if len(states) > 0 && v.cfg.GetModelTransactionPolicy().GetDecoupled() {
		// Ours: the state of a decoupled request is not carried to the
		// next request of its sequence, so such a model is refused rather
		// than run without its state.
		v.add("sequence_batching.state", "implicit state is not supported for model %s with 'decoupled' transaction policy on this server", v.model)
	}
	inNames, outNames := map[string]bool{}, map[string]bool{}
	for j, st := range states {
		f := fmt.Sprintf("sequence_batching.state[%d]", j)
		what := fmt.Sprintf("sequence batching state '%s'", st.GetInputName())
		for _, n := range []struct {
			field, value string
			seen         map[string]bool
		}{{"input_name", st.GetInputName(), inNames}, {"output_name", st.GetOutputName(), outNames}} {
			switch {
			case n.value == "":
				v.add(f+"."+n.field, "sequence batching state must specify '%s' for %s", n.field, v.model)
			case n.seen[n.value]:
				v.add(f+"."+n.field, "sequence batching state %s '%s' is used by more than one state for %s",
					n.field, n.value, v.model)
			}
			n.seen[n.value] = true
		}
		v.checkDataType(f+".data_type", what, st.GetDataType())
		v.checkDims(f+".dims", what, st.GetDims())
		if st.GetUseGrowableMemory() && !st.GetUseSameBufferForInputOutput() {
			v.add(f+".use_growable_memory", "%s sets 'use_growable_memory', which requires 'use_same_buffer_for_input_output', for %s",
				what, v.model)
		}
		if n := len(st.GetInitialState()); n > 1 {
			v.add(f+".initial_state", "%s may have at most one initial_state for %s, got %d", what, v.model, n)
		}
		for k, is := range st.GetInitialState() {
			isf := fmt.Sprintf("%s.initial_state[%d]", f, k)
			isWhat := fmt.Sprintf("initial state '%s' of %s", is.GetName(), what)
			if is.GetName() == "" {
				v.add(isf+".name", "initial state of %s must specify 'name' for %s", what, v.model)
			}
			v.checkDataType(isf+".data_type", isWhat, is.GetDataType())
			for _, d := range is.GetDims() {
				if d < 0 {
					v.add(isf+".dims", "%s: dimension must be integer >= 0; an initial state cannot have variable-size (-1) dimensions, got %d",
						isWhat, d)
					break
				}
			}
			switch sd := is.GetStateData().(type) {
			case nil:
				v.add(isf, "%s must specify 'zero_data' or 'data_file' for %s", isWhat, v.model)
			case *modelconfig.ModelSequenceBatching_InitialState_DataFile:
				if sd.DataFile == "" {
					v.add(isf+".data_file", "%s must name a file in 'data_file' for %s", isWhat, v.model)
				}
			}
		}
	}
}

func (v *validator) checkInstanceGroups() {
	var total int64 // instances of the model so far
	for i, g := range v.cfg.GetInstanceGroup() {
		f := fmt.Sprintf("instance_group[%d]", i)
		name := g.GetName()
		if name == "" {
			name = fmt.Sprintf("#%d", i)
		}
		switch kind := g.GetKind(); kind {
		case modelconfig.ModelInstanceGroup_KIND_CPU, modelconfig.ModelInstanceGroup_KIND_MODEL:
			if len(g.GetGpus()) > 0 {
				v.add(f+".gpus", "instance group %s of model %s has kind %s but specifies one or more GPUs",
					name, v.model, kind)
			}
		case modelconfig.ModelInstanceGroup_KIND_AUTO, modelconfig.ModelInstanceGroup_KIND_GPU:
		default:
			v.add(f+".kind", "instance group %s of model %s has unknown kind %d", name, v.model, int32(kind))
		}
		if c := g.GetCount(); c < 0 {
			v.add(f+".count", "instance group %s of model %s must specify a non-negative count, got %d", name, v.model, c)
		} else if total >= 0 {
			n := int64(c)
			if g.GetKind() == modelconfig.ModelInstanceGroup_KIND_GPU {
				n *= int64(max(len(g.GetGpus()), 1)) // count instances on each GPU
			}
			if total += n; total > MaxInstances {
				v.add(f+".count", "instance group %s of model %s: %d instances in all is above the limit of %d instances per model",
					name, v.model, total, MaxInstances)
				total = -1 // reported once
			}
		}
		for _, id := range g.GetGpus() {
			if id < 0 {
				v.add(f+".gpus", "instance group %s of model %s specifies invalid GPU id %d", name, v.model, id)
			}
		}
		for k, r := range g.GetRateLimiter().GetResources() {
			if r.GetName() == "" {
				v.add(fmt.Sprintf("%s.rate_limiter.resources[%d].name", f, k),
					"instance group %s of model %s has a rate limiter resource without 'name'", name, v.model)
			}
		}
	}
}

func (v *validator) checkWarmup() {
	mbs := v.cfg.GetMaxBatchSize()
	for i, w := range v.cfg.GetModelWarmup() {
		f := fmt.Sprintf("model_warmup[%d]", i)
		what := fmt.Sprintf("model warmup '%s'", w.GetName())
		if w.GetName() == "" {
			v.add(f+".name", "model warmup setting must specify 'name' for %s", v.model)
		}
		switch bs := w.GetBatchSize(); {
		case bs == 0:
			v.add(f+".batch_size", "%s must specify 'batch_size' >= 1 for %s", what, v.model)
		case mbs <= 0 && bs != 1:
			v.add(f+".batch_size", "%s must have 'batch_size' 1 because %s does not support batching (max_batch_size 0), got %d",
				what, v.model, bs)
		case mbs > 0 && bs > uint32(mbs):
			v.add(f+".batch_size", "%s 'batch_size' must be <= max batch size for %s, got %d (max_batch_size %d)",
				what, v.model, bs, mbs)
		}
		for _, k := range slices.Sorted(maps.Keys(w.GetInputs())) {
			in := w.GetInputs()[k]
			kf := fmt.Sprintf("%s.inputs[%q]", f, k)
			inWhat := fmt.Sprintf("%s input '%s'", what, k)
			v.checkDataType(kf+".data_type", inWhat, in.GetDataType())
			for _, d := range in.GetDims() {
				if d < 0 {
					v.add(kf+".dims", "%s: dimension must be integer >= 0; warm-up data has a fixed shape, got %d", inWhat, d)
					break
				}
			}
			switch src := in.GetInputDataType().(type) {
			case nil:
				v.add(kf, "%s must specify 'zero_data', 'random_data' or 'input_data_file' for %s", inWhat, v.model)
			case *modelconfig.ModelWarmup_Input_InputDataFile:
				if src.InputDataFile == "" {
					v.add(kf+".input_data_file", "%s must name a file in 'input_data_file' for %s", inWhat, v.model)
				}
			}
		}
	}
}

func (v *validator) checkEnsemble(known func(string) bool) {
	cfg := v.cfg
	es := cfg.GetEnsembleScheduling()
	if cfg.GetPlatform() != ensemblePlatform || cfg.GetBackend() != "" {
		field := "platform"
		if cfg.GetPlatform() == ensemblePlatform {
			field = "backend"
		}
		v.add(field, "Ensemble model '%s' must have platform type 'ensemble' and empty backend type", v.model)
	}
	if es == nil {
		v.add("ensemble_scheduling", "ensemble scheduling must be set for ensemble '%s' whose platform is ensemble", v.model)
	}
	if len(cfg.GetInstanceGroup()) > 0 {
		v.add("instance_group", "instance group should not be specified for ensemble '%s'", v.model)
	}
	if len(cfg.GetModelWarmup()) > 0 {
		v.add("model_warmup", "model_warmup can not be specified for ensemble '%s'", v.model)
	}
	if cfg.GetOptimization() != nil {
		v.add("optimization", "optimization should not be specified for ensemble '%s'", v.model)
	}
	if es != nil {
		v.checkSteps(es.GetStep(), known)
	}
}

// checkSteps checks the data flow of an ensemble: every step runs a known
// model, reads tensors that exist, and every tensor has one producer and
// at least one use.
func (v *validator) checkSteps(steps []*modelconfig.ModelEnsembling_Step, known func(string) bool) {
	if len(steps) == 0 {
		v.add("ensemble_scheduling.step", "must specify one or more 'step's for ensemble '%s'", v.model)
		return
	}
	inputs, outputs := v.inputNames(), v.outputNames()
	producer := map[string]int{} // ensemble tensor -> step that writes it
	for i, s := range steps {
		f := fmt.Sprintf("ensemble_scheduling.step[%d]", i)
		switch m := s.GetModelName(); {
		case m == "":
			v.add(f+".model_name", "must specify 'model_name' in step %d of ensemble '%s'", i, v.model)
		case m == v.cfg.GetName():
			v.add(f+".model_name", "step %d of ensemble '%s' uses the ensemble itself (circular dependency)", i, v.model)
		case known != nil && !known(m):
			v.add(f+".model_name", "step %d of ensemble '%s' uses model '%s', which is not in the model repository",
				i, v.model, m)
		}
		if len(s.GetInputMap()) == 0 {
			v.add(f+".input_map", "must specify 'input_map' in step %d of ensemble '%s'", i, v.model)
		}
		if len(s.GetOutputMap()) == 0 {
			v.add(f+".output_map", "must specify 'output_map' in step %d of ensemble '%s'", i, v.model)
		}
		for _, k := range slices.Sorted(maps.Keys(s.GetOutputMap())) {
			t := s.GetOutputMap()[k]
			mf := fmt.Sprintf("%s.output_map[%q]", f, k)
			switch j, dup := producer[t]; {
			case t == "":
				v.add(mf, "step %d of ensemble '%s' maps output '%s' to an empty tensor name", i, v.model, k)
			case inputs[t]:
				v.add(mf, "ensemble tensor '%s' is an input of ensemble '%s' and cannot be produced by step %d", t, v.model, i)
			case dup:
				v.add(mf, "ensemble tensor '%s' is produced more than once in ensemble '%s' (steps %d and %d)", t, v.model, j, i)
			default:
				producer[t] = i
			}
		}
	}
	used := map[string]bool{}
	deps := make([][]int, len(steps)) // step -> steps it reads from
	for i, s := range steps {
		for _, k := range slices.Sorted(maps.Keys(s.GetInputMap())) {
			t := s.GetInputMap()[k]
			used[t] = true
			if j, ok := producer[t]; ok {
				deps[i] = append(deps[i], j)
			} else if !inputs[t] {
				v.add(fmt.Sprintf("ensemble_scheduling.step[%d].input_map[%q]", i, k),
					"step %d of ensemble '%s' reads tensor '%s', which is neither an ensemble input nor an output of any step",
					i, v.model, t)
			}
		}
	}
	for i, out := range v.cfg.GetOutput() {
		if _, ok := producer[out.GetName()]; !ok {
			v.add(fmt.Sprintf("output[%d].name", i), "ensemble output '%s' of '%s' is not produced by any step",
				out.GetName(), v.model)
		}
	}
	for i, in := range v.cfg.GetInput() {
		if !used[in.GetName()] {
			v.add(fmt.Sprintf("input[%d].name", i), "ensemble input '%s' of '%s' is not used by any step",
				in.GetName(), v.model)
		}
	}
	for _, t := range slices.Sorted(maps.Keys(producer)) {
		if !used[t] && !outputs[t] {
			v.add(fmt.Sprintf("ensemble_scheduling.step[%d].output_map", producer[t]),
				"ensemble tensor '%s' is unused in ensemble '%s'", t, v.model)
		}
	}
	if cycle := stepCycle(deps); len(cycle) > 0 {
		v.add("ensemble_scheduling.step", "ensemble '%s' has a cycle: steps %v depend on each other's outputs",
			v.model, cycle)
	}
}

// stepCycle returns the steps left over after repeatedly removing steps
// whose inputs are all available (Kahn's algorithm): empty when the steps
// form a DAG, otherwise the steps on or behind a cycle, ascending.
func stepCycle(deps [][]int) []int {
	pending := make([]int, len(deps)) // unmet dependencies per step
	readers := make([][]int, len(deps))
	for i, ds := range deps {
		for _, j := range ds {
			pending[i]++ // a step reading its own output stays pending
			readers[j] = append(readers[j], i)
		}
	}
	var ready []int
	for i, n := range pending {
		if n == 0 {
			ready = append(ready, i)
		}
	}
	done := 0
	for len(ready) > 0 {
		i := ready[len(ready)-1]
		ready = ready[:len(ready)-1]
		done++
		for _, r := range readers[i] {
			if pending[r]--; pending[r] == 0 {
				ready = append(ready, r)
			}
		}
	}
	if done == len(deps) {
		return nil
	}
	var left []int
	for i, n := range pending {
		if n > 0 {
			left = append(left, i)
		}
	}
	return left
}

func (v *validator) checkResponseCache() {
	if !v.cfg.GetResponseCache().GetEnable() {
		return
	}
	if v.cfg.GetSequenceBatching() != nil {
		v.add("response_cache.enable", "Response Cache does not currently support model %s with sequence batching scheduler. Please disable the response cache.", v.model)
	}
	if v.cfg.GetModelTransactionPolicy().GetDecoupled() {
		v.add("response_cache.enable", "Response Cache does not currently support model %s with 'decoupled' transaction policy. Please disable the response cache.", v.model)
	}
}

func (v *validator) checkMetrics() {
	for i, mc := range v.cfg.GetModelMetrics().GetMetricControl() {
		f := fmt.Sprintf("model_metrics.metric_control[%d]", i)
		family := mc.GetMetricIdentifier().GetFamily()
		if family == "" {
			v.add(f+".metric_identifier.family", "metric control must specify 'metric_identifier' with a 'family' for %s", v.model)
		}
		h := mc.GetHistogramOptions()
		if h == nil {
			v.add(f+".histogram_options", "metric control for '%s' must specify 'histogram_options' for %s", family, v.model)
			continue
		}
		b := h.GetBuckets()
		if len(b) == 0 {
			v.add(f+".histogram_options.buckets", "histogram buckets for '%s' must not be empty for %s", family, v.model)
		}
		for k := range b {
			if math.IsNaN(b[k]) || (k > 0 && b[k] <= b[k-1]) {
				v.add(f+".histogram_options.buckets", "histogram buckets for '%s' must be in ascending order for %s, got %v",
					family, v.model, b)
				break
			}
		}
	}
}
