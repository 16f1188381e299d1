package ensemble

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/prototext"

	"github.com/triton-go/triton/modelconfig"
)

func parse(t *testing.T, text string) *modelconfig.ModelConfig {
	t.Helper()
	cfg := &modelconfig.ModelConfig{}
	if err := prototext.Unmarshal([]byte(text), cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// diamond: a(IN) → X; b(X) → Y; c(X) → Z; d(Y, Z) → OUT, plus c → AUX.
const diamond = `name: "e" platform: "ensemble" max_batch_size: 4
input [ { name: "IN" data_type: TYPE_FP32 dims: [ 2 ] } ]
output [ { name: "OUT" data_type: TYPE_FP32 dims: [ 2 ] }, { name: "AUX" data_type: TYPE_FP32 dims: [ 2 ] } ]
ensemble_scheduling { step [
  { model_name: "m" input_map { key: "I" value: "IN" } output_map { key: "O" value: "X" } },
  { model_name: "m" input_map { key: "I" value: "X" } output_map { key: "O" value: "Y" } },
  { model_name: "m" model_version: 3 input_map { key: "I" value: "X" } output_map { key: "O" value: "Z" } output_map { key: "P" value: "AUX" } },
  { model_name: "two" input_map { key: "A" value: "Y" } input_map { key: "B" value: "Z" } output_map { key: "O" value: "OUT" } }
] }`

func lookupOf(t *testing.T, configs ...string) ConfigLookup {
	m := map[string]*modelconfig.ModelConfig{}
	for _, c := range configs {
		cfg := parse(t, c)
		m[cfg.GetName()] = cfg
	}
	return func(model string, version int64) (*modelconfig.ModelConfig, error) {
		if c, ok := m[model]; ok {
			return c, nil
		}
		return nil, fmt.Errorf("no model %s", model)
	}
}

const (
	mConfig = `name: "m" max_batch_size: 8
input [ { name: "I" data_type: TYPE_FP32 dims: [ 2 ] } ]
output [ { name: "O" data_type: TYPE_FP32 dims: [ 2 ] }, { name: "P" data_type: TYPE_FP32 dims: [ 2 ] } ]
dynamic_batching { priority_levels: 2 default_queue_policy { allow_timeout_override: true }
  priority_queue_policy { key: 2 value: { } } }`
	twoConfig = `name: "two" max_batch_size: 0
input [ { name: "A" data_type: TYPE_FP32 dims: [ -1, 2 ] }, { name: "B" data_type: TYPE_FP32 dims: [ -1, 2 ] },
        { name: "C" data_type: TYPE_FP32 dims: [ 2 ] optional: true } ]
output [ { name: "O" data_type: TYPE_FP32 dims: [ -1, 2 ] } ]`
)

func TestCompileDiamond(t *testing.T) {
	p, err := Compile(parse(t, diamond), lookupOf(t, mConfig, twoConfig))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Models(); !slices.Equal(got, []ModelRef{{"m", 0}, {"m", 3}, {"two", 0}}) {
		t.Fatalf("Models() = %v", got)
	}
	deps := [][]int{nil, {0}, {0}, {1, 2}}
	next := [][]int{{1, 2}, {3}, {3}, nil}
	for i, st := range p.steps {
		if !slices.Equal(st.deps, deps[i]) || !slices.Equal(st.next, next[i]) {
			t.Errorf("step %d: deps %v next %v, want %v and %v", i, st.deps, st.next, deps[i], next[i])
		}
	}
	// Asking for AUX alone needs steps 0 and 2, and of step 2 only P.
	n := p.needed([]int{p.ids["AUX"]})
	if !slices.Equal(n.steps, []bool{true, false, true, false}) || n.tensors[p.ids["Z"]] {
		t.Fatalf("needed(AUX) = steps %v, Z needed %v", n.steps, n.tensors[p.ids["Z"]])
	}
	if !slices.Equal(p.all.steps, []bool{true, true, true, true}) {
		t.Fatalf("all outputs need steps %v", p.all.steps)
	}

	// Scheduling passed to m: priorities it has, timeouts its policy for
	// that level takes; "two" has no batcher and takes anything.
	m, two := &p.steps[0], &p.steps[3]
	for _, c := range []struct {
		st          *step
		prio        uint64
		timeout     time.Duration
		wantP       uint64
		wantTimeout time.Duration
	}{
		{m, 1, time.Second, 1, time.Second},
		{m, 2, time.Second, 2, 0}, // level 2's policy takes no override
		{m, 5, time.Second, 0, time.Second},
		{two, 5, time.Second, 5, time.Second},
	} {
		p, to := c.st.scheduling(c.prio, c.timeout)
		if p != c.wantP || to != c.wantTimeout {
			t.Errorf("step %s scheduling(%d, %v) = %d, %v; want %d, %v", c.st.model, c.prio, c.timeout, p, to, c.wantP, c.wantTimeout)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	decoupled := strings.Replace(mConfig, `name: "m"`, `name: "m" model_transaction_policy { decoupled: true }`, 1)
	for _, c := range []struct {
		name, ens string
		models    []string
		want      string
	}{
		{"missing", diamond, []string{mConfig}, "ensemble e contains models that are not available: two"},
		{"decoupled", diamond, []string{decoupled, twoConfig}, "step 0 uses decoupled model m"},
		{"batch", strings.Replace(diamond, "max_batch_size: 4", "max_batch_size: 16", 1), []string{mConfig, twoConfig},
			"ensemble e allows maximum batch size 16, but it contains model m which only allows maximum batch size to be 8"},
		{"shape", strings.Replace(diamond, `dims: [ 2 ] } ]
output`, `dims: [ 3 ] } ]
output`, 1), []string{mConfig, twoConfig}, "inconsistent shape: [ -1 3 ] is inferred from model e while [ -1 2 ] is inferred from model m"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Compile(parse(t, c.ens), lookupOf(t, c.models...))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
}
