package perf

import (
	"bytes"
	"testing"
	"time"
)

func TestProgressLine(t *testing.T) {
	tests := []struct {
		s    progressState
		want string
	}{
		{progressState{label: "concurrency 2", step: 2, steps: 4, window: 1, windowsPerStep: 4, windowLen: 6 * time.Second, maxTrials: 10},
			"perf_analyzer: concurrency 2 (step 2 of 4), window 2: about 1m6s left (at most 2m54s)"},
		{progressState{label: "request rate 100", step: 1, steps: 0, window: 0, windowsPerStep: 3, windowLen: time.Second, maxTrials: 10},
			"perf_analyzer: request rate 100 (step 1), window 1: about 3s left in this step (at most 10s); further steps until the latency limit"},
		{progressState{label: "concurrency 2", step: 2, steps: 4, window: 1, windowsPerStep: 4, windowLen: 6 * time.Second, maxTrials: 10, elapsed: 4 * time.Second},
			"perf_analyzer: concurrency 2 (step 2 of 4), window 2: about 1m2s left (at most 2m50s)"},
	}
	for _, tt := range tests {
		if got := progressLine(tt.s); got != tt.want {
			t.Errorf("\n got %q\nwant %q", got, tt.want)
		}
	}
}

func TestProgressClearsBeforeOutput(t *testing.T) {
	var errb, out bytes.Buffer
	cfg := defaultConfig()
	p := newProgress(&errb, true, &cfg)
	p.setRange(1, 4, 1, false)
	p.stepStart(level{concurrency: 1})
	p.mu.Lock()
	p.drawn = true // as if the line had been drawn
	p.mu.Unlock()
	w := p.wrap(&out)
	w.Write([]byte("Request concurrency: 1\n"))
	p.stop()
	if errb.String() != "\r\x1b[K" || out.String() != "Request concurrency: 1\n" {
		t.Errorf("stderr %q, stdout %q", errb.String(), out.String())
	}
	if p.state.steps != 4 || p.state.label != "concurrency 1" {
		t.Errorf("state %+v", p.state)
	}
	var none *progress
	none.clear()
	none.stop()
	if none.wrap(&out) != &out {
		t.Error("a disabled progress line wraps stdout")
	}
}
