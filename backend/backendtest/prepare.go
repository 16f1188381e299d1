package backendtest

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing/fstest"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/proto"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/tensor"
)

// suite is one run of the kit: the backend and the models, checked and
// compiled.
type suite struct {
	b      backend.Backend
	models []*model
}

// model is a [Model] compiled for the checks: its configuration as the
// server reads it (the signature) and its requests as the backend will
// see them.
type model struct {
	name     string
	version  int64
	cfg      *modelconfig.ModelConfig // the kit's copy, with at least two instances
	fsys     fs.FS
	dir      string
	timeout  time.Duration
	maxBatch int64
	inputs   []tensorSpec
	outputs  []tensorSpec
	extra    map[string]bool // sequence control and state inputs: not in the config's input list
	states   map[string]bool // sequence state outputs: not in the config's output list
	layouts  map[string]backend.Layout
	specs    []instanceSpec
	good     []*request // Requests, then the one-output variants
	requests int        // how many of good are Requests
	bad      []*request // Failing
}

// tensorSpec is a config input or output.
type tensorSpec struct {
	name     string
	dtype    tensor.DataType
	dims     tensor.Shape // without the batch dimension
	reshape  tensor.Shape // what the backend sees instead of dims; nil when none
	optional bool
	ragged   bool
	shared   bool // one value for the whole batch: no batch dimension
}

// request is a [Request] as the backend sees it.
type request struct {
	label   string          // "Requests[2]", "Requests[2]/OUTPUT1" (a variant asking for OUTPUT1), "Failing[0]"
	inputs  []tensor.Tensor // reshaped as the config asks
	orig    [][]byte        // copies of the inputs' data, to see writes
	outputs []string        // the outputs asked for; nil for all
	wanted  []string        // the outputs it must get, in config order
	rows    int64           // BatchSize
	check   func([]tensor.Tensor) error
	failing bool
}

func newSuite(b backend.Backend, models []Model) (*suite, error) {
	if b == nil {
		return nil, errors.New("backendtest: nil Backend")
	}
	if len(models) == 0 {
		return nil, errors.New("backendtest: no models to check")
	}
	s := &suite{b: b}
	names := map[string]bool{}
	for i := range models {
		m, err := compile(&models[i])
		if err != nil {
			return nil, fmt.Errorf("backendtest: models[%d]: %w", i, err)
		}
		if names[m.name] {
			return nil, fmt.Errorf("backendtest: models[%d]: model %q is given twice", i, m.name)
		}
		names[m.name] = true
		s.models = append(s.models, m)
	}
	return s, nil
}

func compile(mm *Model) (*model, error) {
	if mm.Config == nil {
		return nil, errors.New("no Config")
	}
	m := &model{
		name:     mm.Config.GetName(),
		version:  mm.Version,
		cfg:      proto.CloneOf(mm.Config),
		fsys:     mm.FS,
		dir:      mm.Dir,
		timeout:  mm.Timeout,
		maxBatch: int64(mm.Config.GetMaxBatchSize()),
	}
	if m.name == "" {
		return nil, errors.New("the Config has no name")
	}
	if m.version == 0 {
		m.version = 1
	}
	if m.version < 0 {
		return nil, fmt.Errorf("model %q: version %d is not positive", m.name, m.version)
	}
	if m.timeout <= 0 {
		m.timeout = DefaultTimeout
	}
	if m.fsys == nil && m.dir != "" {
		m.fsys = os.DirFS(m.dir)
	}
	if m.fsys == nil {
		m.fsys = fstest.MapFS{}
	}
	if m.maxBatch < 0 {
		return nil, fmt.Errorf("model %q: max_batch_size %d is negative", m.name, m.maxBatch)
	}
	m.compileSignature()
	if err := m.compileLayouts(); err != nil {
		return nil, fmt.Errorf("model %q: %w", m.name, err)
	}
	m.compileInstances()
	if len(mm.Requests) == 0 {
		return nil, fmt.Errorf("model %q: no Requests; the kit needs at least one request that must succeed", m.name)
	}
	for i, r := range mm.Requests {
		req, err := m.request(fmt.Sprintf("Requests[%d]", i), r, false)
		if err != nil {
			return nil, err
		}
		m.good = append(m.good, req)
	}
	m.requests = len(m.good)
	// A request for every output also goes out asking for each one alone:
	// asking for a subset must still get that subset.
	if len(m.outputs) > 1 {
		for i, r := range mm.Requests {
			if len(r.Outputs) > 0 {
				continue
			}
			for _, o := range m.outputs {
				v := r
				v.Outputs = []string{o.name}
				req, err := m.request(fmt.Sprintf("Requests[%d]/%s", i, o.name), v, false)
				if err != nil {
					return nil, err
				}
				m.good = append(m.good, req)
			}
		}
	}
	for i, r := range mm.Failing {
		req, err := m.request(fmt.Sprintf("Failing[%d]", i), r, true)
		if err != nil {
			return nil, err
		}
		m.bad = append(m.bad, req)
	}
	return m, nil
}

func (m *model) compileSignature() {
	for _, in := range m.cfg.GetInput() {
		ts := tensorSpec{
			name:     in.GetName(),
			dtype:    tensor.DataType(in.GetDataType()),
			dims:     tensor.Shape(in.GetDims()),
			optional: in.GetOptional(),
			ragged:   in.GetAllowRaggedBatch(),
		}
		if r := in.GetReshape(); r != nil {
			ts.reshape = append(tensor.Shape{}, r.GetShape()...) // non-nil even for a scalar
		}
		m.inputs = append(m.inputs, ts)
	}
	for _, out := range m.cfg.GetOutput() {
		ts := tensorSpec{name: out.GetName(), dtype: tensor.DataType(out.GetDataType()), dims: tensor.Shape(out.GetDims())}
		if r := out.GetReshape(); r != nil {
			ts.reshape = append(tensor.Shape{}, r.GetShape()...)
		}
		m.outputs = append(m.outputs, ts)
	}
	m.extra, m.states = map[string]bool{}, map[string]bool{}
	seq := m.cfg.GetSequenceBatching()
	for _, c := range seq.GetControlInput() {
		m.extra[c.GetName()] = true
	}
	for _, st := range seq.GetState() {
		m.extra[st.GetInputName()] = true
		m.states[st.GetOutputName()] = true
	}
}

// compileLayouts reads the layout parameters of a batching model, as the
// server does when it loads one.
func (m *model) compileLayouts() error {
	if m.maxBatch == 0 {
		return nil
	}
	set := func(name string, l backend.Layout) {
		if m.layouts == nil {
			m.layouts = map[string]backend.Layout{}
		}
		m.layouts[name] = l
	}
	for _, st := range m.cfg.GetSequenceBatching().GetState() {
		axis, err := backend.StateBatchAxis(m.cfg, st)
		if err != nil {
			return err
		}
		if axis > 0 {
			set(st.GetInputName(), backend.Layout{Axis: axis})
			set(st.GetOutputName(), backend.Layout{Axis: axis})
		}
	}
	for i := range m.inputs {
		if backend.SharedInput(m.cfg, m.inputs[i].name) {
			m.inputs[i].shared = true
			set(m.inputs[i].name, backend.Layout{Shared: true})
		}
	}
	return nil
}

// compileInstances lists the instances of the kit's copy of the config,
// named and numbered as the server does; the kit runs at least two, so
// that instances run in parallel.
func (m *model) compileInstances() {
	groups := m.cfg.GetInstanceGroup()
	if len(groups) == 0 {
		m.cfg.InstanceGroup = []*modelconfig.ModelInstanceGroup{{Name: m.name, Kind: modelconfig.ModelInstanceGroup_KIND_CPU}}
		groups = m.cfg.InstanceGroup
	}
	total := 0
	for _, g := range groups {
		if g.GetCount() < 1 {
			g.Count = 1
		}
		total += int(g.GetCount())
	}
	if total < 2 {
		groups[0].Count += int32(2 - total)
	}
	for gi, g := range groups {
		name := g.GetName()
		if name == "" {
			name = m.name + "_" + strconv.Itoa(gi)
		}
		kind := g.GetKind()
		if kind == modelconfig.ModelInstanceGroup_KIND_AUTO {
			kind = modelconfig.ModelInstanceGroup_KIND_CPU // the server's choice without GPUs
		}
		for i := range int(g.GetCount()) {
			dev := -1
			if kind == modelconfig.ModelInstanceGroup_KIND_GPU {
				dev = 0
				if gpus := g.GetGpus(); len(gpus) > 0 {
					dev = int(gpus[i%len(gpus)])
				}
			}
			m.specs = append(m.specs, instanceSpec{group: gi, spec: backend.InstanceSpec{Name: name + "_" + strconv.Itoa(i), Kind: kind, Index: i, DeviceID: dev}})
		}
	}
}

// instanceSpec is an instance to create: its InstanceSpec without the
// group, which points into the configuration of the loaded version.
type instanceSpec struct {
	group int
	spec  backend.InstanceSpec
}

func (m *model) input(name string) *tensorSpec {
	for i := range m.inputs {
		if m.inputs[i].name == name {
			return &m.inputs[i]
		}
	}
	return nil
}

func (m *model) output(name string) *tensorSpec {
	for i := range m.outputs {
		if m.outputs[i].name == name {
			return &m.outputs[i]
		}
	}
	return nil
}

// request checks r as the server checks a client's request, and returns
// it as the backend will see it: batch size computed, inputs reshaped.
// Its errors are the caller's mistakes, not the backend's.
func (m *model) request(label string, r Request, failing bool) (*request, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("model %q: %s: %s", m.name, label, fmt.Sprintf(format, args...))
	}
	req := &request{label: label, outputs: r.Outputs, check: r.Check, failing: failing, rows: 1}
	var batch int64 = 1
	batched := 0
	for i, in := range r.Inputs {
		for j := range i {
			if r.Inputs[j].Name == in.Name {
				return nil, fail("input %q is given twice", in.Name)
			}
		}
		if err := in.Validate(); err != nil {
			return nil, fail("input %q: %v", in.Name, err)
		}
		ts := m.input(in.Name)
		if ts == nil {
			if !m.extra[in.Name] {
				return nil, fail("input %q is not an input of the model", in.Name)
			}
			req.inputs = append(req.inputs, in)
			continue
		}
		if in.DataType != ts.dtype {
			return nil, fail("input %q has datatype %v, the config declares %v", in.Name, in.DataType, ts.dtype)
		}
		if m.maxBatch > 0 && !ts.shared {
			if len(in.Shape) != len(ts.dims)+1 || !in.Shape[1:].Matches(ts.dims) {
				return nil, fail("input %q has shape %v, the config expects %v (the batch dimension first, as max_batch_size is %d)",
					in.Name, in.Shape, append(tensor.Shape{-1}, ts.dims...), m.maxBatch)
			}
			b := in.Shape[0]
			switch {
			case b < 1 || b > m.maxBatch:
				return nil, fail("input %q has batch size %d; max_batch_size is %d", in.Name, b, m.maxBatch)
			case batched > 0 && b != batch:
				return nil, fail("input %q has batch size %d, another input %d", in.Name, b, batch)
			}
			batch = b
			batched++
		} else if !in.Shape.Matches(ts.dims) {
			return nil, fail("input %q has shape %v, the config expects %v", in.Name, in.Shape, ts.dims)
		}
		if ts.reshape != nil {
			in.Shape = reshape(in.Shape, ts.dims, ts.reshape, m.maxBatch > 0 && !ts.shared)
		}
		req.inputs = append(req.inputs, in)
	}
	for i := range m.inputs {
		ts := &m.inputs[i]
		if !ts.optional && !slices.ContainsFunc(r.Inputs, func(t tensor.Tensor) bool { return t.Name == ts.name }) {
			return nil, fail("required input %q is missing", ts.name)
		}
	}
	for _, o := range r.Outputs {
		if m.output(o) == nil {
			return nil, fail("output %q is not an output of the model", o)
		}
	}
	if m.maxBatch > 0 {
		req.rows = batch
	}
	for _, o := range m.outputs {
		if len(r.Outputs) == 0 || slices.Contains(r.Outputs, o.name) {
			req.wanted = append(req.wanted, o.name)
		}
	}
	for _, in := range req.inputs {
		req.orig = append(req.orig, bytes.Clone(in.Data))
	}
	return req, nil
}

// reshape returns shape with its dims (after the batch dimension when
// batched) replaced by to, the -1 entries of to taking, in order, the
// values of the -1 entries of from.
func reshape(shape, from, to tensor.Shape, batched bool) tensor.Shape {
	out := make(tensor.Shape, 0, len(to)+1)
	rest := shape
	if batched {
		out = append(out, shape[0])
		rest = shape[1:]
	}
	var vars []int64
	for i, d := range from {
		if d == -1 && i < len(rest) {
			vars = append(vars, rest[i])
		}
	}
	for _, d := range to {
		if d == -1 && len(vars) > 0 {
			d, vars = vars[0], vars[1:]
		}
		out = append(out, d)
	}
	return out
}

// compatible reports whether two requests may share a batch, as the
// dynamic batcher decides: the same inputs with the same non-batch
// dimensions (any for a ragged input; the same value for a shared one).
func (m *model) compatible(a, b *request) bool {
	if len(a.inputs) != len(b.inputs) {
		return false
	}
	for i := range a.inputs {
		x := &a.inputs[i]
		j := slices.IndexFunc(b.inputs, func(t tensor.Tensor) bool { return t.Name == x.Name })
		if j < 0 {
			return false
		}
		y := &b.inputs[j]
		if len(x.Shape) != len(y.Shape) {
			return false
		}
		ts := m.input(x.Name)
		if ts != nil && ts.shared {
			if !x.Shape.Equal(y.Shape) || !bytes.Equal(x.Data, y.Data) {
				return false
			}
			continue
		}
		if len(x.Shape) == 0 {
			continue
		}
		if axis := m.layouts[x.Name].Axis; axis > 0 && axis < len(x.Shape) {
			if !x.Shape[:axis].Equal(y.Shape[:axis]) || !x.Shape[axis+1:].Equal(y.Shape[axis+1:]) {
				return false
			}
			continue
		}
		if !x.Shape[1:].Equal(y.Shape[1:]) && (ts == nil || !ts.ragged) {
			return false
		}
	}
	return true
}

// group packs reqs, in order, into batches of two or more requests that
// may share a batch (first fit, at most max_batch_size rows). A model that
// does not batch gets none.
func (m *model) group(reqs []*request) [][]*request {
	if m.maxBatch == 0 {
		return nil
	}
	var groups [][]*request
	rows := []int64{}
next:
	for _, r := range reqs {
		for g := range groups {
			if rows[g]+r.rows <= m.maxBatch && m.compatible(groups[g][0], r) {
				groups[g] = append(groups[g], r)
				rows[g] += r.rows
				continue next
			}
		}
		groups = append(groups, []*request{r})
		rows = append(rows, r.rows)
	}
	return slices.DeleteFunc(groups, func(g []*request) bool { return len(g) < 2 })
}

// newBatch builds the batch the server would hand to Execute for reqs:
// fresh backend.Requests over the (shared, read-only) input data.
func (m *model) newBatch(reqs []*request) (*backend.Batch, []*backend.Request) {
	brs := make([]*backend.Request, len(reqs))
	for i, r := range reqs {
		brs[i] = &backend.Request{
			ID:               r.label,
			Inputs:           slices.Clone(r.inputs),
			RequestedOutputs: r.outputs,
			BatchSize:        r.rows,
		}
	}
	b := backend.NewBatch(m.maxBatch > 0, brs...)
	b.SetLayouts(m.layouts)
	return b, brs
}

// spec returns the ModelSpec of version v, with a copy of the config of
// its own, as the server gives each version: the model's own folder for
// its version, and the same folder under the number v, through FS alone,
// for the others.
func (m *model) spec(v int64) *backend.ModelSpec {
	s := &backend.ModelSpec{Name: m.name, Version: v, Config: proto.CloneOf(m.cfg), FS: m.fsys, Dir: m.dir, Logger: zap.NewNop()}
	if v != m.version {
		s.FS = versionFS{fsys: m.fsys, from: strconv.FormatInt(v, 10), to: strconv.FormatInt(m.version, 10)}
		s.Dir = ""
	}
	return s
}

// versionFS shows the version folder to under the name from.
type versionFS struct {
	fsys     fs.FS
	from, to string
}

func (v versionFS) Open(name string) (fs.File, error) {
	if name == v.from || strings.HasPrefix(name, v.from+"/") {
		name = v.to + name[len(v.from):]
	}
	return v.fsys.Open(name)
}

// labels lists the labels of reqs, for messages.
func labels(reqs []*request) string {
	names := make([]string, len(reqs))
	for i, r := range reqs {
		names[i] = r.label
	}
	return "[" + strings.Join(names, " ") + "]"
}
