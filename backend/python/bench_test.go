package python_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend/python"
	"github.com/triton-go/triton/tensor"
)

// The benchmarks of the Python backend (issue #19), each paired with its
// baseline in the same run, round by round, so that the figures that
// matter are the medians of per-round differences and ratios (this
// project's machines are shared VMs whose speed drifts). ns/op is the time
// of one round. Commands and figures: docs/performance.md, "Python
// backend".

// copyModel adds testdata/<src>'s files to the repository as model name.
func (r *repo) copyModel(src, name string) *repo {
	r.TB.Helper()
	src = filepath.Join("testdata", src)
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		data, err := os.ReadFile(p)
		if err == nil {
			r.write(filepath.Join(name, rel), string(data))
		}
		return err
	})
	if err != nil {
		r.TB.Fatal(err)
	}
	return r
}

// direct is testdata/bench/direct.py running beside the server: the
// model's execute called inside one Python process (the limit), the stub's
// own work without its pipes, and round trips from Python through the
// stub's channel code to an echo here, on two pipes read and written
// with blocking system calls, as the stubs' commands and answers are.
type direct struct {
	b      *testing.B
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	toPy   *os.File // the pipe the echo writes to
	fromPy *os.File // the pipe the echo reads
	echo   sync.WaitGroup
}

// startDirect starts direct.py with args (its defaults are add_sub's); it
// stops when the benchmark ends.
func startDirect(b *testing.B, args ...string) *direct {
	b.Helper()
	var down, up [2]int
	if err := unix.Pipe2(down[:], unix.O_CLOEXEC); err != nil {
		b.Fatal(err)
	}
	if err := unix.Pipe2(up[:], unix.O_CLOEXEC); err != nil {
		b.Fatal(err)
	}
	d := &direct{b: b, toPy: os.NewFile(uintptr(down[1]), "rtt-down"), fromPy: os.NewFile(uintptr(up[0]), "rtt-up")}
	theirs := []*os.File{os.NewFile(uintptr(down[0]), "rtt-down-py"), os.NewFile(uintptr(up[1]), "rtt-up-py")}
	d.cmd = exec.Command(python.DefaultInterpreter, append([]string{filepath.Join("testdata", "bench", "direct.py"), "--rtt-fd", "3,4"}, args...)...)
	d.cmd.ExtraFiles = theirs
	d.cmd.Stderr = os.Stderr
	d.in = must(d.cmd.StdinPipe())
	d.out = bufio.NewScanner(must(d.cmd.StdoutPipe()))
	err := d.cmd.Start()
	for _, f := range theirs {
		f.Close()
	}
	if err != nil {
		d.toPy.Close()
		d.fromPy.Close()
		b.Fatal(err)
	}
	d.echo.Go(d.echoLoop)
	b.Cleanup(func() {
		d.in.Close()
		if err := d.cmd.Wait(); err != nil {
			b.Errorf("direct.py: %v", err)
		}
		d.echo.Wait()
		d.toPy.Close()
		d.fromPy.Close()
	})
	return d
}

// echoLoop sends every length-prefixed message back, until direct.py
// exits.
func (d *direct) echoLoop() {
	var buf []byte
	for {
		var hdr [4]byte
		if _, err := io.ReadFull(d.fromPy, hdr[:]); err != nil {
			return
		}
		n := int(binary.LittleEndian.Uint32(hdr[:]))
		buf = slices.Grow(buf[:0], 4+n)[:4+n]
		copy(buf, hdr[:])
		if _, err := io.ReadFull(d.fromPy, buf[4:]); err != nil {
			return
		}
		if _, err := d.toPy.Write(buf); err != nil {
			return
		}
	}
}

// run sends one command and returns its answer, ns per call (or round
// trip). Lines that are not answers (a model's prints) are skipped.
func (d *direct) run(format string, args ...any) (float64, error) {
	if _, err := fmt.Fprintf(d.in, format+"\n", args...); err != nil {
		return 0, err
	}
	for d.out.Scan() {
		line := d.out.Text()
		if rest, ok := strings.CutPrefix(line, "error: "); ok {
			return 0, errors.New(rest)
		}
		if v, err := strconv.ParseFloat(line, 64); err == nil {
			return v, nil
		}
	}
	return 0, fmt.Errorf("direct.py ended: %v", d.out.Err())
}

// need is run for the answers the benchmark cannot do without.
func (d *direct) need(format string, args ...any) float64 {
	v, err := d.run(format, args...)
	if err != nil {
		d.b.Fatalf("direct.py %s: %v", fmt.Sprintf(format, args...), err)
	}
	return v
}

// optional is run for the breakdown's answers: one that fails (the stub's
// internals changed) is logged and reported as NaN.
func (d *direct) optional(format string, args ...any) float64 {
	v, err := d.run(format, args...)
	if err != nil {
		d.b.Logf("direct.py %s: %v", fmt.Sprintf(format, args...), err)
		return math.NaN()
	}
	return v
}

func median(xs []float64) float64 {
	xs = slices.DeleteFunc(slices.Clone(xs), math.IsNaN)
	if len(xs) == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	return xs[len(xs)/2]
}

// addSubRequest is one add_sub request of batch size 1; it checks the
// model's answer once.
func addSubRequest(b testing.TB, srv *triton.Server, model string) *triton.InferRequest {
	b.Helper()
	x := []float32{0, 1, 2, 3}
	req := &triton.InferRequest{Model: model, Inputs: []tensor.Tensor{
		must(tensor.From("INPUT0", tensor.Shape{1, 4}, x)), must(tensor.From("INPUT1", tensor.Shape{1, 4}, x))}}
	resp, err := srv.Infer(context.Background(), req)
	if err != nil {
		b.Fatal(err)
	}
	if got := floats(b, resp, "OUTPUT0"); !equal(got, []float32{0, 2, 4, 6}) {
		b.Fatalf("%s: OUTPUT0 %v", model, got)
	}
	return req
}

// stats are a model's statistics now.
func stats(b *testing.B, srv *triton.Server, model string) triton.ModelStats {
	b.Helper()
	st, err := srv.Stats(model, 0)
	if err != nil || len(st) != 1 {
		b.Fatalf("Stats(%s): %v, %d versions", model, err, len(st))
	}
	return st[0]
}

// cpuTimes returns the CPU time this process and its stub processes have
// used so far (the stubs' in clock ticks of 10 ms, from /proc).
func cpuTimes(b *testing.B) (self, stubs time.Duration) {
	b.Helper()
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	for _, t := range tasks {
		list, _ := os.ReadFile(t)
		for pid := range strings.FieldsSeq(string(list)) {
			cmdline, _ := os.ReadFile("/proc/" + pid + "/cmdline")
			stat, _ := os.ReadFile("/proc/" + pid + "/stat")
			_, rest, ok := bytes.Cut(stat, []byte(") "))
			if !bytes.Contains(cmdline, []byte("stub.py")) || !ok {
				continue
			}
			f := strings.Fields(string(rest)) // from field 3, state; utime and stime are fields 14 and 15
			if len(f) < 13 {
				continue
			}
			ut, _ := strconv.ParseInt(f[11], 10, 64)
			st, _ := strconv.ParseInt(f[12], 10, 64)
			stubs += time.Duration(ut+st) * 10 * time.Millisecond
		}
	}
	return self, stubs
}

// rttSize is about the size of an execute command for one add_sub
// request, the message of the round trips the breakdown measures.
const rttSize = 256

// BenchmarkAddSub is add_sub (testdata/add_sub) through Server.Infer beside
// its execute called directly in one Python process (direct.py), round by
// round in alternating order.
//
// callers=1: rounds of 2,000 requests one after the other; overhead-µs/req
// is server − direct per request, the round trip through the server and
// the stub (target: under 50 µs); ratio is server ÷ direct. Beside it,
// where the time goes: stub-µs/req (the stub's Python work for one execute
// command without its pipes: marshal both ways, the requests over shared
// memory, execute, the outputs to shared memory), rtt-µs (one pipe round trip of a 256-byte
// message from the stub's channel code in Python to a Go echo),
// backend-µs/req (the backend's share of the request in the server's
// statistics: inputs to shared memory, the stub's answer, outputs read
// back), and the CPU time per request of the Go process (go-cpu-µs/req)
// and of the stub process (stub-cpu-µs/req, from /proc in 10 ms ticks).
//
// callers=64: 64 goroutines, 4,096 requests a round, on add_sub with
// max_batch_size 64 (testdata/bench/add_sub_64, one instance); the limit
// is execute called with lists of the mean batch size the server formed
// (batch), one Python process. overhead-µs/req is server − direct time per
// request of throughput; ratio is direct-req/s ÷ server-req/s.
//
// Run: go test -run '^$' -bench 'AddSub' -benchtime 10x -count 5 ./backend/python/
func BenchmarkAddSub(b *testing.B) {
	b.Run("callers=1", func(b *testing.B) {
		srv := newRepo(b).copy("add_sub").Serve()
		req := addSubRequest(b, srv, "add_sub")
		d := startDirect(b)
		ctx := context.Background()
		const n = 2000
		for range 200 { // warm-up
			if _, err := srv.Infer(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
		var goCPU, stubCPU []float64
		server := func() float64 {
			self0, stubs0 := cpuTimes(b)
			start := time.Now()
			for range n {
				if _, err := srv.Infer(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
			took := time.Since(start)
			self1, stubs1 := cpuTimes(b)
			goCPU, stubCPU = append(goCPU, float64(self1-self0)/n), append(stubCPU, float64(stubs1-stubs0)/n)
			return float64(took.Nanoseconds()) / n
		}
		var srvNs, dirNs, over, ratio, stubNs, rtt, backendNs []float64
		for b.Loop() {
			before := stats(b, srv, "add_sub")
			var s, dir float64
			if len(srvNs)%2 == 0 {
				s, dir = server(), d.need("execute %d 1", n)
			} else {
				dir, s = d.need("execute %d 1", n), server()
			}
			after := stats(b, srv, "add_sub")
			srvNs, dirNs = append(srvNs, s), append(dirNs, dir)
			over, ratio = append(over, s-dir), append(ratio, s/dir)
			stubNs = append(stubNs, d.optional("stub %d 1", n))
			rtt = append(rtt, d.optional("rtt %d %d", n, rttSize))
			compute := (after.ComputeInput.Total + after.ComputeInfer.Total + after.ComputeOutput.Total) -
				(before.ComputeInput.Total + before.ComputeInfer.Total + before.ComputeOutput.Total)
			backendNs = append(backendNs, float64(compute.Nanoseconds())/float64(after.Success.Count-before.Success.Count))
		}
		b.ReportMetric(median(srvNs)/1e3, "server-µs/req")
		b.ReportMetric(median(dirNs)/1e3, "direct-µs/req")
		b.ReportMetric(median(over)/1e3, "overhead-µs/req")
		b.ReportMetric(median(ratio), "ratio")
		b.ReportMetric(median(stubNs)/1e3, "stub-µs/req")
		b.ReportMetric(median(rtt)/1e3, "rtt-µs")
		b.ReportMetric(median(backendNs)/1e3, "backend-µs/req")
		b.ReportMetric(median(goCPU)/1e3, "go-cpu-µs/req")
		b.ReportMetric(median(stubCPU)/1e3, "stub-cpu-µs/req")
	})

	b.Run("callers=64", func(b *testing.B) {
		srv := newRepo(b).copyModel("bench/add_sub_64", "add_sub_64").copyModel("add_sub/1", "add_sub_64/1").Serve()
		addSubRequest(b, srv, "add_sub_64")
		d := startDirect(b)
		ctx := context.Background()
		const callers, each = 64, 64
		const n = callers * each
		reqs := make([]*triton.InferRequest, callers)
		for i := range reqs {
			reqs[i] = addSubRequest(b, srv, "add_sub_64")
		}
		var goCPU, stubCPU []float64
		server := func() float64 {
			var wg sync.WaitGroup
			self0, stubs0 := cpuTimes(b)
			start := time.Now()
			for _, req := range reqs {
				wg.Go(func() {
					for range each {
						if _, err := srv.Infer(ctx, req); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			took := time.Since(start)
			self1, stubs1 := cpuTimes(b)
			goCPU, stubCPU = append(goCPU, float64(self1-self0)/n), append(stubCPU, float64(stubs1-stubs0)/n)
			return float64(took.Nanoseconds()) / n
		}
		// The limit runs at the mean batch size of the server's round
		// just before it: this round's, or, when the limit goes first, the
		// previous round's (the warm-up's for the first).
		size, mean := 1, 1.0
		measure := func() float64 {
			before := stats(b, srv, "add_sub_64")
			s := server()
			after := stats(b, srv, "add_sub_64")
			mean = float64(after.InferenceCount-before.InferenceCount) / float64(after.ExecutionCount-before.ExecutionCount)
			size = max(1, int(math.Round(mean)))
			return s
		}
		limit := func() float64 { return d.need("execute %d %d", n/size, size) / float64(size) }
		measure() // warm-up
		var srvRate, dirRate, over, ratio, batch, stubNs []float64
		for b.Loop() {
			var s, dir float64
			if len(srvRate)%2 == 0 {
				s = measure()
				dir = limit()
			} else {
				dir = limit()
				s = measure()
			}
			srvRate, dirRate = append(srvRate, 1e9/s), append(dirRate, 1e9/dir)
			over, ratio, batch = append(over, s-dir), append(ratio, s/dir), append(batch, mean)
			stubNs = append(stubNs, d.optional("stub %d %d", n/size, size)/float64(size))
		}
		b.ReportMetric(median(srvRate), "server-req/s")
		b.ReportMetric(median(dirRate), "direct-req/s")
		b.ReportMetric(median(over)/1e3, "overhead-µs/req")
		b.ReportMetric(median(ratio), "ratio")
		b.ReportMetric(median(batch), "batch")
		b.ReportMetric(median(stubNs)/1e3, "stub-µs/req")
		b.ReportMetric(median(goCPU)/1e3, "go-cpu-µs/req")
		b.ReportMetric(median(stubCPU)/1e3, "stub-cpu-µs/req")
	})
}

// BenchmarkInstances is a CPU-bound pure-Python model (testdata/bench/
// cpu_loop: a loop that holds the GIL) with one instance and with two (two
// stub processes), from 4 callers, in alternating rounds of 80 requests;
// ratio is the median of the rounds' throughput ratios, two instances ÷
// one (target: at least 1.8 on 2 cores). Two lengths of work: the loop's
// iterations parameter at 40,000 (about 1.5 ms a request here) and
// 80,000 (about 3 ms), since what each request costs beside the model
// (the server, the IPC, on the same 2 cores) weighs less on longer work.
// exec-ms is one request's execution in the server's statistics.
//
// Run: go test -run '^$' -bench 'Instances' -benchtime 10x -count 5 ./backend/python/
func BenchmarkInstances(b *testing.B) {
	cfg := must(os.ReadFile(filepath.Join("testdata", "bench", "cpu_loop", "config.pbtxt")))
	for _, iterations := range []int{40000, 80000} {
		b.Run(fmt.Sprintf("iterations=%d", iterations), func(b *testing.B) {
			one := bytes.Replace(cfg, []byte(`string_value: "40000"`), fmt.Appendf(nil, `string_value: "%d"`, iterations), 1)
			two := bytes.Replace(one, []byte("count: 1"), []byte("count: 2"), 1)
			if bytes.Equal(two, one) || !bytes.Contains(one, fmt.Appendf(nil, `"%d"`, iterations)) {
				b.Fatal("testdata/bench/cpu_loop/config.pbtxt has no count: 1 or no iterations \"40000\"")
			}
			r := newRepo(b).copyModel("bench/cpu_loop", "cpu_loop").copyModel("bench/cpu_loop", "cpu_loop_2")
			r.write(filepath.Join("cpu_loop", "config.pbtxt"), string(one))
			r.write(filepath.Join("cpu_loop_2", "config.pbtxt"), string(two))
			instances(b, r.Serve())
		})
	}
}

func instances(b *testing.B, srv *triton.Server) {
	ctx := context.Background()
	const callers, each = 4, 20
	round := func(model string) float64 {
		var wg sync.WaitGroup
		start := time.Now()
		for c := range callers {
			wg.Go(func() {
				req := &triton.InferRequest{Model: model, Inputs: []tensor.Tensor{must(tensor.From("IN", tensor.Shape{1}, []int64{int64(c)}))}}
				for range each {
					if _, err := srv.Infer(ctx, req); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		return callers * each / time.Since(start).Seconds()
	}
	round("cpu_loop") // warm-up: both stubs of cpu_loop_2 too
	round("cpu_loop_2")
	var one, twos, ratio []float64
	for b.Loop() {
		var r1, r2 float64
		if len(one)%2 == 0 {
			r1, r2 = round("cpu_loop"), round("cpu_loop_2")
		} else {
			r2, r1 = round("cpu_loop_2"), round("cpu_loop")
		}
		one, twos, ratio = append(one, r1), append(twos, r2), append(ratio, r2/r1)
	}
	st := stats(b, srv, "cpu_loop")
	b.ReportMetric(median(one), "1-instance-req/s")
	b.ReportMetric(median(twos), "2-instances-req/s")
	b.ReportMetric(median(ratio), "ratio")
	b.ReportMetric(float64(st.ComputeInfer.Total.Nanoseconds())/float64(st.ComputeInfer.Count)/1e6, "exec-ms")
}

// BenchmarkTensor16MiB sends a 16 MiB UINT8 tensor through an identity
// model, in through the server's shared memory: view
// (testdata/bench/identity) returns the input's own array, which the
// server reads where it wrote it; new (testdata/bench/identity_copy)
// returns a copy the model makes, which goes out through the stub's
// shared memory. MB/s (b.SetBytes) counts the tensor once per round trip
// (target: at least 2 GB/s); GB/s is the median of the requests' own
// figures and memcpy-GB/s that of a 16 MiB Go copy timed beside each
// request, so copies is a round trip in memcpys of the tensor.
//
// Run: go test -run '^$' -bench 'Tensor16MiB' -benchtime 40x -count 5 ./backend/python/
func BenchmarkTensor16MiB(b *testing.B) {
	for _, c := range []struct{ name, dir string }{{"view", "identity"}, {"new", "identity_copy"}} {
		b.Run(c.name, func(b *testing.B) { benchTensor16MiB(b, c.dir) })
	}
}

func benchTensor16MiB(b *testing.B, model string) {
	srv := newRepo(b).copyModel("bench/"+model, "identity").Serve()
	const size = 16 << 20
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i * 7)
	}
	req := &triton.InferRequest{Model: "identity", Inputs: []tensor.Tensor{must(tensor.From("IN", tensor.Shape{size}, data))}}
	ctx := context.Background()
	resp, err := srv.Infer(ctx, req)
	if err != nil {
		b.Fatal(err)
	}
	if out, ok := resp.Output("OUT"); !ok || !bytes.Equal(out.Data, data) {
		b.Fatal("OUT is not IN")
	}
	dst := make([]byte, size)
	var rate, memcpy, copies []float64
	b.SetBytes(size)
	for b.Loop() {
		start := time.Now()
		if _, err := srv.Infer(ctx, req); err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		b.StopTimer()
		start = time.Now()
		copy(dst, data)
		c := time.Since(start)
		b.StartTimer()
		rate, memcpy = append(rate, size/took.Seconds()/1e9), append(memcpy, size/c.Seconds()/1e9)
		copies = append(copies, took.Seconds()/c.Seconds())
	}
	b.ReportMetric(median(rate), "GB/s")
	b.ReportMetric(median(memcpy), "memcpy-GB/s")
	b.ReportMetric(median(copies), "copies")
}
