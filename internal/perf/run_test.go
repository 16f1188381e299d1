package perf

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/sysshm"
)

// The tests below run the whole tool against fakeServer inside
// testing/synctest bubbles: requests take fake time, windows last fake
// time, so every figure is exact and the output can be compared whole.
// Service times like 700001 ns keep completions off the window
// boundaries, which fall on whole milliseconds.

func (f *fakeServer) SystemSharedMemoryStatus(context.Context, string) ([]sysshm.Region, error) {
	return nil, nil
}

func TestRunConcurrency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, simpleConfig)
		f.delay = func(int) time.Duration { return 700001 * time.Nanosecond }
		csv := filepath.Join(t.TempDir(), "out.csv")
		st, out, errs := run(f, context.Background(), "-m", "simple", "-p", "100", "--concurrency-range", "1:2", "-f", csv)
		if st != ExitSuccess || errs != "" {
			t.Fatalf("status %d, stderr %q", st, errs)
		}
		b, err := os.ReadFile(csv)
		if err != nil {
			t.Fatal(err)
		}
		golden(t, "concurrency", out+"--- csv\n"+string(b))
	})
}

func TestRunVerboseBatchPercentile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, simpleConfig)
		f.delay = func(n int) time.Duration { return time.Duration(500001+(n%10)*100000) * time.Nanosecond }
		csv := filepath.Join(t.TempDir(), "out.csv")
		st, out, errs := run(f, context.Background(), "-m", "simple", "-p", "200", "-b", "4", "--percentile=95", "-v", "--verbose-csv", "-f", csv)
		if st != ExitSuccess {
			t.Fatalf("status %d, stderr %q", st, errs)
		}
		b, _ := os.ReadFile(csv)
		golden(t, "verbose", out+"--- csv\n"+string(b))
	})
}

// TestRunRequestRate checks that rate-mode latency runs from the
// scheduled send: a server slower than the gap between requests is met
// by more senders, and latency is its service time.
func TestRunRequestRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, simpleConfig)
		f.delay = func(int) time.Duration { return 25000001 * time.Nanosecond }
		csv := filepath.Join(t.TempDir(), "out.csv")
		st, out, errs := run(f, context.Background(), "-m", "simple", "-p", "500", "--request-rate-range", "100:200:100", "-f", csv)
		if st != ExitSuccess {
			t.Fatalf("status %d, stderr %q", st, errs)
		}
		b, _ := os.ReadFile(csv)
		// Which of the pool's senders takes a slot is up to the
		// scheduler, and with it each sender's idle time: the overhead
		// line is not compared.
		out = regexp.MustCompile(`Avg client overhead: [0-9.]+%`).ReplaceAllString(out, "Avg client overhead: (varies)")
		golden(t, "rate", out+"--- csv\n"+string(b))
	})
}

// TestRunNoCoordinatedOmission: a server that serves one request at a
// time, slower than the schedule, makes requests wait; the wait counts in
// the latency (measured from the scheduled time), and the late sends are
// flagged as perf_analyzer flags them.
func TestRunNoCoordinatedOmission(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, simpleConfig)
		f.serial = true
		f.delay = func(int) time.Duration { return 12 * time.Millisecond }
		st, out, _ := run(f, context.Background(), "-m", "simple", "-p", "300", "--request-rate-range", "100", "-r", "3", "-v")
		if st != ExitStability {
			t.Fatalf("status %d, want %d (latency grows without bound):\n%s", st, ExitStability, out)
		}
		// Each window's latency is far above the 12 ms service time.
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, "Pass [") && strings.Contains(l, "Avg latency: ") {
				us := l[strings.Index(l, "Avg latency: ")+len("Avg latency: "):]
				us = us[:strings.Index(us, " ")]
				if n := atoi(us); n < 20000 {
					t.Errorf("window latency %d µs: the queue's wait is missing: %s", n, l)
				}
			}
		}
	})
	// The same with the load generator's own limit: one sender only.
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, simpleConfig)
		f.delay = func(int) time.Duration { return 12 * time.Millisecond }
		m := &modelInfo{name: "simple", maxBatch: 8}
		reqs := &requestSet{cycle: []prepared{{}}}
		cfg := defaultConfig()
		l := newLoader(f, m, reqs, &cfg, clock{base: time.Now()}, nil)
		l.maxSenders = 1
		l.startRate(newConstant(100), 0)
		time.Sleep(205 * time.Millisecond)
		l.stopDispatcher()
		l.close(time.Second)
		c := l.collect()
		var samples []sample
		for _, p := range c.parts {
			samples = append(samples, p...)
		}
		if len(samples) < 10 {
			t.Fatalf("%d samples", len(samples))
		}
		delayed := 0
		for i, s := range samples {
			if s.start%int64(10*time.Millisecond) != 0 {
				t.Errorf("sample %d starts at %d, not at its slot", i, s.start)
			}
			if s.flags&flagDelayed != 0 {
				delayed++
			}
		}
		last := samples[len(samples)-1]
		if lat := last.end - last.start; lat < int64(20*time.Millisecond) {
			t.Errorf("last latency %v: the wait for the sender is missing", time.Duration(lat))
		}
		if delayed < len(samples)/2 {
			t.Errorf("%d of %d sends flagged late", delayed, len(samples))
		}
	})
}

func TestRunUnstable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, simpleConfig)
		base := time.Now()
		// Service time alternates between 1 and 3 ms every 240 ms: no
		// three windows of 120 ms agree.
		f.delay = func(int) time.Duration {
			if (time.Since(base)/(240*time.Millisecond))%2 == 0 {
				return 1000001 * time.Nanosecond
			}
			return 3000001 * time.Nanosecond
		}
		st, out, errs := run(f, context.Background(), "-m", "simple", "-p", "100", "-r", "5", "-f", filepath.Join(t.TempDir(), "x.csv"))
		if st != ExitStability {
			t.Fatalf("status %d:\n%s\n%s", st, out, errs)
		}
		want := "Failed to obtain stable measurement within 5 measurement windows for concurrency 1. Please try to increase the --measurement-interval.\nFailed to obtain stable measurement.\n"
		if errs != want {
			t.Errorf("stderr %q, want %q", errs, want)
		}
		if strings.Contains(out, "Inferences/Second vs.") {
			t.Errorf("summary printed after a stability failure:\n%s", out)
		}
	})
}

func TestRunNoSamples(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, simpleConfig)
		f.delay = func(int) time.Duration { return 10 * time.Second }
		st, _, errs := run(f, context.Background(), "-m", "simple", "-p", "100", "-r", "3")
		if st != ExitOption || errs != "No valid requests recorded within time interval. Please use a larger time window.\n" {
			t.Fatalf("status %d, stderr %q", st, errs)
		}
	})
}

func TestRunRequestFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, simpleConfig)
		f.fail = func(n int) error {
			if n == 50 {
				return &triton.Error{Code: triton.Internal, Model: "simple", Err: errors.New("out of memory\nin the backend")}
			}
			return nil
		}
		st, _, errs := run(f, context.Background(), "-m", "simple", "-p", "100")
		want := "Failed to maintain requested inference load. Worker thread(s) failed to generate concurrent requests: triton: model \"simple\": out of memory\nin the backend\n"
		if st != ExitGeneric || errs != want {
			t.Fatalf("status %d, stderr %q", st, errs)
		}
	})
}

// TestRunBadInput: each runtime failure is one line on stderr, status 99.
func TestRunBadInput(t *testing.T) {
	noBatch := strings.Replace(simpleConfig, "max_batch_size: 8", "max_batch_size: 0", 1)
	decoupled := simpleConfig + "\nmodel_transaction_policy { decoupled: true }"
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"data": [{"INPUT0": [1.0, 2.0]}]}`), 0o644)
	tests := []struct {
		name   string
		config string
		args   []string
		want   string
	}{
		{"unknown model", simpleConfig, []string{"-m", "nope"}, `error: failed to get model metadata: triton: model "nope": Request for unknown model: 'nope' is not found`},
		{"shape against the model", simpleConfig, []string{"-m", "simple", "--shape", "INPUT0:5"}, `error: The supplied shape of [5] for input "INPUT0" is incompatible with the model's input shape of [4]`},
		{"shape of no input", simpleConfig, []string{"-m", "simple", "--shape", "IN:5"}, `error: Failed to parse --shape. The model 'simple' has no input named 'IN' (its inputs: INPUT0).`},
		{"json data", simpleConfig, []string{"-m", "simple", "--input-data", bad}, "error: Failed to init manager inputs: mismatch in the data provided for INPUT0. Expected: 16 bytes, Got: 8 bytes"},
		{"batch on a non-batching model", noBatch, []string{"-m", "simple", "-b", "2"}, "can not specify batch size > 1 as the model does not support batching"},
		{"decoupled without streaming", decoupled, []string{"-m", "simple"}, "Decoupled models must be run with `--async` and `--streaming` and either `-i grpc` or `--service-kind=triton_c_api`"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFake(t, tt.config)
				st, out, errs := run(f, context.Background(), tt.args...)
				if st != ExitGeneric || errs != tt.want+"\n" {
					t.Errorf("status %d, stderr\n got %q\nwant %q", st, errs, tt.want+"\n")
				}
				if out != "" {
					t.Errorf("stdout %q", out)
				}
			})
		})
	}
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, simpleConfig)
		f.metaErr = &triton.Error{Code: triton.Unavailable, Err: errors.New(`Get "http://localhost:1/v2/models/simple": dial tcp 127.0.0.1:1: connect: connection refused`)}
		st, _, errs := run(f, context.Background(), "-m", "simple")
		if st != ExitGeneric || !strings.HasPrefix(errs, "error: failed to get model metadata: ") || strings.Count(errs, "\n") != 1 {
			t.Errorf("unreachable: status %d, stderr %q", st, errs)
		}
	})
}

// TestRunLatencyLimit: a server that serves one request at a time makes
// latency grow with concurrency; -l stops the search.
func TestRunLatencyLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, simpleConfig)
		f.serial = true
		f.delay = func(int) time.Duration { return 1000001 * time.Nanosecond }
		csv := filepath.Join(t.TempDir(), "out.csv")
		st, out, errs := run(f, context.Background(), "-m", "simple", "-p", "100", "--concurrency-range", "1:8", "-l", "3", "-f", csv)
		if st != ExitSuccess {
			t.Fatalf("status %d: %s", st, errs)
		}
		if errs != "Measured latency went over the set limit of 3 msec. \n" {
			t.Errorf("stderr %q", errs)
		}
		if !strings.Contains(out, "Concurrency: 1, ") || !strings.Contains(out, "Concurrency: 2, ") || strings.Contains(out, "Concurrency: 3, ") || strings.Contains(out, "Request concurrency: 4") {
			t.Errorf("search went wrong:\n%s", out)
		}
		b, _ := os.ReadFile(csv)
		if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); len(lines) != 3 {
			t.Errorf("csv:\n%s", b)
		}
	})
}

func TestRunBinarySearch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, simpleConfig)
		f.serial = true
		f.delay = func(int) time.Duration { return 1000001 * time.Nanosecond }
		st, out, _ := run(f, context.Background(), "-m", "simple", "-p", "100", "--concurrency-range", "1:8", "-l", "5", "--binary-search")
		if st != ExitSuccess {
			t.Fatalf("status %d", st)
		}
		var levels []string
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "Request concurrency: ") {
				levels = append(levels, strings.TrimPrefix(l, "Request concurrency: "))
			}
		}
		if got := strings.Join(levels, ","); got != "1,8,4,6,5" {
			t.Errorf("levels %s, want 1,8,4,6,5", got)
		}
	})
}

func TestRunInterrupt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, simpleConfig)
		f.delay = func(int) time.Duration { return 700001 * time.Nanosecond }
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			time.Sleep(time.Second)
			cancel()
		}()
		st, out, errs := run(f, ctx, "-m", "simple", "-p", "100", "--concurrency-range", "1:100")
		if st != ExitSuccess || !strings.HasSuffix(errs, "Received exit signal.\n") {
			t.Fatalf("status %d, stderr %q", st, errs)
		}
		if !strings.Contains(out, "Inferences/Second vs. Client Average Batch Latency\nConcurrency: 1, ") {
			t.Errorf("no summary of the measured steps:\n%s", out)
		}
	})
}

func TestRunCountWindows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, simpleConfig)
		f.delay = func(int) time.Duration { return 30000001 * time.Nanosecond }
		st, out, errs := run(f, context.Background(), "-m", "simple", "--measurement-mode", "count_windows", "--measurement-request-count", "40")
		if st != ExitSuccess {
			t.Fatalf("status %d: %s", st, errs)
		}
		// 33 requests a second: windows of 2 s (whole seconds until 40
		// requests) hold 66 or 67; three of them, 200.
		if !strings.Contains(out, "  Minimum number of samples in each window: 40\n") || !strings.Contains(out, "    Request count: 200\n") {
			t.Errorf("output:\n%s", out)
		}
	})
}

func TestRunSequences(t *testing.T) {
	seqConfig := simpleConfig + "\nsequence_batching { }"
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, seqConfig)
		f.delay = func(int) time.Duration { return 700001 * time.Nanosecond }
		st, out, errs := run(f, context.Background(), "-m", "simple", "-p", "100", "--concurrency-range", "3",
			"--sequence-length", "10", "--sequence-id-range", "100:110", "--sync")
		if st != ExitSuccess {
			t.Fatalf("status %d: %s", st, errs)
		}
		if !strings.Contains(out, "    Sequence count: ") {
			t.Errorf("no sequence count:\n%s", out)
		}
		// Per id, requests alternate start ... end, lengths within ±20%.
		f.mu.Lock()
		defer f.mu.Unlock()
		open := map[uint64]int{}
		short := 0
		for i, r := range f.seqs {
			if r.SequenceID < 100 || r.SequenceID >= 110 {
				t.Fatalf("request %d: id %d outside --sequence-id-range", i, r.SequenceID)
			}
			n, inSeq := open[r.SequenceID]
			switch {
			case r.SequenceStart && inSeq:
				t.Fatalf("request %d: sequence %d started twice", i, r.SequenceID)
			case !r.SequenceStart && !inSeq:
				t.Fatalf("request %d: sequence %d continues without a start", i, r.SequenceID)
			}
			n++
			if r.SequenceEnd {
				if n > 12 {
					t.Errorf("sequence %d has %d requests, want 10 ± 20%%", r.SequenceID, n)
				}
				if n < 8 {
					// Only the sequences the workers end when they stop.
					if short++; short > 3 {
						t.Errorf("sequence %d has %d requests, want 10 ± 20%%", r.SequenceID, n)
					}
				}
				delete(open, r.SequenceID)
			} else {
				open[r.SequenceID] = n
			}
		}
		if len(open) != 0 {
			t.Errorf("sequences left open at the end: %v", open)
		}
	})
}

func TestRunDecoupledStreaming(t *testing.T) {
	cfg := simpleConfig + "\nmodel_transaction_policy { decoupled: true }"
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, cfg)
		f.responses = 3
		f.delay = func(int) time.Duration { return 1000001 * time.Nanosecond }
		csv := filepath.Join(t.TempDir(), "out.csv")
		st, out, errs := run(f, context.Background(), "-m", "simple", "-p", "100", "-i", "grpc", "--streaming", "-f", csv)
		if st != ExitSuccess {
			t.Fatalf("status %d: %s", st, errs)
		}
		b, _ := os.ReadFile(csv)
		golden(t, "decoupled", out+"--- csv\n"+string(b))
	})
}

func TestRunEnsemble(t *testing.T) {
	ens := `name: "ens"
platform: "ensemble"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
ensemble_scheduling { step [
  { model_name: "pre" model_version: -1 input_map { key: "INPUT0" value: "INPUT0" } output_map { key: "OUTPUT0" value: "mid" } },
  { model_name: "simple" model_version: 1 input_map { key: "INPUT0" value: "mid" } output_map { key: "OUTPUT0" value: "OUTPUT0" } }
] }`
	pre := strings.Replace(simpleConfig, `name: "simple"`, `name: "pre"`, 1)
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, ens, pre, simpleConfig)
		f.delay = func(int) time.Duration { return 2000001 * time.Nanosecond }
		dir := t.TempDir()
		t.Chdir(dir)
		st, out, errs := run(f, context.Background(), "-m", "ens", "-p", "100", "-f", "out.csv")
		if st != ExitSuccess {
			t.Fatalf("status %d: %s", st, errs)
		}
		files := out
		for _, name := range []string{"out.csv", "pre_v1.out.csv", "simple_v1.out.csv"} {
			b, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			files += "--- " + name + "\n" + string(b)
		}
		golden(t, "ensemble", files)
	})
}

func TestRunJSONValidationAndSharedMemory(t *testing.T) {
	if _, err := os.Stat("/dev/shm"); err != nil {
		t.Skip("no /dev/shm")
	}
	data := filepath.Join(t.TempDir(), "data.json")
	os.WriteFile(data, []byte(`{"data": [{"INPUT0": [1.0, 2.0, 3.0, 4.0]}, {"INPUT0": [5.0, 6.0, 7.0, 8.0]}],
		"validation_data": [{"OUTPUT0": [1.0, 2.0, 3.0, 4.0]}, {"OUTPUT0": [5.0, 6.0, 7.0, 8.0]}]}`), 0o644)
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, simpleConfig)
		st, out, errs := run(f, context.Background(), "-m", "simple", "-p", "100", "--input-data", data, "-b", "2")
		if st != ExitSuccess || !strings.HasPrefix(out, " Successfully read data for 1 stream/streams with 2 step/steps.\n") {
			t.Fatalf("status %d: %s\n%s", st, errs, out)
		}
	})
	wrong := filepath.Join(t.TempDir(), "wrong.json")
	os.WriteFile(wrong, []byte(`{"data": [{"INPUT0": [1.0, 2.0, 3.0, 4.0]}], "validation_data": [{"OUTPUT0": [1.0, 2.0, 3.0, 5.0]}]}`), 0o644)
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, simpleConfig)
		st, _, errs := run(f, context.Background(), "-m", "simple", "-p", "100", "--input-data", wrong)
		if st != ExitGeneric || !strings.Contains(errs, "Output doesn't match expected output") {
			t.Fatalf("status %d: %s", st, errs)
		}
	})
}

func TestRunSharedMemory(t *testing.T) {
	if _, err := os.Stat("/dev/shm"); err != nil {
		t.Skip("no /dev/shm")
	}
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, simpleConfig)
		st, _, errs := run(f, context.Background(), "-m", "simple", "-p", "100", "-i", "grpc", "--shared-memory", "system", "--concurrency-range", "2")
		if st != ExitSuccess {
			t.Fatalf("status %d: %s", st, errs)
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.inShm != f.n || f.n == 0 {
			t.Errorf("%d of %d requests had their input in shared memory", f.inShm, f.n)
		}
		if len(f.shm) != 0 {
			t.Errorf("regions left registered: %v", f.shm)
		}
	})
	left, _ := filepath.Glob(fmt.Sprintf("/dev/shm/perf_analyzer_%d_*", os.Getpid()))
	if len(left) != 0 {
		t.Errorf("shared-memory objects left: %v", left)
	}
}

func TestRunRequestIntervals(t *testing.T) {
	iv := filepath.Join(t.TempDir(), "intervals")
	os.WriteFile(iv, []byte("10000\n30000\n"), 0o644)
	synctest.Test(t, func(t *testing.T) {
		f := newFake(t, simpleConfig)
		f.delay = func(int) time.Duration { return 5000001 * time.Nanosecond }
		csv := filepath.Join(t.TempDir(), "out.csv")
		st, out, errs := run(f, context.Background(), "-m", "simple", "-p", "1000", "--request-intervals", iv, "-f", csv)
		if st != ExitSuccess {
			t.Fatalf("status %d: %s\n%s", st, errs, out)
		}
		b, _ := os.ReadFile(csv)
		rows := strings.Split(strings.TrimSpace(string(b)), "\n")
		// Two requests per 40 ms: a rate of 50 (count·1e9/Σns).
		if len(rows) != 2 || !strings.HasPrefix(rows[0], "Request Rate,") || !strings.HasPrefix(rows[1], "50,50,") {
			t.Errorf("csv:\n%s", b)
		}
		if !strings.Contains(out, "Request Rate: 50, throughput: 50 infer/sec, latency 5000 usec\n") {
			t.Errorf("summary:\n%s", out)
		}
	})
}
