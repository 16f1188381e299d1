package triton_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/tensor"
)

// sized is a backend whose models report the bytes their "bytes"
// parameter says, answer OUTPUT0 = INPUT0, and hold a request while the
// channel hold (if set) is open. A load waits for loadGate (if set).
type sized struct {
	loads    sync.Map // model → *atomic.Int64
	hold     chan struct{}
	held     chan string // told each time a request starts being held
	loadGate chan struct{}
}

type sizedModel struct {
	bytes int64
	b     *sized
	name  string
}

func (b *sized) Load(ctx context.Context, spec *backend.ModelSpec) (backend.Model, error) {
	c, _ := b.loads.LoadOrStore(spec.Name, new(atomic.Int64))
	c.(*atomic.Int64).Add(1)
	if b.loadGate != nil {
		select {
		case <-b.loadGate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	n, err := strconv.ParseInt(spec.Config.GetParameters()["bytes"].GetStringValue(), 10, 64)
	if err != nil {
		return nil, err
	}
	return &sizedModel{bytes: n, b: b, name: spec.Name}, nil
}

func (b *sized) loadCount(model string) int64 {
	c, ok := b.loads.Load(model)
	if !ok {
		return 0
	}
	return c.(*atomic.Int64).Load()
}

func (m *sizedModel) MemoryBytes() (int64, error) { return m.bytes, nil }
func (m *sizedModel) Close() error                { return nil }
func (m *sizedModel) NewInstance(context.Context, backend.InstanceSpec) (backend.Instance, error) {
	return backend.Func(func(ctx context.Context, b *backend.Batch) error {
		if m.b.hold != nil {
			if m.b.held != nil {
				m.b.held <- m.name
			}
			<-m.b.hold
		}
		for _, r := range b.Requests {
			out := r.Inputs[0]
			out.Name = "OUTPUT0"
			r.SetOutput(out)
		}
		return nil
	}), nil
}

// sizedRepo is a repository of models named names, each of bytes KiB
// (much more than its files, which the budget estimates a first load
// by), with extra config text.
func sizedRepo(bytes int64, extra string, names ...string) map[string]string {
	files := map[string]string{}
	for _, n := range names {
		files[n+"/config.pbtxt"] = fmt.Sprintf("%s\nparameters { key: \"bytes\" value: { string_value: \"%d\" } }\n%s", oneInput("sized", 1, ""), bytes<<10, extra)
		files[n+"/1/model.bin"] = ""
	}
	return files
}

func newBudgetServer(t *testing.T, b *sized, files map[string]string, opts ...triton.Option) *triton.Server {
	t.Helper()
	srv, err := triton.New(append([]triton.Option{
		triton.WithRepository(mapFS(files)),
		triton.WithBackend("sized", b),
		triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit}),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

func infer(t *testing.T, srv *triton.Server, model string, v int32) {
	t.Helper()
	resp, err := srv.Infer(context.Background(), oneInputRequest(t, model, "", v))
	if err != nil {
		t.Fatalf("infer %s: %v", model, err)
	}
	if got := outputInt32(t, resp, "OUTPUT0"); got[0] != v {
		t.Fatalf("infer %s: %d, want %d", model, got[0], v)
	}
}

func loaded(srv *triton.Server) []string {
	var names []string
	for _, m := range srv.Memory().Models {
		if !m.Retiring {
			names = append(names, m.Name)
		}
	}
	return names
}

func indexReason(srv *triton.Server, model string) string {
	for _, st := range srv.Index(context.Background()) {
		if st.Name == model {
			return st.State + " " + st.Reason
		}
	}
	return ""
}

// A load that passes the budget evicts the least recently used idle
// model; the index says why it left, and the counters count it.
func TestBudgetEvictsLeastRecentlyUsed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &sized{}
		srv := newBudgetServer(t, b, sizedRepo(100, "", "a", "b", "c", "d"), triton.WithMemoryBudget(300<<10))
		ctx := context.Background()
		for _, m := range []string{"a", "b", "c"} {
			if err := srv.Load(ctx, m, nil); err != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Second) // past minResidency, and distinct times
		}
		infer(t, srv, "a", 1) // a is now the most recently used; b the least
		if err := srv.Load(ctx, "d", nil); err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(loaded(srv), ","); got != "a,c,d" {
			t.Errorf("loaded %s, want a,c,d", got)
		}
		if r := indexReason(srv, "b"); r != "UNAVAILABLE evicted to make room for 'd' in the memory budget" {
			t.Errorf("b in the index: %q", r)
		}
		u := srv.Memory()
		if u.Resident != 300<<10 || u.Budget != 300<<10 {
			t.Errorf("resident %d of %d", u.Resident, u.Budget)
		}
		if c := u.Counts["b"]; c.Evictions[triton.EvictedBudget] != 1 || c.Loads[triton.TriggerExplicit] != 1 {
			t.Errorf("b's counts %+v", c)
		}
		// b loaded again within a minute of its eviction: thrashing.
		if err := srv.Load(ctx, "b", nil); err != nil {
			t.Fatal(err)
		}
		if c := srv.Memory().Counts["b"]; c.Thrashes != 1 || c.Loads[triton.TriggerExplicit] != 2 {
			t.Errorf("b's counts after reloading %+v", c)
		}
	})
}

// Pinned models (named at start-up, or by their parameter) and models
// with a request in flight are not evicted; a model that cannot fit
// fails with the budget, its size and what holds the rest.
func TestBudgetNeverEvictsPinnedOrBusy(t *testing.T) {
	files := sizedRepo(100, "", "start", "busy", "big")
	for k, v := range sizedRepo(100, `parameters { key: "pinned" value: { string_value: "true" } }`, "param") {
		files[k] = v
	}
	files["big/config.pbtxt"] = strings.Replace(files["big/config.pbtxt"], `"102400"`, `"153600"`, 1)
	b := &sized{hold: make(chan struct{}), held: make(chan string, 1)}
	srv := newBudgetServer(t, b, files, triton.WithMemoryBudget(350<<10), triton.WithStartupModels("start"))
	ctx := context.Background()
	for _, m := range []string{"param", "busy"} {
		if err := srv.Load(ctx, m, nil); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := srv.Infer(ctx, oneInputRequest(t, "busy", "", 1))
		done <- err
	}()
	<-b.held
	err := srv.Load(ctx, "big", nil)
	wantError(t, err, triton.Unavailable, "failed to load 'big'", "needs 150.0 KiB", "memory budget of 350.0 KiB",
		"'busy' 100.0 KiB, in use", "'param' 100.0 KiB, pinned", "'start' 100.0 KiB, pinned")
	close(b.hold)
	if err := <-done; err != nil {
		t.Fatalf("the busy model's request: %v", err)
	}
	if got := strings.Join(loaded(srv), ","); got != "busy,param,start" {
		t.Errorf("loaded %s", got)
	}
	// Idle now: busy makes room for big.
	if err := srv.Load(ctx, "big", nil); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(loaded(srv), ","); got != "big,param,start" {
		t.Errorf("loaded %s", got)
	}
}

// A model bigger than the whole budget never loads, whatever is evicted.
func TestBudgetTooBig(t *testing.T) {
	b := &sized{}
	srv := newBudgetServer(t, b, sizedRepo(1<<10, "", "huge"), triton.WithMemoryBudget(1000<<10))
	err := srv.Load(context.Background(), "huge", nil)
	wantError(t, err, triton.Unavailable, "needs 1.0 MiB", "memory budget of 1000.0 KiB", "nothing else is loaded")
	if len(loaded(srv)) != 0 {
		t.Errorf("loaded %v", loaded(srv))
	}
	if r := indexReason(srv, "huge"); !strings.HasPrefix(r, "UNAVAILABLE ") || !strings.Contains(r, "memory budget of 1000.0 KiB") {
		t.Errorf("huge in the index: %q", r)
	}
}

// Many concurrent requests for a model not loaded share one load, and
// all of them are answered.
func TestLoadOnDemandSharesOneLoad(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		b := &sized{loadGate: gate}
		srv := newBudgetServer(t, b, sizedRepo(10, "", "m"), triton.WithLoadOnDemand(true))
		const n = 50
		errs := make(chan error, n)
		for i := range n {
			go func() {
				resp, err := srv.Infer(context.Background(), oneInputRequest(t, "m", "", int32(i)))
				if err == nil {
					out, _ := resp.Output("OUTPUT0")
					if v, _ := tensor.View[int32](out); v[0] != int32(i) {
						err = fmt.Errorf("answer %d for %d", v[0], i)
					}
				}
				errs <- err
			}()
		}
		synctest.Wait() // every request waits for the one load
		close(gate)
		for range n {
			if err := <-errs; err != nil {
				t.Error(err)
			}
		}
		if got := b.loadCount("m"); got != 1 {
			t.Errorf("%d loads, want 1", got)
		}
		c := srv.Memory().Counts["m"]
		if c.Loads[triton.TriggerOnDemand] != 1 || c.Waits != n {
			t.Errorf("counts %+v, want 1 on-demand load and %d waits", c, n)
		}
		// A model not in the repository keeps Triton's answer.
		_, err := srv.Infer(context.Background(), oneInputRequest(t, "nope", "", 1))
		wantError(t, err, triton.InvalidArgument, "Request for unknown model: 'nope' is not found")
	})
}

// A request gives up at its own deadline while the load goes on; the
// load then serves the next request.
func TestLoadOnDemandDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		b := &sized{loadGate: gate}
		srv := newBudgetServer(t, b, sizedRepo(10, "", "m"), triton.WithLoadOnDemand(true))
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := srv.Infer(ctx, oneInputRequest(t, "m", "", 1))
		wantError(t, err, triton.DeadlineExceeded, "waiting 1s for model 'm' to load on demand")
		close(gate)
		infer(t, srv, "m", 2)
		if got := b.loadCount("m"); got != 1 {
			t.Errorf("%d loads, want 1", got)
		}
	})
}

// keep_alive unloads a model idle that long: the model's own parameter
// first, then the server's; 0 at once, negative never.
func TestKeepAlive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		files := sizedRepo(10, "", "server")
		for name, ka := range map[string]string{"soon": "2s", "now": "0", "never": "-1"} {
			for k, v := range sizedRepo(10, fmt.Sprintf(`parameters { key: "keep_alive" value: { string_value: "%s" } }`, ka), name) {
				files[k] = v
			}
		}
		b := &sized{}
		srv := newBudgetServer(t, b, files, triton.WithKeepAlive(time.Minute), triton.WithLoadOnDemand(true))
		for _, m := range []string{"server", "soon", "now", "never"} {
			infer(t, srv, m, 1)
		}
		synctest.Wait()
		if got := strings.Join(loaded(srv), ","); got != "never,server,soon" {
			t.Errorf("right after: loaded %s", got)
		}
		time.Sleep(1500 * time.Millisecond)
		infer(t, srv, "soon", 2) // used again: its 2 s start over
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()
		if got := strings.Join(loaded(srv), ","); got != "never,server,soon" {
			t.Errorf("after 3 s: loaded %s", got)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if got := strings.Join(loaded(srv), ","); got != "never,server" {
			t.Errorf("after 4 s: loaded %s", got)
		}
		if r := indexReason(srv, "soon"); r != "UNAVAILABLE unloaded after 2s idle (keep_alive)" {
			t.Errorf("soon in the index: %q", r)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := strings.Join(loaded(srv), ","); got != "never" {
			t.Errorf("after a minute: loaded %s", got)
		}
		// Unloaded by keep_alive, loaded again on demand.
		infer(t, srv, "server", 3)
		if c := srv.Memory().Counts["server"]; c.Evictions[triton.EvictedKeepAlive] != 1 || c.Loads[triton.TriggerOnDemand] != 2 {
			t.Errorf("server's counts %+v", c)
		}
	})
}

// Bad lifecycle parameters fail the load, naming the parameter; load on
// demand needs explicit model control.
func TestLifecycleBadInput(t *testing.T) {
	files := sizedRepo(10, `parameters { key: "keep_alive" value: { string_value: "soonish" } }`, "ka")
	for k, v := range sizedRepo(10, `parameters { key: "pinned" value: { string_value: "yes" } }`, "pin") {
		files[k] = v
	}
	srv := newBudgetServer(t, &sized{}, files)
	wantError(t, srv.Load(context.Background(), "ka", nil), triton.InvalidArgument, "parameter keep_alive of model 'ka'", `"soonish" is neither a duration`)
	wantError(t, srv.Load(context.Background(), "pin", nil), triton.InvalidArgument, `parameter pinned of model 'pin' must be "true" or "false", not "yes"`)
	_, err := triton.New(triton.WithRepository(mapFS(files)), triton.WithLoadOnDemand(true))
	wantError(t, err, triton.InvalidArgument, "WithLoadOnDemand needs explicit model control")
	_, err = triton.New(triton.WithRepository(mapFS(files)), triton.WithMemoryBudget(-1))
	wantError(t, err, triton.InvalidArgument, "negative budget")
}

// Loads, unloads and requests from many goroutines at once, under a
// budget that fits 3 of 8 models with loads on demand: every request is
// answered, the budget holds between operations, and the state at the
// end is consistent (every model either serves or is unloaded).
func TestLifecycleConcurrentChurn(t *testing.T) {
	names := []string{"m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7"}
	b := &sized{}
	srv := newBudgetServer(t, b, sizedRepo(100, "", names...), triton.WithMemoryBudget(300<<10), triton.WithLoadOnDemand(true))
	ctx := context.Background()
	var wg sync.WaitGroup
	var (
		mu     sync.Mutex
		errs   []error
		record = func(err error) {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	)
	for g := range 16 {
		wg.Go(func() {
			for i := range 60 {
				m := names[(g*7+i*3)%len(names)]
				switch {
				case g%8 == 7 && i%5 == 0:
					_ = srv.Unload(ctx, m, nil) // may race with anything: only its effect on requests matters
				case g%8 == 6 && i%5 == 0:
					if err := srv.Load(ctx, m, nil); err != nil && triton.CodeOf(err) != triton.Unavailable {
						record(err)
					}
				default:
					resp, err := srv.Infer(ctx, oneInputRequest(t, m, "", int32(i)))
					if err == nil {
						out, _ := resp.Output("OUTPUT0")
						if v, _ := tensor.View[int32](out); v[0] != int32(i) {
							err = fmt.Errorf("%s answered %d for %d", m, v[0], i)
						}
					}
					if err != nil {
						record(err)
					}
				}
				if u := srv.Memory(); u.Resident > u.Budget+100<<10 {
					record(fmt.Errorf("resident %d over the budget %d plus one model", u.Resident, u.Budget))
				}
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d failures; the first: %v", len(errs), errs[0])
	}
	u := srv.Memory()
	if u.Resident > u.Budget {
		t.Errorf("resident %d over the budget %d at rest", u.Resident, u.Budget)
	}
	for _, st := range srv.Index(ctx) {
		if st.State != "READY" && !strings.HasPrefix(st.State+" "+st.Reason, "UNAVAILABLE ") {
			t.Errorf("%s left %s %s", st.Name, st.State, st.Reason)
		}
	}
	var evicted uint64
	for _, c := range u.Counts {
		evicted += c.Evictions[triton.EvictedBudget]
	}
	if evicted == 0 {
		t.Error("no model was evicted: the test did not press the budget")
	}
	if err := srv.Close(); err != nil && !errors.Is(err, triton.ErrServerClosed) {
		t.Error(err)
	}
}
