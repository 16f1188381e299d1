package triton_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/tensor"
)

// stepsConfig is an iterative sequence model (one request drives a whole
// sequence): each request runs N times, rescheduled by the model, and its
// one response says how many executions it took. decoupled is spliced in
// for the streaming variant.
const stepsConfig = `
backend: "steps"
max_batch_size: 4
input [ { name: "N" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "STEP" data_type: TYPE_INT32 dims: [ 1 ] } ]
sequence_batching {
  iterative_sequence: true
  control_input [
    { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] },
    { name: "CORRID" control [ { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_UINT64 } ] }
  ]
  oldest { max_candidate_sequences: 8 max_queue_delay_microseconds: 100 }
}
%s`

// stepper is stepsConfig's backend: it counts each sequence's executions
// (keyed by CORRID, reset by START) and reschedules the request until it
// has run N times; a decoupled model sends every step.
type stepper struct {
	mu      sync.Mutex
	steps   map[uint64]int32
	batches map[int]int // executions by batch size
}

func (s *stepper) backend() backend.Func {
	s.steps, s.batches = map[uint64]int32{}, map[int]int{}
	return func(ctx context.Context, b *backend.Batch) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.batches[len(b.Requests)]++
		for _, r := range b.Requests {
			n, _, err := reqInput[int32](r, "N")
			if err != nil {
				return err
			}
			start, _, _ := reqInput[int32](r, "START")
			id, _, _ := reqInput[uint64](r, "CORRID")
			if start[0] == 1 {
				if _, live := s.steps[id[0]]; live {
					return fmt.Errorf("START for sequence %d, which is live", id[0])
				}
				s.steps[id[0]] = 0
			} else if _, live := s.steps[id[0]]; !live {
				return fmt.Errorf("sequence %d goes on without a START", id[0])
			}
			s.steps[id[0]]++
			step, err := tensor.From("STEP", tensor.Shape{1, 1}, []int32{s.steps[id[0]]})
			if err != nil {
				return err
			}
			if snd := r.Sender(); snd != nil {
				if err := snd.Send(ctx, backend.Response{Outputs: []tensor.Tensor{step}, Final: s.steps[id[0]] >= n[0]}); err != nil {
					return err
				}
			} else {
				r.SetOutput(step)
			}
			if s.steps[id[0]] < n[0] {
				r.Reschedule()
			} else {
				delete(s.steps, id[0])
			}
		}
		return nil
	}
}

// TestIterativeSequence: requests without a correlation ID each drive a
// sequence of their own, rescheduled by the model until done, their
// iterations batched with each other's.
func TestIterativeSequence(t *testing.T) {
	st := &stepper{}
	srv := newServer(t, map[string]string{"steps/config.pbtxt": fmt.Sprintf(stepsConfig, ""), "steps/1/m": ""},
		triton.WithBackend("steps", st.backend()))
	var g errgroup.Group
	total := 0
	for i := range 12 {
		n := int32(1 + i%5)
		total += int(n)
		g.Go(func() error {
			resp, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "steps",
				Inputs: []tensor.Tensor{int32s(t, "N", tensor.Shape{1, 1}, n)}})
			if err != nil {
				return err
			}
			if got := outputInt32(t, resp, "STEP"); len(got) != 1 || got[0] != n {
				return fmt.Errorf("N %d: STEP %v, want the last step, %d", n, got, n)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.steps) != 0 {
		t.Errorf("sequences left unfinished in the model: %v", st.steps)
	}
	executed, executions := 0, 0
	for size, count := range st.batches {
		executed += size * count
		executions += count
	}
	if executed != total {
		t.Errorf("%d request executions, want %d (the sum of N)", executed, total)
	}
	stats, err := srv.Stats("steps", 0)
	if err != nil {
		t.Fatal(err)
	}
	if s := stats[0]; s.Success.Count != 12 || s.ExecutionCount != uint64(executions) {
		t.Errorf("success count %d, execution count %d; want 12 (one a request) and %d (the model's executions)", s.Success.Count, s.ExecutionCount, executions)
	}
	t.Logf("executions by batch size: %v", st.batches)
}

// TestIterativeSequenceStream: a decoupled iterative model sends every
// iteration's response on the same stream.
func TestIterativeSequenceStream(t *testing.T) {
	st := &stepper{}
	srv := newServer(t, map[string]string{"steps/config.pbtxt": fmt.Sprintf(stepsConfig, "model_transaction_policy { decoupled: true }"), "steps/1/m": ""},
		triton.WithBackend("steps", st.backend()))
	var got []int32
	for resp, err := range srv.InferStream(context.Background(), &triton.InferRequest{Model: "steps",
		Inputs: []tensor.Tensor{int32s(t, "N", tensor.Shape{1, 1}, 4)}}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, outputInt32(t, resp, "STEP")...)
	}
	if fmt.Sprint(got) != "[1 2 3 4]" {
		t.Errorf("stream %v, want [1 2 3 4]", got)
	}
}

// TestRescheduleNeedsIterativeSequence: a model that reschedules without
// iterative_sequence fails the request, saying why.
func TestRescheduleNeedsIterativeSequence(t *testing.T) {
	again := backend.Func(func(ctx context.Context, b *backend.Batch) error {
		for _, r := range b.Requests {
			r.Reschedule()
		}
		return nil
	})
	srv := newServer(t, map[string]string{"again/config.pbtxt": `
backend: "again"
max_batch_size: 0
input [ { name: "N" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "STEP" data_type: TYPE_INT32 dims: [ 1 ] } ]
`, "again/1/m": ""}, triton.WithBackend("again", again))
	_, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "again", Inputs: []tensor.Tensor{int32s(t, "N", tensor.Shape{1}, 1)}})
	if err == nil || !strings.Contains(err.Error(), "iterative_sequence: true") {
		t.Fatalf("error %v, want one naming iterative_sequence", err)
	}
}

// countConfig is an iterative sequence model that counts a request's
// executions in an implicit state (counter) until it reaches N.
const countConfig = `
backend: "count"
max_batch_size: 0
input [ { name: "N" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "STEP" data_type: TYPE_INT32 dims: [ 1 ] } ]
sequence_batching {
  iterative_sequence: true
  control_input [ { name: "START" control [ { kind: CONTROL_SEQUENCE_START int32_false_true: [ 0, 1 ] } ] } ]
  state [ { input_name: "ACC_IN" output_name: "ACC_OUT" data_type: TYPE_INT32 dims: [ 1 ] } ]
}
`

// counter is countConfig's backend: each execution adds one to the state
// and reschedules the request until the count reaches N, then answers
// STEP = N. With executions, it counts every execution and fails past 100
// (a state that does not carry would reschedule forever).
func counter(executions *atomic.Int32) backend.Func {
	return func(ctx context.Context, b *backend.Batch) error {
		for _, r := range b.Requests {
			if executions != nil && executions.Add(1) > 100 {
				return errors.New("still rescheduling after 100 executions: the state did not carry")
			}
			n, _, _ := reqInput[int32](r, "N")
			acc, _, _ := reqInput[int32](r, "ACC_IN")
			start, _, _ := reqInput[int32](r, "START")
			next := acc[0] + 1
			if start[0] == 1 {
				next = 1
			}
			out, _ := tensor.From("ACC_OUT", tensor.Shape{1}, []int32{next})
			r.SetOutput(out)
			if next < n[0] {
				r.Reschedule()
				continue
			}
			step, _ := tensor.From("STEP", tensor.Shape{1}, []int32{next})
			r.SetOutput(step)
		}
		return nil
	}
}

// TestIterativeSequenceState: the implicit state a rescheduled execution
// produces is its next execution's.
func TestIterativeSequenceState(t *testing.T) {
	var executions atomic.Int32
	srv := newServer(t, map[string]string{"count/config.pbtxt": countConfig, "count/1/m": ""}, triton.WithBackend("count", counter(&executions)))
	resp, err := srv.Infer(context.Background(), &triton.InferRequest{Model: "count", Inputs: []tensor.Tensor{int32s(t, "N", tensor.Shape{1}, 5)}})
	if err != nil {
		t.Fatal(err)
	}
	if got := outputInt32(t, resp, "STEP"); got[0] != 5 || executions.Load() != 5 {
		t.Errorf("STEP %v after %d executions, want 5 after 5", got, executions.Load())
	}
}
