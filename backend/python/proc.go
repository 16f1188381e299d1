package python

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// handler receives what a stub says besides the answers to its commands.
// Its methods run on the stub's reader goroutine, in the stub's order.
type handler interface {
	message(p *proc, m *stubMsg)
}

// launch says how to start one stub process.
type launch struct {
	python   string   // interpreter
	env      []string // extra environment (an execution environment's PATH, ...)
	stubDir  string   // where stub.py and triton_python_backend_utils.py are
	instance string   // the instance name, for messages
	memName  string   // prefix of the shared-memory names
	shmSize  int64    // initial size of each region
	shmGrow  int64    // growth step
	shmLimit int64    // most bytes of each region
	log      *zap.Logger
}

// proc is one running stub process, its pipes, socket and regions.
type proc struct {
	instance string
	log      *zap.Logger
	cmd      *exec.Cmd
	cmds     *conn         // server → stub commands (a pipe)
	answers  *bufio.Reader // the stub's answers (a pipe), read by the one issuing the command
	ansFile  *os.File      // under answers
	cmdMu    sync.Mutex    // one command at a time; it guards ansBuf
	ansBuf   []byte        // the last answer's bytes, reused (decoding copies what it keeps)
	async    *conn         // the stub's own messages; the server's replies to its calls
	down, up *region
	h        handler
	started  time.Time
	hasReady bool // the model defines is_ready (set before the process is shared)

	users   sync.WaitGroup // batches and BLS calls using the regions
	dead    chan struct{}  // closed once the process has exited and its reader ended
	handled chan struct{}  // closed once the instance has dealt with the death (watch)
	ctx     context.Context
	stop    context.CancelFunc // ends ctx: the process is going away

	mu sync.Mutex
	// mu protects the following.
	cause  error                    // why the process ended; set before dead is closed
	killed string                   // why the server killed it, for cause
	calls  map[uint64]chan *stubMsg // is_ready calls awaiting their answer
	nextID uint64
	// kept holds, by id, the ended batches whose inputs the model still
	// holds, until the stub says "freed"; nil for a batch whose "freed"
	// came before its end (the event can overtake the answer).
	kept    map[uint64]*run
	initCtx context.Context // the ctx of the initialize under way (its load's), for its calls; nil after
	seen    uint64          // messages read from the async socket and handled
	ended   bool            // the async reader has ended
	cond    *sync.Cond      // signalled as seen grows (on mu)
}

// startProc starts a stub process. The process is not initialised: the
// caller sends "init" next.
func startProc(l launch, h handler) (p *proc, err error) {
	var closers []func() error
	defer func() {
		if err != nil {
			for _, c := range closers {
				_ = c()
			}
		}
	}()
	down, err := newRegion(l.memName+"down", l.shmSize, l.shmGrow, l.shmLimit)
	if err != nil {
		return nil, err
	}
	closers = append(closers, down.close)
	up, err := newRegion(l.memName+"up", l.shmSize, l.shmGrow, l.shmLimit)
	if err != nil {
		return nil, err
	}
	closers = append(closers, up.close)
	// Commands and answers each have a pipe of their own: on one socket
	// for both, the server's read of an answer woke the stub, already
	// waiting for its next command, for nothing (a socket has one wait
	// queue for readers and writers), a context switch per request.
	cmdStub, cmdServer, err := pipe("commands")
	if err != nil {
		return nil, err
	}
	closers = append(closers, cmdServer.Close, cmdStub.Close)
	ansServer, ansStub, err := pipe("answers")
	if err != nil {
		return nil, err
	}
	closers = append(closers, ansServer.Close, ansStub.Close)
	replyServer, replyStub, err := socketPair("async")
	if err != nil {
		return nil, err
	}
	closers = append(closers, replyServer.Close, replyStub.Close)

	cmd := exec.Command(l.python, "-u", l.stubDir+"/stub.py")
	cmd.ExtraFiles = []*os.File{cmdStub, replyStub, down.file, up.file, ansStub} // fds 3, 4, 5, 6, 7
	cmd.Env = os.Environ()
	if len(l.env) > 0 {
		// An execution environment's interpreter: as Triton, without the
		// server's PYTHONHOME, which would point it at another Python.
		cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, "PYTHONHOME=") })
	}
	cmd.Env = append(cmd.Env, l.env...)
	out := &lineLogger{log: l.log.With(zap.String("instance", l.instance))}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its own group: a kill reaches its children
	cmd.WaitDelay = time.Second                           // a grandchild holding stdout open does not hold us
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the Python stub process with %s: %w", l.python, err)
	}
	_ = cmdStub.Close()
	_ = ansStub.Close()
	_ = replyStub.Close()
	// The command pipes stay blocking files: the goroutine that sent a
	// command waits for the answer in read(2) itself, one system call,
	// where the netpoller would cost three or four (system calls are what
	// dominate a round trip on a virtual machine).
	rc, err := net.FileConn(replyServer)
	_ = replyServer.Close()
	if err != nil {
		_ = cmdServer.Close()
		_ = ansServer.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("reply socket: %w", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	p = &proc{instance: l.instance, log: l.log, cmd: cmd, cmds: &conn{c: cmdServer}, answers: bufio.NewReaderSize(ansServer, 64<<10), ansFile: ansServer,
		async: &conn{c: rc}, down: down, up: up, h: h, dead: make(chan struct{}), handled: make(chan struct{}),
		ctx: ctx, stop: stop, calls: map[uint64]chan *stubMsg{}, started: time.Now()}
	p.cond = sync.NewCond(&p.mu)
	go p.read()
	return p, nil
}

func socketPair(what string) (server, stub *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the %s socket of a stub: %w", what, err)
	}
	return os.NewFile(uintptr(fds[0]), what), os.NewFile(uintptr(fds[1]), what), nil
}

// pipe makes a pipe whose ends are blocking files (os.Pipe's would go
// through the netpoller).
func pipe(what string) (r, w *os.File, err error) {
	var fds [2]int
	if err := unix.Pipe2(fds[:], unix.O_CLOEXEC); err != nil {
		return nil, nil, fmt.Errorf("creating the %s pipe of a stub: %w", what, err)
	}
	return os.NewFile(uintptr(fds[0]), what), os.NewFile(uintptr(fds[1]), what), nil
}

// read reads the stub's own messages until its socket closes, then reaps
// the process and records why it ended.
func (p *proc) read() {
	r := bufio.NewReaderSize(p.async.c, 64<<10)
	var buf []byte
	var err error
	for {
		m := new(stubMsg)
		if err = readMsg(r, &buf, m); err != nil {
			break
		}
		if m.Op == "ready" {
			p.mu.Lock()
			ch := p.calls[m.Call]
			delete(p.calls, m.Call)
			p.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		} else if p.h != nil {
			p.h.message(p, m)
		}
		p.mu.Lock()
		p.seen++
		p.cond.Broadcast()
		p.mu.Unlock()
	}
	p.stop()
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) // and whatever it started
	werr := p.cmd.Wait()
	p.mu.Lock()
	detail := p.killed
	if detail == "" {
		detail = exitText(werr, err)
	}
	p.cause = fmt.Errorf("Stub process '%s' is not healthy. (%s)", p.instance, detail)
	p.ended = true
	p.cond.Broadcast()
	p.mu.Unlock()
	_ = p.cmds.c.Close()
	_ = p.ansFile.Close()
	_ = p.async.c.Close()
	close(p.dead)
}

// setInitCtx makes ctx, the load's, the context of the model-control
// calls the stub makes during its initialize; clearInitCtx ends that.
func (p *proc) setInitCtx(ctx context.Context) {
	p.mu.Lock()
	p.initCtx = ctx
	p.mu.Unlock()
}

func (p *proc) clearInitCtx() {
	p.mu.Lock()
	p.initCtx = nil
	p.mu.Unlock()
}

// waitSeen waits until the stub's first seq messages have been handled
// (those it sent before an answer), or the stub has ended.
func (p *proc) waitSeen(seq uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.seen < seq && !p.ended {
		p.cond.Wait()
	}
}

// exitText says how a process ended.
func exitText(werr, rerr error) string {
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() != syscall.SIGKILL {
			return fmt.Sprintf("it was killed by signal %v", ws.Signal())
		}
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Exited() {
			return fmt.Sprintf("it exited with status %d", ws.ExitStatus())
		}
		return "it was killed"
	}
	if werr == nil && rerr != nil && !errors.Is(rerr, net.ErrClosed) && rerr.Error() != "EOF" {
		return rerr.Error()
	}
	return "it exited"
}

// err returns why the process ended (after dead is closed).
func (p *proc) err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cause
}

// alive reports whether the process still runs.
func (p *proc) alive() bool {
	select {
	case <-p.dead:
		return false
	default:
		return true
	}
}

// kill ends the process at once; why says why, in its error ("": let
// its exit status say).
func (p *proc) kill(why string) {
	p.mu.Lock()
	if p.killed == "" {
		p.killed = why
	}
	p.mu.Unlock()
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
}

// command sends a command and waits for its answer. When ctx ends first,
// the stub is killed: an abandoned answer would be read as the next one's.
func (p *proc) command(ctx context.Context, msg message) (*stubMsg, error) {
	stop := context.AfterFunc(ctx, func() {
		p.kill("the server stopped waiting for it: " + context.Cause(ctx).Error())
	})
	defer stop()
	m, err := p.exchange(msg)
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return m, err
}

// exchange sends a command and reads its answer (blocking: the caller
// arranges for a kill when it must stop waiting).
func (p *proc) exchange(msg message) (*stubMsg, error) {
	p.cmdMu.Lock()
	defer p.cmdMu.Unlock()
	m := new(stubMsg)
	if err := p.cmds.send(msg); err == nil {
		err = readMsg(p.answers, &p.ansBuf, m)
		if cap(p.ansBuf) > 1<<20 {
			p.ansBuf = nil // a rare large answer is not kept
		}
		if err == nil {
			return m, nil
		}
	}
	p.kill("") // a broken exchange: the stub cannot be trusted
	<-p.dead
	return nil, p.err()
}

// call sends a request on the event socket (is_ready) and waits for the
// answer the stub sends back on it.
func (p *proc) call(ctx context.Context, op string) (*stubMsg, error) {
	ch := make(chan *stubMsg, 1)
	p.mu.Lock()
	p.nextID++
	id := p.nextID
	p.calls[id] = ch
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.calls, id)
		p.mu.Unlock()
	}()
	if err := p.async.send(&replyMsg{Op: op, Call: id}); err != nil {
		return nil, fmt.Errorf("Stub process '%s' is not healthy. (%v)", p.instance, err)
	}
	select {
	case m := <-ch:
		return m, nil
	case <-p.dead:
		return nil, p.err()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// shutdown asks the stub to finalize and exit, waits up to grace, then
// kills it; it returns once the process is reaped, and releases the
// shared memory.
func (p *proc) shutdown(grace time.Duration) {
	if p.alive() {
		ctx, cancel := context.WithTimeout(context.Background(), grace)
		if _, err := p.command(ctx, opMsg("finalize")); err != nil && p.alive() {
			p.kill("it did not finalize within " + grace.String())
		}
		cancel()
		select {
		case <-p.dead:
		case <-time.After(grace):
			p.kill("it did not exit within " + grace.String() + " of finalizing")
		}
	}
	<-p.dead
	p.release()
}

// release frees the shared memory once the process is dead and its
// users (batches, BLS calls) are done with it.
func (p *proc) release() {
	p.users.Wait()
	_ = p.down.close()
	_ = p.up.close()
}

// lineLogger writes a stub's stdout and stderr to the log, line by line.
type lineLogger struct {
	log *zap.Logger
	mu  sync.Mutex
	buf []byte
}

func (w *lineLogger) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, b...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.log.Info(strings.TrimRight(string(w.buf[:i]), "\r"))
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > 64<<10 { // a very long line: in pieces
		w.log.Info(string(w.buf))
		w.buf = w.buf[:0]
	}
	return len(b), nil
}

// endInputs gives back the block of ended batch r's inputs, unless the
// model still holds some of them (r.held, from the stub's answer): the
// block then waits for the stub's "freed". r.mu is held.
func (p *proc) endInputs(r *run) {
	if r.held {
		p.mu.Lock()
		if early, ok := p.kept[r.id]; !ok || early != nil {
			if p.kept == nil {
				p.kept = map[uint64]*run{}
			}
			p.kept[r.id] = r
			p.mu.Unlock()
			return
		}
		delete(p.kept, r.id) // freed already
		p.mu.Unlock()
	}
	r.released = true
	p.down.release(r.block)
}

// inputsFreed handles the stub's "freed" for batch id: the model no longer
// holds any of its inputs.
func (p *proc) inputsFreed(id uint64) {
	p.mu.Lock()
	r := p.kept[id]
	if r != nil {
		delete(p.kept, id)
	} else {
		if p.kept == nil {
			p.kept = map[uint64]*run{}
		}
		p.kept[id] = nil // the batch has not ended yet
	}
	p.mu.Unlock()
	if r != nil {
		r.mu.Lock()
		r.released = true
		p.down.release(r.block)
		r.mu.Unlock()
	}
}

// heldInputs is how many ended batches' inputs the model still holds.
func (p *proc) heldInputs() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, r := range p.kept {
		if r != nil {
			n++
		}
	}
	return n
}
