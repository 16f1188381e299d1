package python_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/cgo/malloctrim"
	"github.com/triton-go/triton/tensor"
)

var cycles = flag.Int("reliability.cycles", 150, "load/evict cycles in TestLoadEvictCycles (1000 for the reliability figures)")

// TestLoadEvictCycles: two copies of the identity model under a budget
// that fits one, asked for in turn with loads on demand, so that every
// request starts one stub and evicts the other's, -reliability.cycles
// times; the process's memory after the last cycle is no higher than
// after the first tenth plus one model (what a stub reports), and, the
// server closed, no stub process of the test remains, nor any of the
// backend's shared memory (its memfds in this process, or a file in
// /dev/shm).
//
// The default is 150 cycles, not 1000: a cycle starts two stubs (the
// interpreter, numpy) and takes about 0.23 s on two cores, 0.27 s under
// -race, so 150 take some 40 s under -race and 1000 four to five minutes
// (-reliability.cycles=1000). The race detector's own memory grows over
// the cycles (7 MiB over 180 of them, against 0.3 MiB without it), well
// within one stub.
//
// The budget is one and a half times the probed model: stubs report a
// little more or less than each other (their heaps differ), and one
// reporting more than the budget could not load at all.
func TestLoadEvictCycles(t *testing.T) {
	stubsBefore, shmBefore, fdsBefore := children(t), shmFiles(t), memfds(t)
	r := newRepo(t).model("id_a", identityConfig, identityModel).model("id_b", identityConfig, identityModel)
	ctx := context.Background()
	explicit := triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit})

	probe := r.Serve(explicit)
	if err := probe.Load(ctx, "id_a", nil); err != nil {
		t.Fatal(err)
	}
	size := probe.Memory().Resident
	if size < 1<<20 {
		t.Fatalf("id_a accounted for %d bytes, less than a stub's interpreter holds", size)
	}
	if err := probe.Close(); err != nil {
		t.Fatal(err)
	}

	srv := r.Serve(explicit, triton.WithMemoryBudget(size+size/2), triton.WithLoadOnDemand(true))
	in := must(tensor.From("IN", tensor.Shape{4}, []uint8{1, 2, 3, 4}))
	cycle := func() {
		for _, m := range []string{"id_a", "id_b"} {
			if _, err := infer(t, srv, m, in); err != nil {
				t.Fatalf("%s: %v", m, err)
			}
		}
	}
	warm := max(1, *cycles/10)
	for range warm {
		cycle()
	}
	before := rss(t)
	start := time.Now()
	for range *cycles - warm {
		cycle()
	}
	per := time.Since(start) / time.Duration(max(1, *cycles-warm))
	after := rss(t)
	u := srv.Memory()
	var evictions uint64
	for _, c := range u.Counts {
		evictions += c.Evictions[triton.EvictedBudget]
	}
	if want := uint64(2**cycles - 1); evictions != want {
		t.Errorf("%d evictions, want %d", evictions, want)
	}
	if len(u.Models) != 1 || u.Resident > u.Budget {
		t.Errorf("after the cycles %d models hold %d bytes of the budget's %d; want one within it", len(u.Models), u.Resident, u.Budget)
	}
	t.Logf("%d cycles of two stub starts and evictions (%v a cycle): stub %.1f MiB, budget %.1f MiB; RSS %.1f MiB after %d, %.1f MiB after %d (%+.1f MiB)",
		*cycles, per.Round(time.Millisecond), mib(size), mib(u.Budget), mib(before), warm, mib(after), *cycles, mib(after-before))
	if after-before > size {
		t.Errorf("RSS grew by %.1f MiB over %d cycles, more than one model (%.1f MiB)", mib(after-before), *cycles-warm, mib(size))
	}

	ours := func() []int {
		return slices.DeleteFunc(children(t), func(pid int) bool { return slices.Contains(stubsBefore, pid) })
	}
	if live := ours(); len(live) != 1 {
		t.Errorf("child processes %v while one model is loaded, want its one stub", live)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if left := ours(); len(left) > 0 {
		t.Errorf("child processes left after Close: %v", left)
	}
	if n := memfds(t); n != fdsBefore {
		t.Errorf("%d descriptors of the backend's shared memory open after Close, %d before", n, fdsBefore)
	}
	if left := slices.DeleteFunc(shmFiles(t), func(name string) bool { return slices.Contains(shmBefore, name) }); len(left) > 0 {
		t.Errorf("files left in /dev/shm after Close: %v", left)
	}
}

// children returns the pids of this process's child processes (zombies
// included: a child not yet reaped is left behind as much as a running
// one), from the parent pid in every /proc/<pid>/stat.
func children(t *testing.T) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	self := os.Getpid()
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue // ended since the listing
		}
		// "pid (comm) state ppid ...": comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(self) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// shmFiles returns the names in /dev/shm that start with the backend's
// region prefix (shm-region-prefix-name, Triton's default): its regions
// are anonymous memfds and make none, but a region named in /dev/shm, as
// Triton's are, would show here. Other names are other processes'.
func shmFiles(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir("/dev/shm")
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "triton_python_backend_shm_region_") {
			names = append(names, e.Name())
		}
	}
	return names
}

// rss is the process's resident memory in bytes, after a collection and
// with what the Go runtime and the C heap freed given back.
func rss(t *testing.T) int64 {
	t.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	malloctrim.Trim()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Fatal(err)
	}
	pages, err := strconv.ParseInt(strings.Fields(string(b))[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return pages * int64(os.Getpagesize())
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }
