package torchrun_test

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/triton-go/triton/cgo/torchrun"
)

// settings reads torchrun.Settings, failing tb on an error.
func settings(tb testing.TB) torchrun.GlobalSettings {
	tb.Helper()
	s, err := torchrun.Settings()
	if err != nil {
		tb.Fatalf("Settings: %v", err)
	}
	return s
}

// switches are the four JIT switches of s.
func switches(s torchrun.GlobalSettings) [4]bool {
	return [4]bool{s.GraphExecutorOptimize, s.ExecutorMode, s.ProfilingMode, s.TensorExprFuser}
}

// TestSettingsSwitches: after a forward of a module, libtorch's switches
// are the module's Options; an Unset one keeps the previous forward's
// value, and DisableOptimizedExecution false turns optimization back on.
func TestSettingsSwitches(t *testing.T) {
	open(t)
	x := val(t, []int64{1, 16}, slices.Repeat([]float32{3}, 16)...)
	for _, step := range []struct {
		name string
		opts torchrun.Options
		want [4]bool // optimize, executor, profiling, fuser
	}{
		{"all off", torchrun.Options{DisableOptimizedExecution: true, JITExecutor: torchrun.False, JITProfiling: torchrun.False, TensorFuser: torchrun.False},
			[4]bool{false, false, false, false}},
		{"unset keeps them", torchrun.Options{}, [4]bool{true, false, false, false}},
		{"mixed", torchrun.Options{InferenceMode: true, DisableOptimizedExecution: true, JITExecutor: torchrun.True, TensorFuser: torchrun.False},
			[4]bool{false, true, false, false}},
		{"all on", torchrun.Options{JITExecutor: torchrun.True, JITProfiling: torchrun.True, TensorFuser: torchrun.True},
			[4]bool{true, true, true, true}}, // libtorch's defaults, left for the other tests
		{"unset again", torchrun.Options{}, [4]bool{true, true, true, true}},
	} {
		m := load(t, "addsub_args.pt", step.opts)
		out := forward(t, m, x, x)
		if got := view[float32](t, out[0]); got[0] != 6 {
			t.Fatalf("%s: 3 + 3 = %v", step.name, got[0])
		}
		if got := switches(settings(t)); got != step.want {
			t.Errorf("%s: [optimize, executor, profiling, fuser] after a forward = %v, want %v", step.name, got, step.want)
		}
	}
}

func TestSettingsBeforeOpen(t *testing.T) {
	if os.Getenv("TORCHRUN_SETTINGS_CHILD") == "closed" {
		_, err := torchrun.Settings()
		fmt.Printf("settings: %v\n", err)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSettingsBeforeOpen$")
	cmd.Env = append(os.Environ(), "TORCHRUN_SETTINGS_CHILD=closed")
	outb, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, outb)
	}
	if want := "settings: torchrun: the shim is not loaded"; !strings.Contains(string(outb), want) {
		t.Errorf("child output lacks %q:\n%s", want, outb)
	}
}

// TestSettingsThreads checks, in a child process whose thread counts are
// still libtorch's defaults, that SetThreads' counts are what Settings
// reads, on a thread that read (and so initialized) the intra-op count
// before they were set as well, and after a forward on that thread; a
// second SetThreads changes nothing.
func TestSettingsThreads(t *testing.T) {
	if os.Getenv("TORCHRUN_SETTINGS_CHILD") == "threads" {
		settingsThreadsChild(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSettingsThreads$", "-test.v")
	cmd.Env = append(os.Environ(), "TORCHRUN_SETTINGS_CHILD=threads")
	outb, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(outb), "--- PASS: TestSettingsThreads") {
		t.Fatalf("child: %v\n%s", err, outb)
	}
}

func settingsThreadsChild(t *testing.T) {
	open(t)
	m := load(t, "cnn.pt", torchrun.Options{InferenceMode: true})
	x := val(t, []int64{2, 1, 28, 28}, make([]float32, 2*784)...)
	before := make(chan torchrun.GlobalSettings)
	set := make(chan struct{})
	after := make(chan [2]torchrun.GlobalSettings)
	go func() {
		// One OS thread for the whole goroutine: libtorch's OpenMP count
		// is per thread, and this one runs parallel work before the set.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		forward(t, m, x)
		before <- settings(t)
		<-set
		s1 := settings(t)
		forward(t, m, x)
		after <- [2]torchrun.GlobalSettings{s1, settings(t)}
	}()
	def := <-before
	intra, inter := def.IntraOpThreads+2, def.InterOpThreads+1
	t.Logf("defaults %d intra-op, %d inter-op threads; setting %d, %d", def.IntraOpThreads, def.InterOpThreads, intra, inter)
	runtime.LockOSThread() // another thread than the goroutine's
	if a, b, err := torchrun.SetThreads(intra, inter); !a || !b || err != nil {
		t.Fatalf("SetThreads(%d, %d) = %v, %v, %v", intra, inter, a, b, err)
	}
	runtime.UnlockOSThread()
	if a, b, err := torchrun.SetThreads(intra+3, inter+3); a || b || err != nil {
		t.Errorf("second SetThreads = %v, %v, %v; want nothing applied", a, b, err)
	}
	close(set)
	got := <-after
	for i, s := range append(got[:], settings(t)) {
		if s.IntraOpThreads != intra || s.InterOpThreads != inter {
			t.Errorf("reading %d: %d intra-op, %d inter-op threads; want %d, %d (the first SetThreads)",
				i, s.IntraOpThreads, s.InterOpThreads, intra, inter)
		}
	}
}
