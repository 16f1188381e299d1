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
	"github.com/triton-go/triton/internal/signature"
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
	sig      *signature.Signature // what the server checks requests and outputs against
	extra    map[string]bool      // sequence control and state inputs: not in the config's input list
	specs    []instanceSpec
	good     []*request // Requests, then the one-output variants
	requests int        // how many of good are Requests
	bad      []*request // Failing
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
		name:    mm.Config.GetName(),
		version: mm.Version,
		cfg:     proto.CloneOf(mm.Config),
		fsys:    mm.FS,
		dir:     mm.Dir,
		timeout: mm.Timeout,
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
	if mb := m.cfg.GetMaxBatchSize(); mb < 0 {
		return nil, fmt.Errorf("model %q: max_batch_size %d is negative", m.name, mb)
	}
	sig, err := signature.Compile(m.cfg)
	if err != nil {
		return nil, fmt.Errorf("model %q: %w", m.name, err)
	}
	m.sig = sig
	m.extra = map[string]bool{}
	seq := m.cfg.GetSequenceBatching()
	for _, c := range seq.GetControlInput() {
		m.extra[c.GetName()] = true
	}
	for _, st := range seq.GetState() {
		m.extra[st.GetInputName()] = true
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
	if len(m.sig.Outputs) > 1 {
		for i, r := range mm.Requests {
			if len(r.Outputs) > 0 {
				continue
			}
			for _, o := range m.sig.Outputs {
				v := r
				v.Outputs = []string{o.Name}
				req, err := m.request(fmt.Sprintf("Requests[%d]/%s", i, o.Name), v, false)
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

// request checks r as the server checks a client's request, and returns
// it as the backend will see it: batch size computed, inputs reshaped.
// The control and state inputs of a sequence model, which the server adds
// itself, are the caller's to give here, and pass unchecked but for their
// framing. Its errors are the caller's mistakes, not the backend's.
func (m *model) request(label string, r Request, failing bool) (*request, error) {
	fail := func(err error) error { return fmt.Errorf("model %q: %s: %w", m.name, label, err) }
	var inputs, extra []tensor.Tensor
	for _, in := range r.Inputs {
		if m.sig.Input(in.Name) == nil && m.extra[in.Name] {
			if err := in.Validate(); err != nil {
				return nil, fail(fmt.Errorf("input '%s': %w", in.Name, err))
			}
			extra = append(extra, in)
			continue
		}
		inputs = append(inputs, in)
	}
	batch, err := m.sig.CheckInputs(inputs)
	if err == nil {
		err = m.sig.CheckOutputs(r.Outputs)
	}
	if err != nil {
		return nil, fail(err)
	}
	req := &request{label: label, outputs: r.Outputs, check: r.Check, failing: failing, rows: 1}
	if m.sig.MaxBatch > 0 {
		req.rows = batch
	}
	req.inputs = append(m.sig.ReshapeInputs(nil, inputs), extra...)
	for _, o := range m.sig.Outputs {
		if len(r.Outputs) == 0 || slices.Contains(r.Outputs, o.Name) {
			req.wanted = append(req.wanted, o.Name)
		}
	}
	for _, in := range req.inputs {
		req.orig = append(req.orig, bytes.Clone(in.Data))
	}
	return req, nil
}

// compatible reports whether two requests may share a batch, as the
// dynamic batcher decides.
func (m *model) compatible(a, b *request) bool { return m.sig.Compatible(a.inputs, b.inputs) }

// group packs reqs, in order, into batches of two or more requests that
// may share a batch (first fit, at most max_batch_size rows). A model that
// does not batch gets none.
func (m *model) group(reqs []*request) [][]*request {
	if m.sig.MaxBatch == 0 {
		return nil
	}
	var groups [][]*request
	rows := []int64{}
next:
	for _, r := range reqs {
		for g := range groups {
			if rows[g]+r.rows <= m.sig.MaxBatch && m.compatible(groups[g][0], r) {
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
	b := backend.NewBatch(m.sig.MaxBatch > 0, brs...)
	b.SetLayouts(m.sig.Layouts)
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
