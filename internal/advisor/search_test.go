package advisor

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// analytic is a Measurer over a closed-form model of a server with
// dynamic batching, so that the search is tested on exact, repeatable
// figures: a batch of b rows computes in fixed + perRow × b; c clients
// spread over the instances make batches of c ÷ instances rows (at most
// max_batch_size); instances beyond the cores slow every execution down
// in proportion; latency follows Little's law (c ÷ throughput), plus the
// queue delay when the clients cannot fill the preferred batch.
type analytic struct {
	fixed, perRow time.Duration
	cores         int
	// maxBatchOK > 0 fails the load of a larger max_batch_size.
	maxBatchOK int
	// From measurement slowFrom on (when > 0), every batch takes twice
	// as long: a machine that became busy.
	slowFrom int
	// cancel, when set, is called at measurement cancelAt.
	cancel   func()
	cancelAt int

	cur               Candidate
	applies, measures int
}

func (a *analytic) Apply(_ context.Context, c Candidate) error {
	if a.maxBatchOK > 0 && c.MaxBatch > a.maxBatchOK {
		return errors.New("the model's batch dimension is fixed")
	}
	a.applies++
	a.cur = c
	return nil
}

func (a *analytic) Measure(ctx context.Context, conc int) (Measurement, error) {
	a.measures++
	if a.cancel != nil && a.measures == a.cancelAt {
		a.cancel()
	}
	if err := ctx.Err(); err != nil {
		return Measurement{}, err
	}
	m := a.at(a.cur, conc)
	if a.slowFrom > 0 && a.measures >= a.slowFrom {
		m.Throughput /= 2
	}
	return m, nil
}

func (a *analytic) at(c Candidate, conc int) Measurement {
	n := c.Instances
	b := 1
	if c.Dynamic {
		b = max(1, min(conc/n, c.MaxBatch))
	}
	busy := min(n, (conc+b-1)/b)
	exec := a.fixed + a.perRow*time.Duration(b)
	exec = time.Duration(float64(exec) * math.Max(1, float64(busy)/float64(a.cores)))
	ips := float64(busy*b) / exec.Seconds()
	lat := time.Duration(float64(conc) / ips * 1e9)
	if c.Dynamic && len(c.Preferred) > 0 && conc/n < c.Preferred[0] {
		lat += c.Delay
	}
	count := uint64(ips * 3 / float64(b))
	return Measurement{
		Concurrency: conc, Throughput: ips, Stable: true,
		Avg: lat, P50: lat, P90: lat * 11 / 10, P95: lat * 115 / 100, P99: lat * 13 / 10,
		Queue: max(lat-exec, 0), Compute: exec,
		Batches: []BatchTime{{Size: b, Count: count, Total: time.Duration(count) * exec}},
	}
}

// request is a Request for a model that starts with one instance and no
// dynamic batching.
func (a *analytic) request(budget Budget, maxBatch int) Request {
	orig := Candidate{Instances: 1, MaxBatch: maxBatch}
	a.cur = orig
	return Request{Model: "m", Budget: budget, Original: orig, Baseline: a.at(orig, 1), MaxInstances: 2, MaxConcurrency: 256}
}

// advise runs Advise in a synctest bubble (its elapsed time is then 0).
func advise(t *testing.T, ctx context.Context, req Request, m Measurer) (*Advice, error) {
	t.Helper()
	var a *Advice
	var err error
	synctest.Test(t, func(*testing.T) { a, err = Advise(ctx, req, m) })
	return a, err
}

func report(t *testing.T, a *Advice) string {
	t.Helper()
	var b bytes.Buffer
	if err := a.Report(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs (run with -update after checking):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func stages(a *Advice) map[string]int {
	n := map[string]int{}
	for _, p := range a.Points {
		n[p.Stage]++
	}
	return n
}

// checkChoice checks the choice against every point: within the budget,
// and no point within the budget more than the noise margin faster.
func checkChoice(t *testing.T, a *Advice) {
	t.Helper()
	if a.Chosen == nil || !a.Met || !a.Chosen.Within {
		t.Fatalf("chosen %+v, met %v", a.Chosen, a.Met)
	}
	for _, p := range a.Points {
		if p.Within && p.Throughput > a.Chosen.Throughput/(1-noise) {
			t.Errorf("#%d (%s) has %.1f infer/s within the budget; the choice %.1f", p.N, p.Candidate, p.Throughput, a.Chosen.Throughput)
		}
	}
}

func TestAdvisePays(t *testing.T) {
	m := &analytic{fixed: 2 * time.Millisecond, perRow: 50 * time.Microsecond, cores: 2}
	a, err := advise(t, context.Background(), m.request(Budget{99, 50 * time.Millisecond}, 64), m)
	if err != nil {
		t.Fatal(err)
	}
	checkChoice(t, a)
	if !a.FitOK || !a.Pays() {
		t.Errorf("fit %+v ok %v: batching should pay", a.Fit, a.FitOK)
	}
	if !a.Chosen.Candidate.Dynamic || a.Chosen.Candidate.Instances != 2 {
		t.Errorf("chosen %s, want dynamic batching on 2 instances", a.Chosen.Candidate)
	}
	if a.Profile.Name != "online" || a.Knee < 2 {
		t.Errorf("profile %s, knee %d", a.Profile.Name, a.Knee)
	}
	n := stages(a)
	if n[StageBatch] == 0 || n[StageRefine] == 0 || n[StageConfirm] != 2*confirmTop || n[StageConcurrency] == 0 {
		t.Errorf("points by stage: %v", n)
	}
	if len(a.Points) > 40 {
		t.Errorf("%d points: the search should stay small", len(a.Points))
	}
	if m.applies != a.Loads {
		t.Errorf("%d applies, advice counts %d loads", m.applies, a.Loads)
	}
	golden(t, "pays", report(t, a))
}

func TestAdviseDoesNotPay(t *testing.T) {
	m := &analytic{fixed: 0, perRow: time.Millisecond, cores: 2}
	a, err := advise(t, context.Background(), m.request(Budget{99, 50 * time.Millisecond}, 8), m)
	if err != nil {
		t.Fatal(err)
	}
	checkChoice(t, a)
	if !a.FitOK || a.Pays() {
		t.Errorf("fit %+v ok %v: batching should not pay", a.Fit, a.FitOK)
	}
	if a.Chosen.Candidate.Dynamic {
		t.Errorf("chosen %s, want no dynamic batching", a.Chosen.Candidate)
	}
	if n := stages(a); n[StageRefine] != 0 {
		t.Errorf("points by stage %v: no refinement when batching does not pay", n)
	}
	r := report(t, a)
	if !strings.Contains(r, "batching does not pay") || strings.Contains(r, "dynamic_batching {") {
		t.Errorf("report:\n%s", r)
	}
	golden(t, "does-not-pay", r)
}

func TestAdviseUnreachableBudget(t *testing.T) {
	m := &analytic{fixed: 30 * time.Millisecond, perRow: time.Millisecond, cores: 2}
	a, err := advise(t, context.Background(), m.request(Budget{99, 10 * time.Millisecond}, 8), m)
	if err != nil {
		t.Fatal(err)
	}
	if a.Met || a.Chosen == nil || !strings.Contains(a.Reason, "no setting measured met p99=10ms") {
		t.Fatalf("met %v, chosen %+v, reason %q", a.Met, a.Chosen, a.Reason)
	}
	if a.Profile.Name != "real-time" {
		t.Errorf("profile %s: a model taking over a quarter of the budget moves toward real-time", a.Profile.Name)
	}
	if n := stages(a); n[StageBatch] != 0 || n[StageConcurrency] != 0 {
		t.Errorf("points by stage %v: nothing to search when no instance count meets the budget", n)
	}
}

func TestAdviseNoBatchDimension(t *testing.T) {
	m := &analytic{fixed: time.Millisecond, perRow: 0, cores: 2}
	a, err := advise(t, context.Background(), m.request(Budget{99, 20 * time.Millisecond}, 0), m)
	if err != nil {
		t.Fatal(err)
	}
	checkChoice(t, a)
	if n := stages(a); n[StageBatch] != 0 || n[StageRefine] != 0 {
		t.Errorf("points by stage %v", n)
	}
	if len(a.Notes) != 1 || !strings.Contains(a.Notes[0], "max_batch_size is 0") {
		t.Errorf("notes %q", a.Notes)
	}
	if c := a.Chosen.Candidate; c.Dynamic || c.MaxBatch != 0 {
		t.Errorf("chosen %s", c)
	}
}

func TestAdviseLoadFailure(t *testing.T) {
	m := &analytic{fixed: 2 * time.Millisecond, perRow: 10 * time.Microsecond, cores: 2, maxBatchOK: 8}
	a, err := advise(t, context.Background(), m.request(Budget{99, 100 * time.Millisecond}, 8), m)
	if err != nil {
		t.Fatal(err)
	}
	checkChoice(t, a)
	failed := 0
	for _, p := range a.Points {
		if p.Err != nil {
			failed++
			if p.Candidate.MaxBatch <= 8 {
				t.Errorf("#%d failed: %s", p.N, p.Candidate)
			}
		}
	}
	if failed == 0 || !strings.Contains(strings.Join(a.Notes, "\n"), "max_batch_size 16 failed to load: the model's batch dimension is fixed") {
		t.Errorf("%d failed points, notes %q", failed, a.Notes)
	}
	if a.Chosen.Candidate.MaxBatch > 8 {
		t.Errorf("chosen %s", a.Chosen.Candidate)
	}
}

func TestAdviseNoBudget(t *testing.T) {
	m := &analytic{fixed: 2 * time.Millisecond, perRow: 50 * time.Microsecond, cores: 2}
	a, err := advise(t, context.Background(), m.request(Budget{}, 8), m)
	if err != nil {
		t.Fatal(err)
	}
	checkChoice(t, a)
	if a.Profile.Name != "offline" || !strings.Contains(a.Reason, "(no latency budget)") {
		t.Errorf("profile %s, reason %q", a.Profile.Name, a.Reason)
	}
}

func TestAdviseCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := &analytic{fixed: 2 * time.Millisecond, perRow: 50 * time.Microsecond, cores: 2, cancel: cancel, cancelAt: 6}
	a, err := advise(t, ctx, m.request(Budget{99, 50 * time.Millisecond}, 64), m)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if a == nil || len(a.Points) != 6 || a.Chosen == nil {
		t.Fatalf("advice so far: %+v", a)
	}
	if r := report(t, a); !strings.Contains(r, "instance_group") {
		t.Errorf("the partial report has no snippet:\n%s", r)
	}
}

func TestDominant(t *testing.T) {
	if d := Dominant(nil); d != "" {
		t.Errorf("Dominant(nil) = %q", d)
	}
	sh := []Share{{Model: "a", Compute: 1}, {Model: "b", Compute: 3}, {Model: "c", Compute: 2}}
	if d := Dominant(sh); d != "b" {
		t.Errorf("Dominant = %q, want b", d)
	}
}

func TestAdviseDrift(t *testing.T) {
	m := &analytic{fixed: 2 * time.Millisecond, perRow: 50 * time.Microsecond, cores: 2, slowFrom: 12}
	a, err := advise(t, context.Background(), m.request(Budget{99, 50 * time.Millisecond}, 64), m)
	if err != nil {
		t.Fatal(err)
	}
	last := a.Points[len(a.Points)-1]
	if last.Stage != StageRecheck || !last.Candidate.Equal(a.Points[0].Candidate) || last.Concurrency != 1 {
		t.Errorf("last point %+v: want the baseline again", last)
	}
	if !strings.Contains(strings.Join(a.Notes, "\n"), "the machine's speed changed during the advice") {
		t.Errorf("notes %q", a.Notes)
	}
	// Without drift, no note.
	m = &analytic{fixed: 2 * time.Millisecond, perRow: 50 * time.Microsecond, cores: 2}
	a, err = advise(t, context.Background(), m.request(Budget{99, 50 * time.Millisecond}, 64), m)
	if err != nil || len(a.Notes) != 0 {
		t.Errorf("err %v, notes %q", err, a.Notes)
	}
}
