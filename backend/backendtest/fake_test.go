package backendtest_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/backend/backendtest"
	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/repository"
	"github.com/triton-go/triton/tensor"
)

// This file is a fake backend for testing the kit: a correct one, and the
// same with one fault at a time, each a contract violation that one of the
// kit's checks must catch. The fake also records every broken promise of
// the server's that it sees, so that the tests can check the kit keeps
// them.

// fault is a contract violation of the fake's.
type fault string

const (
	correct          fault = ""
	serialLoad       fault = "Load assumes no other Load runs"
	changesConfig    fault = "Load changes ModelSpec.Config"
	sharedScratch    fault = "instances share a scratch buffer"
	wrongDatatype    fault = "OUTPUT0 is INT32"
	wrongBatchDim    fault = "outputs always have batch size 1"
	ignoresReshape   fault = "OUTPUT1 has the config's dims, not its reshape"
	missingOutput    fault = "only OUTPUT0 is produced"
	dropsSubsets     fault = "a request asking for some outputs gets none"
	badFraming       fault = "BYTES output with a stray byte"
	wrongValues      fault = "OUTPUT0 is off by one"
	writesInput      fault = "Execute writes to INPUT0"
	executePanics    fault = "Execute panics"
	nilInstance      fault = "NewInstance returns nil, nil"
	warmupFails      fault = "Warmup fails"
	notReady         fault = "Ready reports the instance not ready"
	closeErrors      fault = "instance Close returns an error"
	closeHangs       fault = "instance Close hangs"
	modelClosePanics fault = "model Close panics"
	hangsOnCancel    fault = "Execute ignores a cancelled context and hangs"
	unwrappedCancel  fault = "Execute returns an error that does not wrap ctx.Err()"
	pretendsOnCancel fault = "Execute returns nil without outputs when ctx is done"
	failsWholeBatch  fault = "a bad request fails the whole batch"
	succeedsBad      fault = "a bad request is not failed"
	failsNeighbours  fault = "a bad request fails the other requests too"
)

const addConfig = `
name: "add"
backend: "fake"
max_batch_size: 8
input [
  { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] },
  { name: "INPUT1" data_type: TYPE_FP32 dims: [ 4 ] reshape: { shape: [ 2, 2 ] } }
]
output [
  { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] },
  { name: "OUTPUT1" data_type: TYPE_FP32 dims: [ 4 ] reshape: { shape: [ 2, 2 ] } }
]
`

const mirrorConfig = `
name: "mirror"
backend: "fake"
input [ { name: "IN" data_type: TYPE_STRING dims: [ -1 ] } ]
output [ { name: "OUT" data_type: TYPE_STRING dims: [ -1 ] } ]
instance_group [ { kind: KIND_CPU count: 3 } ]
`

func config(t *testing.T, text string) *modelconfig.ModelConfig {
	t.Helper()
	cfg, err := repository.ParseConfig("config.pbtxt", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	repository.Normalize(cfg, repository.NormalizeOptions{})
	if err := repository.Validate("config.pbtxt", cfg, repository.ValidateOptions{}); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func f32(t *testing.T, name string, rows int64, vals ...float32) tensor.Tensor {
	t.Helper()
	ts, err := tensor.From(name, tensor.Shape{rows, 4}, vals)
	if err != nil {
		t.Fatal(err)
	}
	return ts
}

// addRequest is a request of rows rows to the add model, INPUT0 from base
// up and INPUT1 all ones, with a Check of OUTPUT0 = INPUT0 + INPUT1 and
// OUTPUT1 = INPUT0 - INPUT1.
func addRequest(t *testing.T, rows int64, base float32) backendtest.Request {
	a, b := make([]float32, rows*4), make([]float32, rows*4)
	for i := range a {
		a[i], b[i] = base+float32(i), 1
	}
	return backendtest.Request{
		Inputs: []tensor.Tensor{f32(t, "INPUT0", rows, a...), f32(t, "INPUT1", rows, b...)},
		Check: func(outs []tensor.Tensor) error {
			for _, o := range outs {
				v, err := tensor.View[float32](o)
				if err != nil {
					return err
				}
				for i := range a {
					want := a[i] + b[i]
					if o.Name == "OUTPUT1" {
						want = a[i] - b[i]
					}
					if v[i] != want {
						return fmt.Errorf("%s[%d] = %v, want %v", o.Name, i, v[i], want)
					}
				}
			}
			return nil
		},
	}
}

func addModel(t *testing.T) backendtest.Model {
	bad := addRequest(t, 1, 0)
	bad.Inputs[0] = f32(t, "INPUT0", 1, float32(math.NaN()), 0, 0, 0)
	bad.Check = nil
	return backendtest.Model{
		Config:   config(t, addConfig),
		Requests: []backendtest.Request{addRequest(t, 1, 0), addRequest(t, 2, 100), addRequest(t, 3, 200)},
		Failing:  []backendtest.Request{bad},
	}
}

func mirrorModel(t *testing.T) backendtest.Model {
	req := func(vals ...string) backendtest.Request {
		in, err := tensor.FromStrings("IN", tensor.Shape{int64(len(vals))}, vals)
		if err != nil {
			t.Fatal(err)
		}
		return backendtest.Request{Inputs: []tensor.Tensor{in}, Check: func(outs []tensor.Tensor) error {
			got, err := tensor.Strings(outs[0])
			if err != nil {
				return err
			}
			if !slices.Equal(got, vals) {
				return fmt.Errorf("OUT = %q, want %q", got, vals)
			}
			return nil
		}}
	}
	return backendtest.Model{Config: config(t, mirrorConfig), Requests: []backendtest.Request{req("a", "bc"), req("", "x\x00y", "z")}}
}

// fake is the fake backend.
type fake struct {
	fault fault
	// hangsOnCancel, closeHangs: the first Execute with a cancelled
	// context, or the first instance Close, sends on entered, returns when
	// release closes, and sends on returned.
	release, entered, returned chan struct{}
	hangs                      atomic.Bool

	loading    atomic.Int32
	firstLoad  atomic.Bool
	secondLoad chan struct{}
	secondOnce sync.Once

	mu sync.Mutex
	// mu protects the following.
	models     []*fakeModel
	violations []string
}

func newFake(f fault) *fake {
	return &fake{fault: f, release: make(chan struct{}), entered: make(chan struct{}, 1), returned: make(chan struct{}, 1), secondLoad: make(chan struct{})}
}

// violation records a broken promise of the server's.
func (f *fake) violation(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.violations = append(f.violations, fmt.Sprintf(format, args...))
}

// promises checks the kit kept the server's promises: nothing the fake saw
// broke one, and every model and instance was closed, exactly once.
func (f *fake) promises(t *testing.T, allClosed bool) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, v := range f.violations {
		t.Error("the kit broke a promise: " + v)
	}
	if !allClosed {
		return
	}
	for _, m := range f.models {
		if n := m.closes.Load(); n != 1 {
			t.Errorf("model %s version %d closed %d times", m.name, m.version, n)
		}
		m.mu.Lock()
		for _, i := range m.insts {
			if n := i.closes.Load(); n != 1 {
				t.Errorf("instance %s of model %s version %d closed %d times", i.name, m.name, m.version, n)
			}
		}
		m.mu.Unlock()
	}
}

var _ backend.Backend = (*fake)(nil)

func (f *fake) Load(ctx context.Context, spec *backend.ModelSpec) (backend.Model, error) {
	n := f.loading.Add(1)
	defer f.loading.Add(-1)
	if f.fault == serialLoad {
		if f.firstLoad.CompareAndSwap(false, true) {
			// Wait for a second Load, so that a kit that loads in
			// parallel is sure to be seen doing it.
			select {
			case <-f.secondLoad:
			case <-time.After(10 * time.Second):
			}
		} else {
			f.secondOnce.Do(func() { close(f.secondLoad) })
		}
		if n > 1 || f.loading.Load() > 1 {
			return nil, errors.New("fake: Load called while another Load runs")
		}
	}
	if f.fault == changesConfig {
		spec.Config.MaxBatchSize = 1
	}
	m := &fakeModel{f: f, name: spec.Name, version: spec.Version, second: make(chan struct{}), read: make(chan struct{})}
	f.mu.Lock()
	f.models = append(f.models, m)
	f.mu.Unlock()
	return m, nil
}

type fakeModel struct {
	f       *fake
	name    string
	version int64
	closes  atomic.Int32
	live    atomic.Int32 // instances created and not closed
	running atomic.Int32 // Execute calls in progress on its instances
	most    atomic.Int32 // the most Execute calls seen in progress at once

	// sharedScratch
	started    atomic.Bool
	second     chan struct{} // closed when a second Execute has written
	read       chan struct{} // closed when the first has read it
	secondOnce sync.Once

	mu sync.Mutex
	// mu protects the following.
	insts   []*fakeInstance
	scratch []float32
}

var _ backend.Model = (*fakeModel)(nil)

func (m *fakeModel) NewInstance(ctx context.Context, spec backend.InstanceSpec) (backend.Instance, error) {
	if m.closes.Load() > 0 {
		m.f.violation("NewInstance on model %s after its Close", m.name)
	}
	if m.f.fault == nilInstance {
		return nil, nil
	}
	if spec.Group == nil || spec.Index >= int(spec.Group.GetCount()) {
		m.f.violation("instance %s: index %d outside its group %v", spec.Name, spec.Index, spec.Group)
	}
	i := &fakeInstance{m: m, name: spec.Name}
	m.live.Add(1)
	m.mu.Lock()
	m.insts = append(m.insts, i)
	m.mu.Unlock()
	return i, nil
}

func (m *fakeModel) Close() error {
	if n := m.closes.Add(1); n > 1 {
		m.f.violation("model %s version %d closed %d times", m.name, m.version, n)
	}
	if n := m.live.Load(); n != 0 {
		m.f.violation("model %s version %d closed with %d instances open", m.name, m.version, n)
	}
	if m.f.fault == modelClosePanics {
		panic("fake: model Close panics")
	}
	return nil
}

type fakeInstance struct {
	m      *fakeModel
	name   string
	busy   atomic.Int32
	closes atomic.Int32
}

var (
	_ backend.Instance = (*fakeInstance)(nil)
	_ backend.Warmer   = (*fakeInstance)(nil)
	_ backend.Readier  = (*fakeInstance)(nil)
)

func (i *fakeInstance) Warmup(ctx context.Context) error {
	if i.m.f.fault == warmupFails {
		return errors.New("fake: Warmup failed")
	}
	return nil
}

func (i *fakeInstance) Ready(ctx context.Context) error {
	if i.closes.Load() > 0 {
		i.m.f.violation("Ready on instance %s after its Close", i.name)
	}
	if i.m.f.fault == notReady {
		return errors.New("fake: not ready")
	}
	return nil
}

func (i *fakeInstance) Close() error {
	if n := i.closes.Add(1); n > 1 {
		i.m.f.violation("instance %s closed %d times", i.name, n)
	}
	if i.busy.Load() != 0 {
		i.m.f.violation("instance %s closed during Execute", i.name)
	}
	defer i.m.live.Add(-1) // after the hang: a model closed under it is a violation
	if f := i.m.f; f.fault == closeHangs && f.hangs.CompareAndSwap(false, true) {
		f.entered <- struct{}{}
		defer func() { f.returned <- struct{}{} }()
		<-f.release
	}
	if i.m.f.fault == closeErrors {
		return errors.New("fake: Close failed")
	}
	return nil
}

func (i *fakeInstance) Execute(ctx context.Context, b *backend.Batch) error {
	m, f := i.m, i.m.f
	if i.closes.Load() > 0 {
		f.violation("Execute on instance %s after its Close", i.name)
	}
	if n := i.busy.Add(1); n > 1 {
		f.violation("%d concurrent Execute calls on instance %s", n, i.name)
	}
	defer i.busy.Add(-1)
	n := m.running.Add(1)
	defer m.running.Add(-1)
	for {
		most := m.most.Load()
		if n <= most || m.most.CompareAndSwap(most, n) {
			break
		}
	}
	if f.fault == executePanics {
		var p *int
		_ = *p // a nil dereference, as backends panic
	}
	if err := ctx.Err(); err != nil {
		switch f.fault {
		case hangsOnCancel:
			if f.hangs.CompareAndSwap(false, true) {
				f.entered <- struct{}{}
				defer func() { f.returned <- struct{}{} }()
				<-f.release
			}
			return err
		case unwrappedCancel:
			return errors.New("fake: cancelled")
		case pretendsOnCancel:
			return nil
		}
		return err
	}
	if m.name == "mirror" {
		return i.mirror(b)
	}
	return i.add(b)
}

func (i *fakeInstance) mirror(b *backend.Batch) error {
	in, err := b.Input("IN")
	if err != nil {
		return err
	}
	out := in
	out.Name = "OUT"
	if i.m.f.fault == badFraming {
		out.Data = append(slices.Clip(in.Data), 0)
	}
	return b.SetOutput(out)
}

func (i *fakeInstance) add(b *backend.Batch) error {
	f := i.m.f
	x0, err := b.Input("INPUT0")
	if err != nil {
		return err
	}
	x1, err := b.Input("INPUT1")
	if err != nil {
		return err
	}
	if want := (tensor.Shape{b.Size(), 2, 2}); !x1.Shape.Equal(want) {
		return fmt.Errorf("fake: INPUT1 has shape %v, want the config's reshape %v", x1.Shape, want)
	}
	a, err := tensor.View[float32](x0)
	if err != nil {
		return err
	}
	c, err := tensor.View[float32](x1)
	if err != nil {
		return err
	}
	if f.fault == writesInput && len(b.Requests) == 1 {
		a[0]++
	}
	sum, diff := make([]float32, len(a)), make([]float32, len(a))
	for k := range a {
		sum[k], diff[k] = a[k]+c[k], a[k]-c[k]
	}
	if f.fault == wrongValues {
		sum[0]++
	}
	if f.fault == sharedScratch {
		i.shareScratch(sum)
	}
	// A request with a NaN in INPUT0 is bad.
	var row int64
	for _, r := range b.Requests {
		rows := a[row*4 : (row+r.BatchSize)*4]
		row += r.BatchSize
		if !slices.ContainsFunc(rows, func(v float32) bool { return v != v }) {
			continue
		}
		switch f.fault {
		case failsWholeBatch:
			return fmt.Errorf("fake: request %s has a NaN in INPUT0", r.ID)
		case succeedsBad:
		case failsNeighbours:
			for _, r := range b.Requests {
				r.Fail(fmt.Errorf("fake: a request of the batch has a NaN in INPUT0: %w", backend.ErrInvalidInput))
			}
		default:
			r.Fail(fmt.Errorf("fake: request %s has a NaN in INPUT0: %w", r.ID, backend.ErrInvalidInput))
		}
	}
	out0 := must(tensor.From("OUTPUT0", tensor.Shape{b.Size(), 4}, sum))
	out1 := must(tensor.From("OUTPUT1", tensor.Shape{b.Size(), 2, 2}, diff))
	switch f.fault {
	case wrongDatatype:
		out0.DataType = tensor.Int32
	case ignoresReshape:
		out1.Shape = tensor.Shape{b.Size(), 4}
	case wrongBatchDim:
		// Every request gets its first row only, as a batch of one.
		var row int64
		for _, r := range b.Requests {
			for _, o := range []tensor.Tensor{out0, out1} {
				part := must(o.SliceRows(row, row+1))
				if r.Wants(o.Name) {
					r.SetOutput(part)
				}
			}
			row += r.BatchSize
		}
		return nil
	}
	if err := b.SetOutput(out0); err != nil {
		return err
	}
	if f.fault == missingOutput {
		return nil
	}
	if err := b.SetOutput(out1); err != nil {
		return err
	}
	if f.fault == dropsSubsets {
		for _, r := range b.Requests {
			if len(r.RequestedOutputs) > 0 {
				r.Reset()
			}
		}
	}
	return nil
}

// shareScratch is the sharedScratch fault: the model's instances share a
// buffer, so that batches run in parallel see each other's results. The
// first Execute on a model with several instances waits for a second to
// have written, so that the fault shows whenever the kit runs instances
// in parallel.
func (i *fakeInstance) shareScratch(sum []float32) {
	m := i.m
	m.mu.Lock()
	m.scratch = append(m.scratch[:0], sum...)
	m.mu.Unlock()
	if m.started.CompareAndSwap(false, true) {
		if m.live.Load() >= 2 {
			select {
			case <-m.second:
			case <-time.After(10 * time.Second):
			}
		}
		m.mu.Lock()
		copy(sum, m.scratch)
		m.mu.Unlock()
		close(m.read)
		return
	}
	second := false
	m.secondOnce.Do(func() { second = true })
	if second {
		// Let the first read what this one wrote before anyone writes again.
		close(m.second)
		select {
		case <-m.read:
		case <-time.After(10 * time.Second):
		}
	}
	m.mu.Lock()
	copy(sum, m.scratch)
	m.mu.Unlock()
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
