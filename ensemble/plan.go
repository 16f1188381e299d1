package ensemble

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/triton-go/triton/modelconfig"
)

// ConfigLookup returns the configuration of a loaded model version (0: the
// version a request without a version would use). [backend.Caller]'s
// ModelConfig is one.
type ConfigLookup func(model string, version int64) (*modelconfig.ModelConfig, error)

// Plan is an ensemble compiled for execution: its steps, the ensemble
// tensors they read and write, and who produces each tensor. It is
// immutable and safe for concurrent use.
type Plan struct {
	name     string
	tensors  []string       // ensemble tensor names; index = tensor id
	ids      map[string]int // name → id
	inputs   []int          // ensemble inputs, in config order
	outputs  []int          // ensemble outputs, in config order
	producer []int          // tensor id → step writing it, -1 for ensemble inputs
	steps    []step
	all      need // what a request for every output needs: everything
}

// step is one call to a composing model.
type step struct {
	index   int
	model   string
	version int64     // 0: the latest (config -1)
	reads   []binding // composing input ← ensemble tensor
	writes  []binding // composing output → ensemble tensor
	deps    []int     // steps producing what this step reads, deduplicated
	next    []int     // steps reading what this step writes, deduplicated
	outputs []string  // the composing outputs the step maps
	// stateful: the composing model has a sequence batcher.
	stateful bool
	// decoupled: the composing model may answer any number of times; the
	// steps after it run once per response (see checkDecoupled).
	decoupled bool
	// What the step forwards of the ensemble request: priority levels up
	// to maxPriority (0: the composing model ignores priorities), and a
	// timeout only when the composing model's queue policy takes one.
	maxPriority    uint64
	batching       bool // the composing model has a dynamic batcher
	timeoutAllowed func(priority uint64) bool
}

// binding maps a composing model's tensor name to an ensemble tensor.
type binding struct {
	name   string // the composing model's input or output name
	tensor int    // ensemble tensor id
}

// node is what validation knows of an ensemble tensor: its datatype and
// shape as first inferred, and from which model.
type node struct {
	model    string
	dtype    modelconfig.DataType
	dims     []int64 // without a batch dimension
	fullDims []int64 // with the batch dimension of a batching model
}

func newNode(model string, batching bool, dt modelconfig.DataType, dims []int64) node {
	n := node{model: model, dtype: dt, dims: dims, fullDims: dims}
	if batching {
		n.fullDims = append([]int64{-1}, dims...)
	}
	return n
}

// Compile checks an ensemble configuration against the configurations of
// its composing models (which must be loaded) and returns its plan. The
// structural rules that need no other model (one producer per tensor, no
// cycles, every tensor used) are package repository's and are assumed to
// hold; Compile checks what needs the composing models, with Triton's
// messages: every composing input mapped exactly once (optional inputs may
// be left out), no mapping to inputs or from outputs the model does not
// have, datatypes and shapes that agree between producer and consumers,
// and the ensemble's max_batch_size within each batching composing model's.
func Compile(cfg *modelconfig.ModelConfig, lookup ConfigLookup) (*Plan, error) {
	name := cfg.GetName()
	es := cfg.GetEnsembleScheduling()
	if es == nil || len(es.GetStep()) == 0 {
		return nil, fmt.Errorf("ensemble '%s' has no ensemble_scheduling steps", name)
	}
	p := &Plan{name: name, ids: map[string]int{}}
	id := func(t string) int {
		if i, ok := p.ids[t]; ok {
			return i
		}
		p.ids[t] = len(p.tensors)
		p.tensors = append(p.tensors, t)
		p.producer = append(p.producer, -1)
		return len(p.tensors) - 1
	}
	batching := cfg.GetMaxBatchSize() > 0
	nodes := map[string]node{}
	for _, in := range cfg.GetInput() {
		p.inputs = append(p.inputs, id(in.GetName()))
		nodes[in.GetName()] = newNode(name, batching, in.GetDataType(), shapeOf(in.GetDims(), in.GetReshape()))
	}
	for _, out := range cfg.GetOutput() {
		p.outputs = append(p.outputs, id(out.GetName()))
		nodes[out.GetName()] = newNode(name, batching, out.GetDataType(), shapeOf(out.GetDims(), out.GetReshape()))
	}

	var missing []string
	configs := make([]*modelconfig.ModelConfig, len(es.GetStep()))
	for i, s := range es.GetStep() {
		c, err := lookup(s.GetModelName(), version(s.GetModelVersion()))
		if err != nil {
			if !slices.Contains(missing, s.GetModelName()) {
				missing = append(missing, s.GetModelName())
			}
			continue
		}
		configs[i] = c
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("ensemble %s contains models that are not available: %s", name, strings.Join(missing, ", "))
	}

	for i, s := range es.GetStep() {
		mc := configs[i]
		model := s.GetModelName()
		decoupled := mc.GetModelTransactionPolicy().GetDecoupled()
		if decoupled && !cfg.GetModelTransactionPolicy().GetDecoupled() {
			return nil, fmt.Errorf("in ensemble %s, step %d uses decoupled model %s: the ensemble must be decoupled too (model_transaction_policy { decoupled: true }), as it answers once per response of the step", name, i, model)
		}
		if mbs := mc.GetMaxBatchSize(); mbs != 0 && mbs < cfg.GetMaxBatchSize() {
			return nil, fmt.Errorf("ensemble %s allows maximum batch size %d, but it contains model %s which only allows maximum batch size to be %d",
				name, cfg.GetMaxBatchSize(), model, mbs)
		}
		st := step{index: i, model: model, version: version(s.GetModelVersion()), stateful: mc.GetSequenceBatching() != nil, decoupled: decoupled}
		st.maxPriority, st.batching, st.timeoutAllowed = forwarding(mc)
		reads, err := p.mapInputs(st.index, s, mc, nodes, id)
		if err != nil {
			return nil, err
		}
		writes, err := p.mapOutputs(s, mc, nodes, id)
		if err != nil {
			return nil, err
		}
		st.reads, st.writes = reads, writes
		for _, w := range writes {
			st.outputs = append(st.outputs, w.name)
		}
		p.steps = append(p.steps, st)
	}
	for _, st := range p.steps {
		for _, w := range st.writes {
			p.producer[w.tensor] = st.index
		}
	}
	for i := range p.steps {
		st := &p.steps[i]
		for _, r := range st.reads {
			if j := p.producer[r.tensor]; j >= 0 && !slices.Contains(st.deps, j) {
				st.deps = append(st.deps, j)
				p.steps[j].next = append(p.steps[j].next, i)
			}
		}
	}
	for _, o := range p.outputs {
		if p.producer[o] < 0 {
			return nil, fmt.Errorf("ensemble output '%s' of '%s' is not produced by any step", p.tensors[o], name)
		}
	}
	if err := p.checkDecoupled(); err != nil {
		return nil, err
	}
	p.all = p.needed(p.outputs)
	return p, nil
}

// checkDecoupled requires every decoupled step to be a cut of the graph:
// every other step comes before it (it reads, through some chain, what
// they write) or after it. The steps after it then run once per response
// of it, and no step runs more than once per response; a step beside it
// (neither before nor after) would have to run once for all responses or
// once for each, and this server does neither.
func (p *Plan) checkDecoupled() error {
	reach := func(from int, edges func(int) []int) []bool {
		seen := make([]bool, len(p.steps))
		stack := []int{from}
		for len(stack) > 0 {
			i := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, j := range edges(i) {
				if !seen[j] {
					seen[j] = true
					stack = append(stack, j)
				}
			}
		}
		return seen
	}
	for d, st := range p.steps {
		if !st.decoupled {
			continue
		}
		before := reach(d, func(i int) []int { return p.steps[i].deps })
		after := reach(d, func(i int) []int { return p.steps[i].next })
		for i := range p.steps {
			if i != d && !before[i] && !after[i] {
				return fmt.Errorf("in ensemble %s, step %d (model %s) runs beside decoupled step %d (model %s), neither before nor after it: this server runs the steps after a decoupled step once per response, and needs every other step before it", p.name, i, p.steps[i].model, d, st.model)
			}
		}
	}
	return nil
}

// mapInputs checks a step's input_map against the composing model's inputs.
func (p *Plan) mapInputs(i int, s *modelconfig.ModelEnsembling_Step, mc *modelconfig.ModelConfig, nodes map[string]node, id func(string) int) ([]binding, error) {
	model := s.GetModelName()
	ins := map[string]*modelconfig.ModelInput{}
	for _, in := range mc.GetInput() {
		ins[in.GetName()] = in
	}
	var reads []binding
	for _, k := range slices.Sorted(maps.Keys(s.GetInputMap())) {
		t := s.GetInputMap()[k]
		in, ok := ins[k]
		if !ok {
			return nil, fmt.Errorf("in ensemble %s, ensemble tensor %s is mapping to non-existing input %s in model %s", p.name, t, k, model)
		}
		n := newNode(model, mc.GetMaxBatchSize() > 0, in.GetDataType(), in.GetDims())
		if err := p.agree(t, nodes, n); err != nil {
			return nil, err
		}
		reads = append(reads, binding{name: k, tensor: id(t)})
	}
	for _, in := range mc.GetInput() {
		if _, ok := s.GetInputMap()[in.GetName()]; !ok && !in.GetOptional() {
			return nil, fmt.Errorf("in ensemble %s, input %s in model %s is not mapped to any ensemble tensors (step %d)", p.name, in.GetName(), model, i)
		}
	}
	return reads, nil
}

// mapOutputs checks a step's output_map against the composing model's
// outputs.
func (p *Plan) mapOutputs(s *modelconfig.ModelEnsembling_Step, mc *modelconfig.ModelConfig, nodes map[string]node, id func(string) int) ([]binding, error) {
	model := s.GetModelName()
	outs := map[string]*modelconfig.ModelOutput{}
	for _, out := range mc.GetOutput() {
		outs[out.GetName()] = out
	}
	var writes []binding
	for _, k := range slices.Sorted(maps.Keys(s.GetOutputMap())) {
		t := s.GetOutputMap()[k]
		out, ok := outs[k]
		if !ok {
			return nil, fmt.Errorf("in ensemble %s, ensemble tensor %s is mapped from non-existing output %s in model %s", p.name, t, k, model)
		}
		n := newNode(model, mc.GetMaxBatchSize() > 0, out.GetDataType(), out.GetDims())
		if err := p.agree(t, nodes, n); err != nil {
			return nil, err
		}
		writes = append(writes, binding{name: k, tensor: id(t)})
	}
	return writes, nil
}

// agree records what a model says of ensemble tensor t, or checks it
// against what was inferred before: the datatypes must be equal and the
// shapes equal up to -1 wildcards, compared with or without the batch
// dimension (a non-batching model's [-1, d...] matches a batching model's
// [d...]).
func (p *Plan) agree(t string, nodes map[string]node, n node) error {
	prev, ok := nodes[t]
	if !ok {
		nodes[t] = n
		return nil
	}
	if prev.dtype != n.dtype {
		return fmt.Errorf("in ensemble %s, ensemble tensor %s: inconsistent data type: %s is inferred from model %s while %s is inferred from model %s",
			p.name, t, prev.dtype, prev.model, n.dtype, n.model)
	}
	if !dimsMatch(prev.dims, n.dims) && !dimsMatch(prev.fullDims, n.fullDims) {
		return fmt.Errorf("in ensemble %s, ensemble tensor %s: inconsistent shape: %s is inferred from model %s while %s is inferred from model %s",
			p.name, t, dimsString(prev.fullDims), prev.model, dimsString(n.fullDims), n.model)
	}
	return nil
}

// dimsMatch compares shapes, -1 matching any size.
func dimsMatch(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] && a[i] != -1 && b[i] != -1 {
			return false
		}
	}
	return true
}

// dimsString prints dims as Triton's messages do: "[ -1 3 ]".
func dimsString(dims []int64) string {
	var b strings.Builder
	b.WriteString("[ ")
	for _, d := range dims {
		fmt.Fprintf(&b, "%d ", d)
	}
	b.WriteString("]")
	return b.String()
}

// shapeOf is a tensor's shape as the ensemble sees it: its reshape when it
// has one.
func shapeOf(dims []int64, r *modelconfig.ModelTensorReshape) []int64 {
	if r != nil {
		return r.GetShape()
	}
	return dims
}

// version turns a step's model_version (-1: latest) into a request version
// (0: the version policy's choice).
func version(v int64) int64 { return max(v, 0) }

// forwarding tells what of an ensemble request's scheduling a composing
// model accepts: priorities up to its number of levels, and a timeout
// where the queue policy of the chosen level allows an override. A model
// without a dynamic batcher ignores both, so both pass.
func forwarding(mc *modelconfig.ModelConfig) (maxPriority uint64, batching bool, timeoutAllowed func(uint64) bool) {
	db := mc.GetDynamicBatching()
	if db == nil {
		return 0, false, func(uint64) bool { return true }
	}
	levels := max(db.GetPriorityLevels(), 1)
	def := db.GetDefaultPriorityLevel()
	policies := db.GetPriorityQueuePolicy()
	return levels, true, func(p uint64) bool {
		if p == 0 {
			p = def
		}
		pol, ok := policies[p]
		if !ok {
			pol = db.GetDefaultQueuePolicy()
		}
		return pol.GetAllowTimeoutOverride()
	}
}

// scheduling returns the priority and timeout a step's request carries.
func (st *step) scheduling(priority uint64, timeout time.Duration) (uint64, time.Duration) {
	if !st.batching {
		return priority, timeout
	}
	if priority > st.maxPriority {
		priority = 0
	}
	if timeout > 0 && !st.timeoutAllowed(priority) {
		timeout = 0
	}
	return priority, timeout
}

// Steps is the number of steps of the plan.
func (p *Plan) Steps() int { return len(p.steps) }

// Models lists the composing models with the version each step calls (0:
// the latest), in step order, duplicates removed.
func (p *Plan) Models() []ModelRef {
	var refs []ModelRef
	for _, st := range p.steps {
		r := ModelRef{Name: st.model, Version: st.version}
		if !slices.Contains(refs, r) {
			refs = append(refs, r)
		}
	}
	return refs
}

// ModelRef names a composing model version (Version 0: the latest).
type ModelRef struct {
	Name    string
	Version int64
}

// need is what a request needs run and kept: the steps that lead to its
// requested outputs and the tensors they produce.
type need struct {
	steps   []bool // by step index
	tensors []bool // by tensor id
}

// needed returns what producing the given ensemble tensors takes.
func (p *Plan) needed(want []int) need {
	n := need{steps: make([]bool, len(p.steps)), tensors: make([]bool, len(p.tensors))}
	var visit func(t int)
	visit = func(t int) {
		if n.tensors[t] {
			return
		}
		n.tensors[t] = true
		s := p.producer[t]
		if s < 0 || n.steps[s] {
			return
		}
		n.steps[s] = true
		for _, r := range p.steps[s].reads {
			visit(r.tensor)
		}
	}
	for _, t := range want {
		visit(t)
	}
	return n
}
