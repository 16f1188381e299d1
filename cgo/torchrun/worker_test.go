package torchrun_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/triton-go/triton/cgo/torchrun"
)

// newWorker starts a worker, closed at the end of tb.
func newWorker(tb testing.TB) *torchrun.Worker {
	tb.Helper()
	open(tb)
	w, err := torchrun.NewWorker()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = w.Close() })
	return w
}

// TestWorkerForward: forwards of several goroutines through one worker,
// positional and Dict, queued and inline, each get their own results; an exception comes back
// as the call's error, and the worker goes on.
func TestWorkerForward(t *testing.T) {
	w := newWorker(t)
	addsub := load(t, "addsub.pt", torchrun.Options{InferenceMode: true})
	dict := load(t, "dict_in.pt", torchrun.Options{InferenceMode: true})
	raises := load(t, "raises.pt", torchrun.Options{InferenceMode: true})
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		place := torchrun.Placement(g % 2) // Queued and Inline
		wg.Go(func() {
			for i := range 40 {
				a, b := float32(g*1000+i), float32(i)
				switch i % 3 {
				case 0:
					out, run, err := w.Forward(ctx, addsub, place, []torchrun.Value{val(t, []int64{1, 2}, a, a), val(t, []int64{1, 2}, b, b)})
					if err != nil || run.Waited < 0 || run.Ran <= 0 {
						errs <- errors.Join(err, errors.New("addsub"))
						return
					}
					if got := view[float32](t, out[0]); !slices.Equal(got, []float32{a + b, a + b}) {
						errs <- errors.New("addsub: another call's sum")
						return
					}
				case 1:
					out, _, err := w.ForwardDict(ctx, dict, place, []string{"a", "b"}, []torchrun.Value{val(t, []int64{1}, a), val(t, []int64{1}, b)})
					if err != nil {
						errs <- err
						return
					}
					if got := view[float32](t, out[0]); !slices.Equal(got, []float32{a + b}) {
						errs <- errors.New("dict: another call's sum")
						return
					}
				default:
					_, _, err := w.Forward(ctx, raises, place, []torchrun.Value{val(t, []int64{1}, -a-1)})
					var e *torchrun.Error
					if !errors.As(err, &e) || !strings.Contains(e.Msg, "negative input") {
						errs <- errors.Join(err, errors.New("raises: want its exception"))
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if _, _, err := w.ForwardDict(ctx, dict, torchrun.Queued, []string{"a"}, nil); err == nil {
		t.Error("ForwardDict with 1 name for 0 inputs succeeded")
	}
}

// TestWorkerClose: Close waits for the forwards in progress, later ones
// fail with ErrClosed, and a second Close does nothing; the worker's
// thread is gone (TestMain's check).
func TestWorkerClose(t *testing.T) {
	open(t)
	w, err := torchrun.NewWorker()
	if err != nil {
		t.Fatal(err)
	}
	before := torchrun.Workers()
	m := load(t, "cnn.pt", torchrun.Options{InferenceMode: true})
	x := val(t, []int64{4, 1, 28, 28}, make([]float32, 4*784)...)
	var wg sync.WaitGroup
	started := make(chan struct{}, 3)
	errs := make(chan error, 3*50)
	for range 3 {
		wg.Go(func() {
			started <- struct{}{}
			for range 50 {
				out, _, err := w.Forward(context.Background(), m, torchrun.Queued, []torchrun.Value{x})
				switch {
				case errors.Is(err, torchrun.ErrClosed):
					return
				case err != nil:
					errs <- err
				case !slices.Equal(out[0].Shape, []int64{4, 10}):
					errs <- errors.New("wrong shape")
				}
			}
		})
	}
	for range 3 {
		<-started
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if _, _, err := w.Forward(context.Background(), m, torchrun.Queued, []torchrun.Value{x}); !errors.Is(err, torchrun.ErrClosed) {
		t.Errorf("Forward after Close: %v, want ErrClosed", err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if got := torchrun.Workers(); got != before-1 {
		t.Errorf("%d workers after Close, want %d", got, before-1)
	}
}

// TestWorkerWatched: queued forwards long enough for the watcher to wake
// their submitters (batches of 64 images) from three goroutines each get
// their own results; a lost or misdelivered wake-up hangs or fails it.
func TestWorkerWatched(t *testing.T) {
	w := newWorker(t)
	m := load(t, "cnn.pt", torchrun.Options{InferenceMode: true})
	ctx := context.Background()
	want := make([][]float32, 3)
	inputs := make([]torchrun.Value, 3)
	for g := range inputs {
		image := make([]float32, 64*784)
		for i := range image {
			image[i] = float32((i+g*7)%13) / 13
		}
		inputs[g] = val(t, []int64{64, 1, 28, 28}, image...)
		out, err := m.Forward(ctx, []torchrun.Value{inputs[g]})
		if err != nil {
			t.Fatal(err)
		}
		want[g] = slices.Clone(view[float32](t, out[0]))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for g := range 3 {
		wg.Go(func() {
			for range 20 {
				out, _, err := w.Forward(ctx, m, torchrun.Queued, []torchrun.Value{inputs[g]})
				if err != nil {
					errs <- err
					return
				}
				if !slices.Equal(view[float32](t, out[0]), want[g]) {
					errs <- errors.New("another call's outputs")
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
