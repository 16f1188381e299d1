package triton_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/triton-go/triton"
)

// TestModelHandle: a handle answers as Server.Infer does, checks the
// request's model name, and reports the current version's metadata,
// configuration, readiness and statistics.
func TestModelHandle(t *testing.T) {
	srv := newServer(t, simpleRepo(), triton.WithBackend("gofunc", addSub))
	m := srv.Model("simple")
	if m.Name() != "simple" {
		t.Errorf("Name %q", m.Name())
	}
	ctx := context.Background()
	for _, name := range []string{"", "simple"} {
		req := simpleRequest(t, 2)
		req.Model = name
		resp, err := m.Infer(ctx, req)
		if err != nil {
			t.Fatalf("model %q: %v", name, err)
		}
		want, err := srv.Infer(ctx, simpleRequest(t, 2))
		if err != nil {
			t.Fatal(err)
		}
		for _, out := range []string{"OUTPUT0", "OUTPUT1"} {
			if fmt.Sprint(outputInt32(t, resp, out)) != fmt.Sprint(outputInt32(t, want, out)) {
				t.Errorf("%s through the handle differs from Server.Infer", out)
			}
		}
		if resp.Model != "simple" || resp.Version != 1 {
			t.Errorf("response of %s version %d", resp.Model, resp.Version)
		}
	}
	req := simpleRequest(t, 1)
	req.Model, req.ID = "other", "r1"
	_, err := m.Infer(ctx, req)
	wantError(t, err, triton.InvalidArgument, "request for model 'other' sent through the handle of model 'simple'", "r1")
	_, err = m.Infer(ctx, nil)
	wantError(t, err, triton.InvalidArgument, "nil request")
	req = simpleRequest(t, 1)
	req.Version = 9
	_, err = m.Infer(ctx, req)
	wantError(t, err, triton.NotFound, "'simple' version 9 is not found")

	md, err := m.Metadata()
	if err != nil || md.Name != "simple" || len(md.Inputs) != 2 {
		t.Errorf("Metadata %+v, %v", md, err)
	}
	cfg, err := m.Config()
	if err != nil || cfg.GetMaxBatchSize() != 8 {
		t.Errorf("Config %v, %v", cfg, err)
	}
	if !m.Ready(ctx) {
		t.Error("not ready")
	}
	st, err := m.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.Name != "simple" || st.Version != 1 || st.Success.Count != 4 || st.InferenceCount != 8 {
		t.Errorf("Stats %s version %d: %d successes, %d inferences; want 4 and 8", st.Name, st.Version, st.Success.Count, st.InferenceCount)
	}

	none := srv.Model("none")
	req = simpleRequest(t, 1)
	req.Model = ""
	_, err = none.Infer(ctx, req)
	wantError(t, err, triton.InvalidArgument, "Request for unknown model: 'none' is not found")
	if none.Ready(ctx) {
		t.Error("a model that does not exist is ready")
	}
	if _, err := none.Stats(); triton.CodeOf(err) != triton.InvalidArgument {
		t.Errorf("Stats of a model that does not exist: %v", err)
	}
}

// TestModelHandleFollowsReloads: a handle taken before its model loads
// serves it once loaded, follows it to each new version (the old one
// closing as without handles), fails while it is unloaded, and serves it
// again once it is loaded again. In a synctest bubble, to see the retired
// version close in the background.
func TestModelHandleFollowsReloads(t *testing.T) { synctest.Test(t, testModelHandleFollowsReloads) }

func testModelHandleFollowsReloads(t *testing.T) {
	repo := newDiskRepo(t)
	repo.write("m/config.pbtxt", oneInput("counting", 1, ""))
	repo.write("m/1/x", "")
	c := &counting{}
	srv := serveExplicit(t, repo.dir, c)
	m := srv.Model("m")
	ctx := context.Background()
	serves := func(want int32) {
		t.Helper()
		resp, err := m.Infer(ctx, oneInputRequest(t, "", "", 0))
		if err != nil {
			t.Fatalf("want version %d: %v", want, err)
		}
		if got := outputInt32(t, resp, "OUTPUT0")[0]; got != want {
			t.Fatalf("served version %d, want %d", got, want)
		}
	}
	_, err := m.Infer(ctx, oneInputRequest(t, "", "", 0))
	wantError(t, err, triton.InvalidArgument, "'m' is not found")

	if err := srv.Load(ctx, "m", nil); err != nil {
		t.Fatal(err)
	}
	serves(1)
	repo.write("m/2/x", "")
	if err := srv.Load(ctx, "m", nil); err != nil {
		t.Fatal(err)
	}
	serves(2)
	if st, err := m.Stats(); err != nil || st.Version != 2 || st.Success.Count != 1 {
		t.Errorf("Stats after the reload: version %d, %d successes (%v); want version 2, 1 success", st.Version, st.Success.Count, err)
	}
	if err := srv.Unload(ctx, "m", nil); err != nil {
		t.Fatal(err)
	}
	synctest.Wait() // version 1 retires in the background
	if c.closes.Load() != c.loads.Load() {
		t.Errorf("%d models closed of %d loaded: the handle pins a version", c.closes.Load(), c.loads.Load())
	}
	_, err = m.Infer(ctx, oneInputRequest(t, "", "", 0))
	wantError(t, err, triton.NotFound, "'m' has no available versions")
	if m.Ready(ctx) {
		t.Error("ready while unloaded")
	}
	if err := srv.Load(ctx, "m", nil); err != nil {
		t.Fatal(err)
	}
	serves(2)
}

// TestModelHandleUnderReloads: requests through one handle from many
// goroutines all succeed while the model reloads again and again.
func TestModelHandleUnderReloads(t *testing.T) {
	repo := newDiskRepo(t)
	repo.write("m/config.pbtxt", oneInput("counting", 1, ""))
	repo.write("m/1/x", "")
	c := &counting{}
	srv := serveExplicit(t, repo.dir, c, "m")
	m := srv.Model("m")
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var ok atomic.Int64
	for range 16 {
		wg.Go(func() {
			for ctx.Err() == nil {
				if _, err := m.Infer(context.Background(), oneInputRequest(t, "", "", 0)); err != nil {
					t.Error(err)
					return
				}
				ok.Add(1)
			}
		})
	}
	for i := range 20 {
		repo.write(fmt.Sprintf("m/%d/x", i+2), "")
		if err := srv.Load(context.Background(), "m", nil); err != nil {
			t.Fatal(err)
		}
	}
	stop()
	wg.Wait()
	resp, err := m.Infer(context.Background(), oneInputRequest(t, "", "", 0))
	if err != nil {
		t.Fatal(err)
	}
	if got := outputInt32(t, resp, "OUTPUT0")[0]; got != 21 || ok.Load() == 0 {
		t.Errorf("after the reloads the handle serves version %d (want 21); %d requests succeeded during them", got, ok.Load())
	}
}
