package python_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend/python"
	"github.com/triton-go/triton/tensor"
)

// command runs one CMD on the faulty model and returns the stub's pid.
func command(ctx context.Context, srv *triton.Server, cmd int32) (int64, error) {
	resp, err := srv.Infer(ctx, &triton.InferRequest{Model: "faulty", Inputs: []tensor.Tensor{must(tensor.From("CMD", tensor.Shape{1}, []int32{cmd}))}})
	if err != nil {
		return 0, err
	}
	out, _ := resp.Output("PID")
	v, err := tensor.View[int64](out)
	if err != nil || len(v) != 1 {
		return 0, fmt.Errorf("PID %v: %v", out, err)
	}
	return v[0], nil
}

// running reports whether process pid exists (and is not a zombie).
func running(pid int64) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] != "Z"
}

// TestStubDies kills, crashes and exits the stub in the middle of a
// request: the request fails saying so, and the next one is served by a
// new stub.
func TestStubDies(t *testing.T) {
	srv := newRepo(t).copy("faulty").Serve()
	ctx := context.Background()
	pid, err := command(ctx, srv, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cmd  int32
		want string
	}{{1, "it was killed"}, {2, "killed by signal segmentation fault"}, {4, "exited with status 3"}} {
		_, err := command(ctx, srv, c.cmd)
		if err == nil || !strings.Contains(err.Error(), "Stub process 'faulty_0_0' is not healthy.") || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("CMD %d: error %v, want the stub's death (%s)", c.cmd, err, c.want)
		}
		if triton.CodeOf(err) != triton.Internal {
			t.Errorf("CMD %d: code %v, want Internal", c.cmd, triton.CodeOf(err))
		}
		next, err := command(ctx, srv, 0)
		if err != nil {
			t.Fatalf("after CMD %d: %v", c.cmd, err)
		}
		if next == pid || running(pid) {
			t.Fatalf("after CMD %d: pid %d, old pid %d (running %v)", c.cmd, next, pid, running(pid))
		}
		pid = next
	}
	if !srv.ModelReady(ctx, "faulty", 0) {
		t.Fatal("not ready after the restarts")
	}
}

// TestStubHangs: a stub still busy past the request's deadline and the
// stub timeout is killed, and a new one serves the next request.
func TestStubHangs(t *testing.T) {
	srv := newRepo(t).copy("faulty").Serve(triton.WithBackend(python.Name, python.New(python.WithStubTimeout(200*time.Millisecond))))
	pid, err := command(context.Background(), srv, 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := command(ctx, srv, 3); err == nil {
		t.Fatal("a request that never ends succeeded")
	}
	next, err := command(context.Background(), srv, 0)
	if err != nil {
		t.Fatal(err)
	}
	if next == pid || running(pid) {
		t.Fatalf("pid %d after the hang, old pid %d (running %v)", next, pid, running(pid))
	}
}

// memfds counts this process's descriptors of the backend's shared memory.
func memfds(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && strings.Contains(l, "triton_python_backend_shm_region_") {
			n++
		}
	}
	return n
}

// TestNothingLeft: unload and Close stop every stub, and no shared memory
// stays open.
func TestNothingLeft(t *testing.T) {
	before := memfds(t)
	r := newRepo(t).copy("faulty")
	r.write("faulty/config.pbtxt", strings.Replace(mustRead(t, "testdata/faulty/config.pbtxt"), "count: 1", "count: 2", 1))
	srv, err := triton.New(triton.WithModelRepository(r.Dir), triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit}),
		triton.WithStartupModels("faulty"))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ctx := context.Background()
	pids := map[int64]bool{}
	for range 8 {
		pid, err := command(ctx, srv, 0)
		if err != nil {
			t.Fatal(err)
		}
		pids[pid] = true
	}
	if got := memfds(t); got != before+4 {
		t.Errorf("%d shared-memory descriptors with 2 stubs, want %d", got, before+4)
	}
	if err := srv.Unload(ctx, "faulty", nil); err != nil {
		t.Fatal(err)
	}
	for pid := range pids {
		if running(pid) {
			t.Errorf("stub %d still runs after unload", pid)
		}
	}
	if got := memfds(t); got != before {
		t.Errorf("%d shared-memory descriptors after unload, want %d", got, before)
	}
	if err := srv.Load(ctx, "faulty", nil); err != nil {
		t.Fatal(err)
	}
	pid, err := command(ctx, srv, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if running(pid) {
		t.Errorf("stub %d still runs after Close", pid)
	}
	if got := memfds(t); got != before {
		t.Errorf("%d shared-memory descriptors after Close, want %d", got, before)
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestServerDies: a stub whose server was killed exits on its own. The
// server is this test binary run again as a child (serveFaulty).
func TestServerDies(t *testing.T) {
	r := newRepo(t).copy("faulty")
	cmd := exec.Command(os.Args[0], "-test.run=^TestServeFaultyChild$", "-test.v")
	cmd.Env = append(os.Environ(), "PYTHON_BACKEND_CHILD_REPO="+r.Dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int64
	buf := make([]byte, 4096)
	var seen string
	for pid == 0 {
		n, err := out.Read(buf)
		if err != nil {
			t.Fatalf("the child server ended before serving: %v\n%s", err, seen)
		}
		seen += string(buf[:n])
		if _, rest, ok := strings.Cut(seen, "STUB_PID="); ok {
			if line, _, ok := strings.Cut(rest, "\n"); ok {
				pid, _ = strconv.ParseInt(line, 10, 64)
			}
		}
	}
	fd, err := unix.PidfdOpen(int(pid), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	// The stub is not our child: wait for its exit on its pidfd.
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 30_000)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Fatalf("stub %d still runs 30 s after its server was killed", pid)
		}
		return
	}
}

// TestServeFaultyChild is the server TestServerDies kills.
func TestServeFaultyChild(t *testing.T) {
	dir := os.Getenv("PYTHON_BACKEND_CHILD_REPO")
	if dir == "" {
		t.Skip("run by TestServerDies")
	}
	srv, err := triton.New(triton.WithModelRepository(dir))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := command(context.Background(), srv, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("STUB_PID=%d\n", pid)
	select {} // until killed
}
