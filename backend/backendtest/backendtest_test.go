package backendtest_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/triton-go/triton/backend/backendtest"
	"github.com/triton-go/triton/tensor"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestConforming runs the kit on the correct fake, which must pass, and
// checks that the kit kept the server's promises doing it.
func TestConforming(t *testing.T) {
	f := newFake(correct)
	backendtest.Run(t, f, addModel(t), mirrorModel(t))
	f.promises(t, true)
	if err := backendtest.Check(f, addModel(t), mirrorModel(t)); err != nil {
		t.Errorf("Check: %v", err)
	}
}

// TestFaults proves that each check can fail: each fault of the fake is
// caught, by the check that is meant to catch it, with a message that
// says what is wrong.
func TestFaults(t *testing.T) {
	for _, tc := range []struct {
		fault  fault
		mirror bool   // run the mirror (BYTES, unbatched) model instead of add
		check  string // the check that must report it
		want   string // in one of its lines
	}{
		{serialLoad, false, "load", "Load failed: fake: Load called while another Load runs"},
		{changesConfig, false, "load", "Load changed the model configuration"},
		{nilInstance, false, "load", "NewInstance add_0 returned neither an instance nor an error"},
		{sharedScratch, false, "execute", `: wrong values: OUTPUT0[`},
		{wrongDatatype, false, "execute", `, Requests[0]: backend produced output 'OUTPUT0' with data-type 'INT32', but model 'add' declares 'FP32'`},
		{wrongBatchDim, false, "execute", `backend produced output 'OUTPUT0' with shape [1,4], but model 'add' expects [2,4] (its first dimension must be the request's batch size, 2)`},
		{ignoresReshape, false, "execute", `backend produced output 'OUTPUT1' with shape [1,4], but model 'add' expects [1,2,2] (the config's reshape [2,2], not its dims [4])`},
		{missingOutput, false, "execute", `output "OUTPUT1" is missing (the request asks for every output)`},
		{dropsSubsets, false, "execute", `/OUTPUT1: output "OUTPUT1" is missing (the request asks for [OUTPUT1])`},
		{badFraming, true, "execute", `backend produced a malformed output 'OUT' for model 'mirror'`},
		{wrongValues, false, "execute", `Requests[0]: wrong values: OUTPUT0[0] = 2, want 1`},
		{writesInput, false, "execute", `: Execute wrote to input "INPUT0"; inputs are borrowed, read-only`},
		{executePanics, false, "execute", "Execute panicked: runtime error: invalid memory address or nil pointer dereference (at github.com/triton-go/triton/backend/backendtest_test.(*fakeInstance).Execute"},
		{warmupFails, false, "load", `model "add" version 1: Warmup of add_0: fake: Warmup failed`},
		{notReady, false, "execute", `model "add" version 1, instance add_0: Ready reported the instance not ready while it runs batches: fake: not ready`},
		{closeErrors, false, "lifecycle", `model "add" version 1, instance add_0: Close returned an error: fake: Close failed`},
		{modelClosePanics, false, "lifecycle", `model "add" version 1: Close of the model panicked: fake: model Close panics (at github.com/triton-go/triton/backend/backendtest_test.(*fakeModel).Close`},
		{unwrappedCancel, false, "cancel", "ctx.Err() = context canceled: Execute returned an error that does not wrap the context's (return ctx.Err(), or wrap it with %w): fake: cancelled"},
		{pretendsOnCancel, false, "cancel", `Requests[0]: Execute returned nil, but output "OUTPUT0" is missing`},
		{failsWholeBatch, false, "failing", "Execute failed the whole batch, good requests too, because of Failing[0]: fake: request Failing[0] has a NaN in INPUT0"},
		{succeedsBad, false, "failing", "Failing[0]: succeeded; the backend must fail it (with Request.Fail)"},
		{failsNeighbours, false, "failing", "Requests[0]: failed: fake: a request of the batch has a NaN in INPUT0"},
	} {
		t.Run(string(tc.fault), func(t *testing.T) {
			if tc.fault == writesInput && raceEnabled {
				t.Skip("writing to inputs that concurrent batches read is a data race, which the race detector reports itself")
			}
			f := newFake(tc.fault)
			m := addModel(t)
			if tc.mirror {
				m = mirrorModel(t)
			}
			err := backendtest.Check(f, m)
			if err == nil {
				t.Fatalf("Check passed a backend whose %s", tc.fault)
			}
			msg := err.Error()
			if !strings.Contains(msg, "backendtest: "+tc.check+": ") {
				t.Errorf("check %s reported nothing:\n%s", tc.check, msg)
			}
			found := false
			for line := range strings.SplitSeq(msg, "\n") {
				found = found || strings.HasPrefix(line, "backendtest: "+tc.check+": ") && strings.Contains(line, tc.want)
			}
			if !found {
				t.Errorf("no line of check %s has %q:\n%s", tc.check, tc.want, msg)
			}
			if strings.Contains(msg, "backendtest bug") {
				t.Errorf("the kit reports a bug of its own:\n%s", msg)
			}
			f.promises(t, true)
		})
	}
}

// TestHang: a call that never returns (an Execute that ignores its
// cancelled context, a Close) is reported after Model.Timeout, and its
// instance and model are left open rather than closed under it.
func TestHang(t *testing.T) {
	for _, tc := range []struct {
		fault fault
		want  []string
	}{
		{hangsOnCancel, []string{
			`backendtest: cancel: model "add" version 1, instance add_0, batch [Requests[0]], ctx.Err() = context canceled: Execute did not return within 200ms`,
			`backendtest: cancel: model "add" version 1, instance add_0: not closed, since a call on it has not returned`,
			`backendtest: cancel: model "add" version 1: not closed, since 1 of its instances could not be`,
		}},
		{closeHangs, []string{
			`backendtest: load: model "add" version `, // which one hangs depends on timing
			`: Close did not return within 200ms`,
			`: not closed, since 1 of its instances could not be`,
		}},
	} {
		t.Run(string(tc.fault), func(t *testing.T) {
			f := newFake(tc.fault)
			m := addModel(t)
			m.Timeout = 200 * time.Millisecond
			err := backendtest.Check(f, m)
			<-f.entered // the hung call has started (it may have been slow to)
			close(f.release)
			<-f.returned
			if err == nil {
				t.Fatal("Check passed a backend that hangs")
			}
			msg := err.Error()
			for _, want := range tc.want {
				if !strings.Contains(msg, want) {
					t.Errorf("no %q in:\n%s", want, msg)
				}
			}
			f.promises(t, false)
		})
	}
}

// TestModelMistakes: a request the server would reject is the caller's
// mistake, reported before any check runs.
func TestModelMistakes(t *testing.T) {
	edit := func(f func(m *backendtest.Model)) backendtest.Model {
		m := addModel(t)
		f(&m)
		return m
	}
	for _, tc := range []struct {
		name  string
		model backendtest.Model
		want  string
	}{
		{"no config", backendtest.Model{}, "backendtest: models[0]: no Config"},
		{"no requests", edit(func(m *backendtest.Model) { m.Requests = nil }), `model "add": no Requests`},
		{"datatype", edit(func(m *backendtest.Model) {
			m.Requests[0].Inputs[0] = must(tensor.From("INPUT0", tensor.Shape{1, 4}, []int32{1, 2, 3, 4}))
		}), `model "add": Requests[0]: inference input 'INPUT0' data-type is 'INT32', but model 'add' expects 'FP32'`},
		{"shape", edit(func(m *backendtest.Model) {
			m.Requests[1].Inputs[0] = must(tensor.From("INPUT0", tensor.Shape{4}, []float32{1, 2, 3, 4}))
		}), `model "add": Requests[1]: unexpected shape for input 'INPUT0' for model 'add'. Expected [-1,4], got [4]`},
		{"batch size", edit(func(m *backendtest.Model) { m.Requests[0] = addRequest(t, 9, 0) }), `Requests[0]: inference request batch-size must be <= 8 for 'add'`},
		{"missing input", edit(func(m *backendtest.Model) { m.Requests[0].Inputs = m.Requests[0].Inputs[:1] }), `Requests[0]: expected 2 inputs but got 1 inputs for model 'add'. Got input(s) ['INPUT0'], but missing required input(s) ['INPUT1']`},
		{"unknown output", edit(func(m *backendtest.Model) { m.Requests[0].Outputs = []string{"NOPE"} }), `Requests[0]: unexpected inference output 'NOPE' for model 'add'`},
		{"unknown input", edit(func(m *backendtest.Model) {
			m.Failing[0].Inputs = append(m.Failing[0].Inputs, must(tensor.From("EXTRA", tensor.Shape{1}, []float32{1})))
		}), `Failing[0]: unexpected inference input 'EXTRA' for model 'add'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(correct)
			err := backendtest.Check(f, tc.model)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			if len(f.models) > 0 {
				t.Errorf("the kit loaded %d models for a mistaken run", len(f.models))
			}
		})
	}
}

// TestFailingUnbatchable: a Failing request that no good request can share
// a batch with is reported: the mixed-batch check could not run.
func TestFailingUnbatchable(t *testing.T) {
	m := addModel(t)
	bad := addRequest(t, 8, 0)
	nan := make([]float32, 32)
	nan[0] = float32(math.NaN())
	bad.Inputs[0] = f32(t, "INPUT0", 8, nan...)
	m.Failing = []backendtest.Request{bad}
	err := backendtest.Check(newFake(correct), m)
	want := `backendtest: failing: model "add" version 1: Failing[0] cannot share a batch with any of the Requests`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want %q", err, want)
	}
}
