package perf

import (
	"fmt"
	"io"
	"math"
	"sync"
	"time"
)

// progress.go is the progress line: the current step and window and an
// estimate of the time left, redrawn once a second on stderr. It is drawn
// only when stderr is a terminal: in a log or a pipe it would be noise
// between the lines scripts read. Writes to stdout clear it first, so the
// report never shares a line with it.

// progress is the line's state. A nil *progress does nothing.
type progress struct {
	w         io.Writer
	interval  time.Duration // a window's expected length
	maxTrials int

	mu sync.Mutex
	// mu protects the following.
	drawn        bool
	state        progressState
	windowStart  time.Time
	stopOnce     sync.Once
	stopCh, done chan struct{}
}

// progressState is what the line shows.
type progressState struct {
	label          string  // "concurrency 4", "request rate 100"
	step           int     // 1-based
	steps          int     // 0: not known (open range, binary search)
	window         int     // windows done in this step
	windowsPerStep float64 // average over finished steps; 3 before any
	windowLen      time.Duration
	maxTrials      int
	// elapsed is the time spent in the current window so far.
	elapsed time.Duration
}

func newProgress(w io.Writer, enabled bool, cfg *Config) *progress {
	if !enabled {
		return nil
	}
	p := &progress{w: w, interval: cfg.Interval * 12 / 10, maxTrials: int(cfg.MaxTrials),
		stopCh: make(chan struct{}), done: make(chan struct{})}
	if cfg.CountWindows {
		p.interval = time.Second
	}
	p.state = progressState{windowsPerStep: stabilityWindow, windowLen: p.interval, maxTrials: p.maxTrials}
	go p.loop()
	return p
}

func (p *progress) loop() {
	defer close(p.done)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			p.mu.Lock()
			p.state.elapsed = time.Since(p.windowStart)
			line := progressLine(p.state)
			fmt.Fprintf(p.w, "\r\x1b[K%s", line)
			p.drawn = true
			p.mu.Unlock()
		case <-p.stopCh:
			return
		}
	}
}

// clear erases the line before other output.
func (p *progress) clear() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clearLocked()
}

func (p *progress) clearLocked() {
	if p.drawn {
		io.WriteString(p.w, "\r\x1b[K")
		p.drawn = false
	}
}

// stop erases the line for good.
func (p *progress) stop() {
	if p == nil {
		return
	}
	p.stopOnce.Do(func() {
		close(p.stopCh)
		<-p.done
		p.clear()
	})
}

// wrap returns a writer that clears the line before writing to w.
func (p *progress) wrap(w io.Writer) io.Writer {
	if p == nil {
		return w
	}
	return writerFunc(func(b []byte) (int, error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.clearLocked()
		return w.Write(b)
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

// setRange records the search, for the step count.
func (p *progress) setRange(start, end, step float64, binary bool) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case binary && step > 0 && end > start:
		p.state.steps = 2 + int(math.Ceil(math.Log2((end-start)/step)))
	case end == 0 || step == 0:
		p.state.steps = 0
	case end >= start:
		p.state.steps = int(math.Floor((end-start)/step)) + 1
	default:
		p.state.steps = 1
	}
}

func (p *progress) stepStart(lv level) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.state.step++
	p.state.window = 0
	p.windowStart = time.Now()
	if lv.rate == 0 {
		p.state.label = fmt.Sprintf("concurrency %d", lv.concurrency)
	} else {
		p.state.label = "request rate " + cppDouble(lv.rate)
	}
}

func (p *progress) window(k int, _ level, _ *status) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.state.window = k
	p.windowStart = time.Now()
	p.mu.Unlock()
}

func (p *progress) stepDone(windows int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	n := float64(p.state.step - 1)
	if p.state.step == 1 {
		p.state.windowsPerStep = float64(windows)
	} else {
		p.state.windowsPerStep = (p.state.windowsPerStep*n + float64(windows)) / (n + 1)
	}
}

// progressLine formats the state: the step, the window, and the time
// left if the remaining steps take as many windows as the finished ones
// did on average (at least 3, the fewest that can be stable), with the
// bound that --max-trials windows per step gives.
func progressLine(s progressState) string {
	head := fmt.Sprintf("perf_analyzer: %s", s.label)
	if s.steps > 0 {
		head += fmt.Sprintf(" (step %d of %d)", s.step, s.steps)
	} else {
		head += fmt.Sprintf(" (step %d)", s.step)
	}
	head += fmt.Sprintf(", window %d", s.window+1)
	per := max(s.windowsPerStep, stabilityWindow)
	thisStep := max(per-float64(s.window), 1)
	thisMax := float64(max(s.maxTrials-s.window, 1))
	in := float64(min(s.elapsed, s.windowLen))
	if s.steps == 0 {
		return fmt.Sprintf("%s: about %s left in this step (at most %s); further steps until the latency limit",
			head, roundDur(thisStep*float64(s.windowLen)-in), roundDur(thisMax*float64(s.windowLen)-in))
	}
	after := float64(max(s.steps-s.step, 0))
	eta := (thisStep+after*per)*float64(s.windowLen) - in
	most := (thisMax+after*float64(s.maxTrials))*float64(s.windowLen) - in
	return fmt.Sprintf("%s: about %s left (at most %s)", head, roundDur(eta), roundDur(most))
}

func roundDur(ns float64) time.Duration {
	return time.Duration(ns).Round(time.Second)
}
