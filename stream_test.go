package triton_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/internal/testmodels"
	"github.com/triton-go/triton/tensor"
)

// repeatServer serves the repeat model (Triton's repeat_int32) with extra
// config text, under the name "repeat".
func repeatServer(t *testing.T, extra string, opts ...triton.Option) (*triton.Server, *testmodels.Repeat) {
	t.Helper()
	rp := new(testmodels.Repeat)
	cfg := testmodels.RepeatConfig
	if strings.Contains(extra, "max_batch_size") {
		cfg = strings.Replace(cfg, "max_batch_size: 0\n", "", 1)
	}
	srv := newServer(t, map[string]string{
		"repeat/config.pbtxt": cfg + extra,
		"repeat/1/model.txt":  "",
	}, append([]triton.Option{triton.WithBackend("repeat", rp)}, opts...)...)
	return srv, rp
}

// repeatRequest asks for one response per value, each after its delay in
// ms, with the request released after wait ms. batched gives the inputs a
// batch dimension of 1.
func repeatRequest(t testing.TB, id string, batched bool, wait uint32, vals []int32, delays []uint32) *triton.InferRequest {
	n := int64(len(vals))
	shape, one := tensor.Shape{n}, tensor.Shape{1}
	if batched {
		shape, one = tensor.Shape{1, n}, tensor.Shape{1, 1}
	}
	in, err1 := tensor.From("IN", shape, vals)
	delay, err2 := tensor.From("DELAY", shape, delays)
	w, err3 := tensor.From("WAIT", one, []uint32{wait})
	if err := errors.Join(err1, err2, err3); err != nil {
		t.Fatal(err)
	}
	return &triton.InferRequest{Model: "repeat", ID: id, Inputs: []tensor.Tensor{in, delay, w}}
}

// event is one response as a test saw it.
type event struct {
	id  string
	out int32
	idx uint32
	at  time.Duration
}

func repeatEvent(t testing.TB, resp *triton.InferResponse, start time.Time) event {
	t.Helper()
	out, idx := outputInt32(t, resp, "OUT"), uint32s(t, resp, "IDX")
	return event{id: resp.ID, out: out[0], idx: idx[0], at: time.Since(start)}
}

func uint32s(t testing.TB, resp *triton.InferResponse, name string) []uint32 {
	t.Helper()
	o, ok := resp.Output(name)
	if !ok {
		t.Fatalf("response has no output %q (has %v)", name, outputNames(resp))
	}
	v, err := tensor.View[uint32](o)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestInferStreamRepeat: the repeat model's responses come after their
// delays; a consumer that takes 15 ms over the first response makes the
// second wait 5 ms after the model sent it, which response_stats count as
// its compute_output (the model's 10 ms as compute_infer).
func TestInferStreamRepeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, rp := repeatServer(t, "")
		start := time.Now()
		var got []event
		for resp, err := range srv.InferStream(context.Background(), repeatRequest(t, "r", false, 0, []int32{4, 5, 6}, []uint32{30, 10, 20})) {
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			if resp.Final {
				t.Errorf("response %v flagged final; the repeat model's final flag comes alone", resp.Outputs)
			}
			got = append(got, repeatEvent(t, resp, start))
			if len(got) == 1 {
				time.Sleep(15 * time.Millisecond) // a slow consumer, in the bubble's time
			}
		}
		want := []event{{"r", 4, 0, 30 * time.Millisecond}, {"r", 5, 1, 45 * time.Millisecond}, {"r", 6, 2, 60 * time.Millisecond}}
		if !slices.Equal(got, want) {
			t.Errorf("responses %v, want %v", got, want)
		}
		synctest.Wait()
		if n := rp.Running(); n != 0 {
			t.Errorf("%d producers still running", n)
		}
		st, err := srv.Model("repeat").Stats()
		if err != nil {
			t.Fatal(err)
		}
		if st.Success.Count != 1 || st.Fail.Count != 0 || st.ExecutionCount != 1 {
			t.Errorf("success %d, fail %d, executions %d; want 1, 0, 1", st.Success.Count, st.Fail.Count, st.ExecutionCount)
		}
		wantResp := []triton.ResponseStats{
			{Index: 0, Success: ms(1, 30), ComputeInfer: ms(1, 30), ComputeOutput: ms(1, 0)},
			{Index: 1, Success: ms(1, 15), ComputeInfer: ms(1, 10), ComputeOutput: ms(1, 5)},
			{Index: 2, Success: ms(1, 15), ComputeInfer: ms(1, 15), ComputeOutput: ms(1, 0)},
			{Index: 3, EmptyResponse: triton.StatDuration{Count: 1}},
		}
		if !slices.Equal(st.Responses, wantResp) {
			t.Errorf("response stats %+v, want %+v", st.Responses, wantResp)
		}
	})
}

// ms is a StatDuration of n events taking total milliseconds.
func ms(n uint64, total int) triton.StatDuration {
	return triton.StatDuration{Count: n, Total: time.Duration(total) * time.Millisecond}
}

func TestInferStreamFirstResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := new(recorder)
		srv, _ := repeatServer(t, "", triton.WithObserver(rec))
		for _, err := range srv.InferStream(context.Background(), repeatRequest(t, "r", false, 5, []int32{1, 2}, []uint32{25, 100})) {
			if err != nil {
				t.Fatal(err)
			}
		}
		if len(rec.recs) != 1 {
			t.Fatalf("observed %d requests, want 1", len(rec.recs))
		}
		rs := rec.recs[0]
		if rs.Err != nil || rs.FirstResponse != 25*time.Millisecond || rs.Request != 125*time.Millisecond {
			t.Errorf("err %v, first response %v, request %v; want nil, 25ms, 125ms", rs.Err, rs.FirstResponse, rs.Request)
		}
	})
}

// TestInferStreamOutOfOrder: responses of later requests come before an
// earlier one's, on one instance and within one batch, unless
// preserve_ordering holds them until the earlier stream has ended (b sends
// more responses meanwhile than the stream buffer holds: they are taken,
// so that its producer goes on).
func TestInferStreamOutOfOrder(t *testing.T) {
	for _, tc := range []struct{ name, extra string }{
		{"direct", ""},
		// A batching repeat model: requests of one batch stream apart.
		{"dynamic", "dynamic_batching { max_queue_delay_microseconds: 5000 }"},
		{"preserve_ordering", "dynamic_batching { max_queue_delay_microseconds: 5000 preserve_ordering: true }"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				extra := "instance_group [ { count: 1 kind: KIND_CPU } ]\n" + tc.extra
				batched := tc.extra != ""
				if batched {
					extra = "max_batch_size: 4\n" + extra
				}
				srv, rp := repeatServer(t, extra)
				start := time.Now()
				var (
					mu  sync.Mutex
					got []event
					wg  sync.WaitGroup
				)
				run := func(req *triton.InferRequest) {
					defer wg.Done()
					for resp, err := range srv.InferStream(context.Background(), req) {
						if err != nil {
							t.Errorf("%s: %v", req.ID, err)
							return
						}
						mu.Lock()
						got = append(got, repeatEvent(t, resp, start))
						mu.Unlock()
					}
				}
				wg.Add(2)
				// a is first on the one instance, and its Execute returns at
				// once; its responses come after b's.
				ordered := strings.Contains(tc.extra, "preserve_ordering")
				aVals, aDelays := []int32{1, 2}, []uint32{50, 50}
				bVals, bDelays := []int32{10, 20}, []uint32{10, 10}
				if ordered {
					// More than the stream buffer holds (the same length for
					// both, so that they batch).
					for i := range triton.StreamBuffer {
						aVals, aDelays = append(aVals, int32(100+i)), append(aDelays, 0)
						bVals, bDelays = append(bVals, int32(30+i)), append(bDelays, 0)
					}
				}
				go run(repeatRequest(t, "a", batched, 0, aVals, aDelays))
				synctest.Wait()
				go run(repeatRequest(t, "b", batched, 0, bVals, bDelays))
				wg.Wait()
				base := time.Duration(0)
				if batched {
					base = 5 * time.Millisecond // max_queue_delay: a waited for b, which then fills no preferred size
				}
				want := []event{
					{"b", 10, 0, base + 10*time.Millisecond}, {"b", 20, 1, base + 20*time.Millisecond},
					{"a", 1, 0, base + 50*time.Millisecond}, {"a", 2, 1, base + 100*time.Millisecond},
				}
				if !batched {
					want[0].at, want[1].at = 10*time.Millisecond, 20*time.Millisecond
				}
				if ordered {
					// b's responses, sent from 15 ms on, wait for a's end at 105 ms.
					end := base + 100*time.Millisecond
					want = want[2:]
					for i, v := range aVals[2:] {
						want = append(want, event{"a", v, uint32(2 + i), end})
					}
					for i, v := range bVals {
						want = append(want, event{"b", v, uint32(i), end})
					}
				}
				if !slices.Equal(got, want) {
					t.Errorf("responses %v, want %v", got, want)
				}
				st, _ := srv.Model("repeat").Stats()
				wantExec := uint64(2)
				if batched {
					wantExec = 1
				}
				if st.ExecutionCount != wantExec || st.Success.Count != 2 {
					t.Errorf("executions %d, successes %d; want %d, 2", st.ExecutionCount, st.Success.Count, wantExec)
				}
				synctest.Wait()
				if n := rp.Running(); n != 0 {
					t.Errorf("%d producers still running", n)
				}
			})
		})
	}
}

// The instance is free once Execute returns, not when the stream ends: a
// second request runs while the first still streams.
func TestInferStreamInstanceFreeAfterExecute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, _ := repeatServer(t, "instance_group [ { count: 1 kind: KIND_CPU } ]")
		start := time.Now()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		first := srv.InferStream(ctx, repeatRequest(t, "long", false, 10, []int32{1}, []uint32{3_600_000}))
		done := make(chan struct{})
		go func() {
			defer close(done)
			for _, err := range first {
				if triton.CodeOf(err) != triton.Cancelled {
					t.Errorf("long stream: %v, want Cancelled", err)
				}
			}
		}()
		synctest.Wait() // the long request holds the instance for its WAIT
		resp, err := srv.Infer(context.Background(), repeatRequest(t, "short", false, 0, []int32{7}, []uint32{0}))
		if err != nil {
			t.Fatal(err)
		}
		if got := outputInt32(t, resp, "OUT"); got[0] != 7 || time.Since(start) != 10*time.Millisecond {
			t.Errorf("OUT %v after %v, want 7 after the first request's WAIT of 10ms", got, time.Since(start))
		}
		cancel()
		<-done
	})
}

// TestInferStreamPreserveOrderingCancel: with preserve_ordering, a stream
// waiting for the one before it ends at once when its consumer cancels, and
// the stream after it waits only for the first.
func TestInferStreamPreserveOrderingCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, rp := repeatServer(t, "max_batch_size: 4\ndynamic_batching { preserve_ordering: true }\n")
		start := time.Now()
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			ends = map[string]time.Duration{}
		)
		run := func(ctx context.Context, req *triton.InferRequest, wantCode triton.Code) {
			defer wg.Done()
			for _, err := range srv.InferStream(ctx, req) {
				if err != nil && wantCode == 0 {
					t.Errorf("%s: %v", req.ID, err)
				}
				if err != nil && wantCode != 0 {
					wantError(t, err, wantCode, "repeat", req.ID)
				}
			}
			mu.Lock()
			ends[req.ID] = time.Since(start)
			mu.Unlock()
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		wg.Add(3)
		go run(context.Background(), repeatRequest(t, "a", true, 0, []int32{1}, []uint32{50}), 0)
		synctest.Wait()
		go run(ctx, repeatRequest(t, "b", true, 0, []int32{2}, []uint32{10}), triton.Cancelled)
		synctest.Wait()
		go run(context.Background(), repeatRequest(t, "c", true, 0, []int32{3}, []uint32{10}), 0)
		time.Sleep(20 * time.Millisecond) // b has sent its response, and waits for a
		cancel()
		wg.Wait()
		want := map[string]time.Duration{"a": 50 * time.Millisecond, "b": 20 * time.Millisecond, "c": 50 * time.Millisecond}
		if !maps.Equal(ends, want) {
			t.Errorf("streams ended at %v, want %v", ends, want)
		}
		synctest.Wait()
		if n := rp.Running(); n != 0 {
			t.Errorf("%d producers still running", n)
		}
	})
}

func TestInferStreamCancel(t *testing.T) {
	vals := make([]int32, 100)
	delays := make([]uint32, 100)
	for i := range vals {
		vals[i], delays[i] = int32(i), 10
	}
	t.Run("break", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv, rp := repeatServer(t, "")
			n := 0
			for _, err := range srv.InferStream(context.Background(), repeatRequest(t, "r", false, 0, vals, delays)) {
				if err != nil {
					t.Fatal(err)
				}
				if n++; n == 3 {
					break
				}
			}
			synctest.Wait()
			if r := rp.Running(); r != 0 {
				t.Errorf("%d producers still running after the consumer stopped", r)
			}
			if s := rp.Sent(); s != 3 {
				t.Errorf("the producer sent %d responses, want 3 (it sends every 10ms, and learnt of the break at once)", s)
			}
			st, _ := srv.Model("repeat").Stats()
			if st.Failures.Canceled != 1 || len(st.Responses) != 4 || st.Responses[3].Cancel.Count != 1 {
				t.Errorf("canceled %d, response stats %+v; want 1 cancel at index 3", st.Failures.Canceled, st.Responses)
			}
		})
	})
	t.Run("context", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv, rp := repeatServer(t, "")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			n, errs := 0, 0
			for _, err := range srv.InferStream(ctx, repeatRequest(t, "r", false, 0, vals, delays)) {
				if err != nil {
					errs++
					wantError(t, err, triton.Cancelled, "repeat", "r")
					continue
				}
				if n++; n == 3 {
					cancel()
					synctest.Wait() // the producer has heard of it, before the consumer asks again
					if r := rp.Running(); r != 0 {
						t.Errorf("%d producers still running after the cancellation", r)
					}
				}
			}
			if n != 3 || errs != 1 {
				t.Errorf("%d responses and %d errors, want 3 and 1", n, errs)
			}
			st, _ := srv.Model("repeat").Stats()
			if st.Failures.Canceled != 1 {
				t.Errorf("canceled %d, want 1", st.Failures.Canceled)
			}
		})
	})
	t.Run("deadline in Execute", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv, rp := repeatServer(t, "")
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Millisecond)
			defer cancel()
			var errs []error
			n := 0
			for _, err := range srv.InferStream(ctx, repeatRequest(t, "r", false, 1000, vals, delays)) {
				if err != nil {
					errs = append(errs, err)
				} else {
					n++
				}
			}
			if n != 1 || len(errs) != 1 {
				t.Fatalf("%d responses, errors %v; want 1 response (at 10ms) and one error", n, errs)
			}
			wantError(t, errs[0], triton.DeadlineExceeded)
			synctest.Wait()
			if r := rp.Running(); r != 0 {
				t.Errorf("%d producers still running", r)
			}
		})
	})
}

// A slow consumer holds the producer back: at most StreamBuffer responses
// wait for it.
func TestInferStreamSlowConsumer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, rp := repeatServer(t, "")
		const total = 100
		vals := make([]int32, total)
		delays := make([]uint32, total)
		for i := range vals {
			vals[i] = int32(i)
		}
		n := 0
		for resp, err := range srv.InferStream(context.Background(), repeatRequest(t, "r", false, 0, vals, delays)) {
			if err != nil {
				t.Fatal(err)
			}
			if got := outputInt32(t, resp, "OUT")[0]; got != int32(n) {
				t.Fatalf("response %d has OUT %d", n, got)
			}
			n++
			if n == 1 {
				synctest.Wait() // the producer runs ahead as far as it can
				if s := rp.Sent(); s != 1+triton.StreamBuffer {
					t.Errorf("producer sent %d responses while the consumer held one, want 1+%d", s, triton.StreamBuffer)
				}
			}
		}
		if n != total {
			t.Errorf("%d responses, want %d", n, total)
		}
	})
}

// flakyStream streams two good responses around an error response, then fails.
var flakyStream = backend.StreamFunc(func(ctx context.Context, r *backend.Request, send func(backend.Response) error) error {
	in, _ := r.Input("INPUT0")
	out := in
	out.Name = "OUTPUT0"
	if err := send(backend.Response{Outputs: []tensor.Tensor{out}}); err != nil {
		return err
	}
	if err := send(backend.Response{Err: fmt.Errorf("token 2 is out of vocabulary: %w", backend.ErrInvalidInput)}); err != nil {
		return err
	}
	if err := send(backend.Response{Outputs: []tensor.Tensor{out}}); err != nil {
		return err
	}
	return errors.New("the model lost its device")
})

func TestInferStreamErrors(t *testing.T) {
	srv := newServer(t, map[string]string{
		"flaky/config.pbtxt": oneInput("flaky", 1, "model_transaction_policy { decoupled: true }"),
		"flaky/1/model.txt":  "",
	}, triton.WithBackend("flaky", flakyStream))
	var got []string
	for resp, err := range srv.InferStream(context.Background(), oneInputRequest(t, "flaky", "f", 3)) {
		if err != nil {
			got = append(got, fmt.Sprintf("%v: %v", triton.CodeOf(err), err))
			continue
		}
		got = append(got, fmt.Sprintf("OUTPUT0 %v final %v", outputInt32(t, resp, "OUTPUT0"), resp.Final))
	}
	want := []string{
		"OUTPUT0 [3] final false",
		`InvalidArgument: triton: model "flaky" version 1: request "f": token 2 is out of vocabulary: invalid input`,
		"OUTPUT0 [3] final false",
		`Internal: triton: model "flaky" version 1: request "f": the model lost its device`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("stream:\n%q\nwant\n%q", got, want)
	}
	st, _ := srv.Model("flaky").Stats()
	if st.Fail.Count != 1 || st.Failures.Backend != 1 || len(st.Responses) != 4 || st.Responses[1].Fail.Count != 1 || st.Responses[3].Fail.Count != 1 {
		t.Errorf("fail %d (backend %d), responses %+v; want the request failed, errors at 1 and 3", st.Fail.Count, st.Failures.Backend, st.Responses)
	}

	// A bad request fails before it runs, as one error.
	bad := oneInputRequest(t, "flaky", "bad", 1)
	bad.Inputs[0].Name = "NOPE"
	var errs []error
	for resp, err := range srv.InferStream(context.Background(), bad) {
		if resp != nil {
			t.Errorf("response %v for a bad request", resp)
		}
		errs = append(errs, err)
	}
	if len(errs) != 1 {
		t.Fatalf("errors %v, want one", errs)
	}
	wantError(t, errs[0], triton.InvalidArgument, "NOPE")
}

func TestInferOnDecoupled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, rp := repeatServer(t, "")
		resp, err := srv.Infer(context.Background(), repeatRequest(t, "one", false, 0, []int32{7}, []uint32{5}))
		if err != nil {
			t.Fatal(err)
		}
		if got := outputInt32(t, resp, "OUT"); got[0] != 7 {
			t.Errorf("OUT %v, want [7]", got)
		}
		_, err = srv.Infer(context.Background(), repeatRequest(t, "two", false, 0, []int32{1, 2}, []uint32{0, 0}))
		wantError(t, err, triton.Unsupported, "model 'repeat'", "more than one response", "InferStream")
		_, err = srv.Model("repeat").Infer(context.Background(), repeatRequest(t, "none", false, 0, []int32{}, []uint32{}))
		wantError(t, err, triton.Unsupported, "no response")
		synctest.Wait()
		if r := rp.Running(); r != 0 {
			t.Errorf("%d producers still running", r)
		}
	})
}

// A model that is not decoupled answers InferStream with exactly one
// response, flagged final.
func TestInferStreamNotDecoupled(t *testing.T) {
	srv := newServer(t, simpleRepo(), triton.WithBackend("gofunc", addSub))
	for _, stream := range []func(context.Context, *triton.InferRequest) iter.Seq2[*triton.InferResponse, error]{
		srv.InferStream, srv.Model("simple").InferStream,
	} {
		n := 0
		for resp, err := range stream(context.Background(), simpleRequest(t, 2)) {
			if err != nil {
				t.Fatal(err)
			}
			n++
			if !resp.Final || len(outputInt32(t, resp, "OUTPUT0")) != 32 {
				t.Errorf("final %v, outputs %v", resp.Final, outputNames(resp))
			}
		}
		if n != 1 {
			t.Errorf("%d responses, want 1", n)
		}
	}
	var errs []error
	for _, err := range srv.Model("simple").InferStream(context.Background(), &triton.InferRequest{Model: "other"}) {
		errs = append(errs, err)
	}
	if len(errs) != 1 {
		t.Fatalf("errors %v", errs)
	}
	wantError(t, errs[0], triton.InvalidArgument, "handle of model 'simple'")
}

// Requested outputs only, each checked against the configuration.
func TestInferStreamRequestedOutputs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, _ := repeatServer(t, "")
		req := repeatRequest(t, "r", false, 0, []int32{1, 2}, []uint32{0, 0})
		req.Outputs = []string{"IDX"}
		n := 0
		for resp, err := range srv.Model("repeat").InferStream(context.Background(), req) {
			if err != nil {
				t.Fatal(err)
			}
			if names := outputNames(resp); !slices.Equal(names, []string{"IDX"}) {
				t.Errorf("outputs %v, want [IDX]", names)
			}
			n++
		}
		if n != 2 {
			t.Errorf("%d responses, want 2", n)
		}
	})
}

// Close ends open streams with Unavailable and leaves no producer behind;
// an unload waits for them.
func TestInferStreamClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rp := new(testmodels.Repeat)
		srv, err := triton.New(triton.WithRepository(mapFS(map[string]string{
			"repeat/config.pbtxt": testmodels.RepeatConfig, "repeat/1/model.txt": "",
		})), triton.WithBackend("repeat", rp))
		if err != nil {
			t.Fatal(err)
		}
		var errs []error
		n := 0
		for _, err := range srv.InferStream(context.Background(), repeatRequest(t, "r", false, 0, []int32{1, 2, 3}, []uint32{10, 1000, 1000})) {
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if n++; n == 1 {
				go srv.Close()
			}
		}
		if n != 1 || len(errs) != 1 {
			t.Fatalf("%d responses, errors %v; want 1 and one error", n, errs)
		}
		wantError(t, errs[0], triton.Unavailable, "repeat")
		if err := srv.Close(); err != nil {
			t.Fatal(err)
		}
		if r := rp.Running(); r != 0 {
			t.Errorf("%d producers still running after Close", r)
		}
	})
}

func TestInferStreamUnloadWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rp := new(testmodels.Repeat)
		srv := newServer(t, map[string]string{"repeat/config.pbtxt": testmodels.RepeatConfig, "repeat/1/model.txt": ""},
			triton.WithBackend("repeat", rp), triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit}), triton.WithStartupModels("repeat"))
		start := time.Now()
		unloaded := make(chan time.Duration, 1)
		n := 0
		for _, err := range srv.InferStream(context.Background(), repeatRequest(t, "r", false, 0, []int32{1, 2}, []uint32{10, 40})) {
			if err != nil {
				t.Fatal(err)
			}
			if n++; n == 1 {
				go func() {
					if err := srv.Unload(context.Background(), "repeat", nil); err != nil {
						t.Errorf("Unload: %v", err)
					}
					unloaded <- time.Since(start)
				}()
			}
		}
		if n != 2 {
			t.Errorf("%d responses, want 2: the unload must let the stream finish", n)
		}
		if d := <-unloaded; d != 50*time.Millisecond {
			t.Errorf("unloaded after %v, want 50ms (when the stream ended)", d)
		}
	})
}

// A decoupled sequence model streams each request of the sequence.
func TestInferStreamSequence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, _ := repeatServer(t, "sequence_batching { max_sequence_idle_microseconds: 10000000 }")
		start := time.Now()
		for i, flags := range [][2]bool{{true, false}, {false, true}} {
			// The first request is released (Execute returns) 10ms after
			// its last response: the stream waits for it, and the sequence
			// goes on (it was not cancelled).
			req := repeatRequest(t, fmt.Sprint(i), false, 10, []int32{int32(i), int32(i)}, []uint32{1, 1})
			req.SequenceID, req.SequenceStart, req.SequenceEnd = 9, flags[0], flags[1]
			n := 0
			for resp, err := range srv.InferStream(context.Background(), req) {
				if err != nil {
					t.Fatal(err)
				}
				if got := outputInt32(t, resp, "OUT")[0]; got != int32(i) {
					t.Errorf("request %d: OUT %d", i, got)
				}
				n++
			}
			if n != 2 {
				t.Errorf("request %d: %d responses, want 2", i, n)
			}
			if d := time.Since(start); d != time.Duration(i+1)*10*time.Millisecond {
				t.Errorf("request %d done after %v, want %v", i, d, time.Duration(i+1)*10*time.Millisecond)
			}
		}
		st, _ := srv.Model("repeat").Stats()
		if st.Success.Count != 2 || st.Fail.Count != 0 {
			t.Errorf("success %d, fail %d; want 2, 0", st.Success.Count, st.Fail.Count)
		}
	})
}

// blsSum is a Go backend that streams from the repeat model through its
// Caller (Triton's BLS) and answers with the sum of the responses.
type blsSum struct{ caller backend.Caller }

func (b *blsSum) Load(_ context.Context, spec *backend.ModelSpec) (backend.Model, error) {
	b.caller = spec.Caller
	return backend.Func(b.execute), nil
}

func (b *blsSum) execute(ctx context.Context, batch *backend.Batch) error {
	for _, r := range batch.Requests {
		in, _ := r.Input("INPUT0")
		n, _ := tensor.View[int32](in)
		vals := make([]int32, n[0])
		for i := range vals {
			vals[i] = int32(i + 1)
		}
		req := repeatRequest(nil, r.ID, false, 0, vals, make([]uint32, len(vals)))
		var sum int32
		for resp, err := range b.caller.InferStream(ctx, req) {
			if err != nil {
				return err
			}
			v, _ := resp.Output("OUT")
			x, _ := tensor.View[int32](v)
			sum += x[0]
		}
		out, _ := tensor.From("OUTPUT0", tensor.Shape{1}, []int32{sum})
		r.SetOutput(out)
	}
	return nil
}

func TestInferStreamThroughCaller(t *testing.T) {
	rp := new(testmodels.Repeat)
	srv := newServer(t, map[string]string{
		"repeat/config.pbtxt": testmodels.RepeatConfig, "repeat/1/model.txt": "",
		"sum/config.pbtxt": oneInput("bls", 1, ""), "sum/1/model.txt": "",
	}, triton.WithBackend("repeat", rp), triton.WithBackend("bls", new(blsSum)))
	resp, err := srv.Infer(context.Background(), oneInputRequest(t, "sum", "s", 40))
	if err != nil {
		t.Fatal(err)
	}
	if got := outputInt32(t, resp, "OUTPUT0"); got[0] != 40*41/2 {
		t.Errorf("sum %v, want %d", got, 40*41/2)
	}
}

// A panic in a decoupled model's Execute ends its stream with an internal
// error after the responses it sent; the instance is recreated.
func TestInferStreamPanic(t *testing.T) {
	panicky := backend.StreamFunc(func(ctx context.Context, r *backend.Request, send func(backend.Response) error) error {
		in, _ := r.Input("INPUT0")
		out := in
		out.Name = "OUTPUT0"
		if err := send(backend.Response{Outputs: []tensor.Tensor{out}}); err != nil {
			return err
		}
		panic("index out of range")
	})
	srv := newServer(t, map[string]string{
		"p/config.pbtxt": oneInput("panicky", 1, "model_transaction_policy { decoupled: true }"), "p/1/model.txt": "",
	}, triton.WithBackend("panicky", panicky))
	for range 2 { // the second request runs on the recreated instance
		var got []string
		for resp, err := range srv.InferStream(context.Background(), oneInputRequest(t, "p", "x", 5)) {
			if err != nil {
				got = append(got, triton.CodeOf(err).String())
				wantError(t, err, triton.Internal, "backend panic: index out of range")
				continue
			}
			got = append(got, fmt.Sprint(outputInt32(t, resp, "OUTPUT0")))
		}
		if want := []string{"[5]", "Internal"}; !slices.Equal(got, want) {
			t.Errorf("stream %v, want %v", got, want)
		}
	}
}

// A plain Func on a decoupled model answers with one response: its
// outputs, sent as the final response when Execute returns.
func TestInferStreamFuncOnDecoupled(t *testing.T) {
	srv := newServer(t, map[string]string{
		"d/config.pbtxt": oneInput("mirror", 1, "model_transaction_policy { decoupled: true }"), "d/1/model.txt": "",
	}, triton.WithBackend("mirror", mirror))
	n := 0
	for resp, err := range srv.InferStream(context.Background(), oneInputRequest(t, "d", "x", 4)) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if got := outputInt32(t, resp, "OUTPUT0"); got[0] != 4 || !resp.Final {
			t.Errorf("OUTPUT0 %v final %v, want [4] final", got, resp.Final)
		}
	}
	if n != 1 {
		t.Errorf("%d responses, want 1", n)
	}
	resp, err := srv.Infer(context.Background(), oneInputRequest(t, "d", "y", 5))
	if err != nil {
		t.Fatal(err)
	}
	if got := outputInt32(t, resp, "OUTPUT0"); got[0] != 5 || resp.Final {
		t.Errorf("Infer: OUTPUT0 %v final %v, want [5], not final", got, resp.Final)
	}
}

// streamEnsembleConfig is a decoupled ensemble: repeat(IN, DELAY, WAIT) →
// OUT (decoupled), then neg(OUT) → NEG once per response of repeat.
const streamEnsembleConfig = `
platform: "ensemble"
max_batch_size: 0
model_transaction_policy { decoupled: true }
input [
  { name: "IN" data_type: TYPE_INT32 dims: [ -1 ] },
  { name: "DELAY" data_type: TYPE_UINT32 dims: [ -1 ] },
  { name: "WAIT" data_type: TYPE_UINT32 dims: [ 1 ] }
]
output [ { name: "NEG" data_type: TYPE_INT32 dims: [ 1 ] } ]
ensemble_scheduling { step [
  { model_name: "repeat" model_version: -1
    input_map { key: "IN" value: "IN" } input_map { key: "DELAY" value: "DELAY" } input_map { key: "WAIT" value: "WAIT" }
    output_map { key: "OUT" value: "OUT" } },
  { model_name: "neg" model_version: -1
    input_map { key: "X" value: "OUT" } output_map { key: "Y" value: "NEG" } }
] }
`

// TestInferStreamEnsemble: each response of a decoupled step flows on
// through the step after it, and the decoupled ensemble answers once per
// response, in order; a step beside the decoupled one, or an ensemble that
// is not decoupled, fails to load.
func TestInferStreamEnsemble(t *testing.T) {
	neg := backend.Func(func(ctx context.Context, b *backend.Batch) error {
		x, err := b.Input("X")
		if err != nil {
			return err
		}
		v, err := tensor.View[int32](x)
		if err != nil {
			return err
		}
		y, err := tensor.From("Y", x.Shape, []int32{-v[0]})
		if err != nil {
			return err
		}
		return b.SetOutput(y)
	})
	const negConfig = `backend: "neg" max_batch_size: 0
input [ { name: "X" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "Y" data_type: TYPE_INT32 dims: [ 1 ] } ]`
	srv := newServer(t, map[string]string{
		"repeat/config.pbtxt": testmodels.RepeatConfig, "repeat/1/m": "",
		"neg/config.pbtxt": negConfig, "neg/1/m": "",
		"pipe/config.pbtxt": streamEnsembleConfig, "pipe/1/.keep": "",
	}, triton.WithBackend("repeat", &testmodels.Repeat{}), triton.WithBackend("neg", neg))
	req := repeatRequest(t, "e", false, 0, []int32{3, 4, 5}, []uint32{0, 0, 0})
	req.Model = "pipe"
	var got []int32
	for resp, err := range srv.InferStream(t.Context(), req) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, outputInt32(t, resp, "NEG")...)
	}
	if !slices.Equal(got, []int32{-3, -4, -5}) {
		t.Errorf("NEG per response %v, want [-3 -4 -5]", got)
	}

	beside := strings.Replace(strings.Replace(streamEnsembleConfig,
		`output [ { name: "NEG" data_type: TYPE_INT32 dims: [ 1 ] } ]`,
		`output [ { name: "NEG" data_type: TYPE_INT32 dims: [ 1 ] }, { name: "NEG2" data_type: TYPE_INT32 dims: [ 1 ] } ]`, 1),
		`output_map { key: "Y" value: "NEG" } }`,
		`output_map { key: "Y" value: "NEG" } },
  { model_name: "neg" model_version: -1
    input_map { key: "X" value: "XI" } output_map { key: "Y" value: "NEG2" } }`, 1)
	beside = strings.Replace(beside, `{ name: "WAIT" data_type: TYPE_UINT32 dims: [ 1 ] }`,
		`{ name: "WAIT" data_type: TYPE_UINT32 dims: [ 1 ] }, { name: "XI" data_type: TYPE_INT32 dims: [ 1 ] }`, 1)
	for name, cfg := range map[string]string{
		"not decoupled": strings.Replace(streamEnsembleConfig, "model_transaction_policy { decoupled: true }\n", "", 1),
		"beside":        beside,
	} {
		_, err := triton.New(triton.WithRepository(testmodels.MapFS(map[string]string{
			"repeat/config.pbtxt": testmodels.RepeatConfig, "repeat/1/m": "",
			"neg/config.pbtxt": negConfig, "neg/1/m": "",
			"pipe/config.pbtxt": cfg, "pipe/1/.keep": "",
		})), triton.WithBackend("repeat", &testmodels.Repeat{}), triton.WithBackend("neg", neg))
		want := map[string]string{"not decoupled": "the ensemble must be decoupled too", "beside": "runs beside decoupled step 0"}[name]
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: New = %v; want an error containing %q", name, err, want)
		}
	}
}
