package python

import (
	"bytes"
	"fmt"
	"os"
	"strconv"

	"github.com/triton-go/triton/backend"
)

var _ backend.MemoryReporter = (*instance)(nil)

// MemoryBytes reports the memory the instance's stub process holds, in
// bytes: RssAnon plus RssShmem of /proc/<pid>/status, that is its private
// resident memory (the interpreter's heap, the model's arrays, the
// modules' data) and the pages of shared memory it has mapped and
// touched (of the two tensor regions between it and the server, and any
// shared memory the model made). VmRSS would add RssFile, the pages of
// code and read-only data the stub shares with every other Python process
// (the interpreter, numpy's libraries: some 15 MiB), which no eviction
// gives back.
//
// RssShmem counts no region twice: the server maps the regions too, but a
// model whose backend reports is accounted by what it reports, never by
// the server's resident memory, and the regions are anonymous memfds of
// this stub alone, gone with it. It rather counts them short: pages only
// the server touched (inputs the model never read) are not in it.
//
// Processes the stub started are not counted. It reads one small file
// and takes no lock that a running batch holds, so it is safe to call at
// any time, concurrently with Execute.
//
// It fails when the instance has no running stub: the stub exited (a new
// one may be starting), a restart failed, or the instance is closed.
func (in *instance) MemoryBytes() (int64, error) {
	in.mu.Lock()
	p, down := in.p, in.downErr
	in.mu.Unlock()
	if p == nil || !p.alive() {
		if down != nil {
			return 0, down
		}
		return 0, fmt.Errorf("Stub process '%s' is not healthy.", in.spec.Name)
	}
	n, err := p.resident()
	if err != nil {
		return 0, fmt.Errorf("Stub process '%s' is not healthy. (reading its memory: %w)", in.spec.Name, err)
	}
	// A stub that ended during the read may have been reaped and its pid
	// given to another process: only a read while it ran counts.
	if !p.alive() {
		return 0, fmt.Errorf("Stub process '%s' is not healthy.", in.spec.Name)
	}
	return n, nil
}

// resident returns the process's RssAnon plus RssShmem in bytes. A
// process that has exited but is not yet reaped (a zombie) has neither
// line: an error.
func (p *proc) resident() (int64, error) {
	path := "/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/status"
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	var total int64
	found := 0
	for line := range bytes.Lines(b) {
		name, rest, ok := bytes.Cut(line, []byte(":"))
		if !ok || (string(name) != "RssAnon" && string(name) != "RssShmem") {
			continue
		}
		f := bytes.Fields(rest) // "<n> kB"
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, fmt.Errorf("%s: unexpected %s line %q", path, name, bytes.TrimSpace(line))
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", path, err)
		}
		total += kb << 10
		found++
	}
	if found != 2 {
		return 0, fmt.Errorf("%s has no RssAnon and RssShmem: the process has exited", path)
	}
	return total, nil
}
