package backendtest

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/tensor"
)

// DefaultTimeout is how long the kit waits for one call into the backend
// (Load, NewInstance, Warmup, Ready, Execute, Close) when [Model.Timeout]
// is zero. It is generous on purpose: it exists to turn a hang into a
// failure, not to measure speed.
const DefaultTimeout = time.Minute

// Model is one model version for the kit to drive, as the server would
// load it from a repository.
type Model struct {
	// Config is the model configuration, as the server hands it to the
	// backend: parsed, normalized and validated (repository.ParseConfig,
	// repository.Normalize and repository.Validate make one from
	// config.pbtxt text). Its name is the model's name. Required. The kit
	// works on a copy: it gives the model at least two instances (raising
	// the count of the first instance group, or adding a KIND_CPU group
	// when there is none) and leaves the caller's value alone.
	Config *modelconfig.ModelConfig
	// FS is the model folder: the one holding config.pbtxt and the
	// version folders. When it is nil, Dir is used (os.DirFS), and when
	// both are empty the model has no files (enough for a backend that
	// reads none, such as [backend.Func]).
	FS fs.FS
	// Dir is the local path of the model folder, or "" when there is none.
	Dir string
	// Version is the version folder to load; 0 means 1. The concurrent
	// load check also loads the same folder as the next two versions,
	// through FS only (with Dir empty), as a repository not on the local
	// file system would be.
	Version int64
	// Requests are requests that must succeed: inputs as a client sends
	// them (with the batch dimension when max_batch_size > 0, before any
	// `reshape`). At least one is required. The kit runs them alone and,
	// when the model batches, gathered into batches of several requests.
	Requests []Request
	// Failing are requests the backend must fail on their own, with
	// [backend.Request.Fail], while the other requests of the same batch
	// succeed. They must pass the server's validation (right names,
	// datatypes and shapes): what makes them fail is their values. Leave
	// it empty for a backend that has no per-request failure.
	Failing []Request
	// Timeout bounds every call into the backend; 0 means
	// [DefaultTimeout]. A call that does not return in time is reported,
	// and the instance (and its model) it was made on are left unclosed.
	Timeout time.Duration
}

// Request is one inference request of a [Model].
type Request struct {
	// Inputs are the request's input tensors, as a client sends them.
	Inputs []tensor.Tensor
	// Outputs names the outputs to ask for; empty asks for every output of
	// the configuration. For a request that asks for every output of a
	// model with several, the kit also sends variants that ask for one
	// output each.
	Outputs []string
	// Check, when set, verifies the values of a successful request's
	// outputs: the ones the request asked for (for the one-output
	// variants, that one alone), in the order of the configuration, their
	// datatypes and shapes already checked against it. Its error is
	// reported with the model and request. It may be called from several
	// goroutines at once.
	Check func(outputs []tensor.Tensor) error
}

// check is one of the kit's checks: its subtest name and what runs it.
type check struct {
	name string
	run  func(s *suite, r *report)
	// skip, when set, says why the check has nothing to do ("" when it
	// has).
	skip func(s *suite) string
}

// checks are the kit's checks in the order they run; doc.go describes
// each.
var checks = []check{
	{"load", (*suite).checkLoad, nil},
	{"execute", (*suite).checkExecute, nil},
	{"lifecycle", (*suite).checkLifecycle, nil},
	{"cancel", (*suite).checkCancel, nil},
	{"failing", (*suite).checkFailing, func(s *suite) string {
		for _, m := range s.models {
			if len(m.bad) > 0 {
				return ""
			}
		}
		return "no Model has Failing requests"
	}},
}

// Run checks that b keeps the contract of package backend with the given
// models, driving it as the server does. Each check is a subtest (load,
// execute, lifecycle, cancel, failing); every problem found is reported
// with t.Error, naming the model, version, instance, request and tensor.
// A mistake in the models themselves (a request the server would reject)
// fails the test at once. Run it under -race: the concurrent checks are
// there for the race detector to see.
func Run(t *testing.T, b backend.Backend, models ...Model) {
	t.Helper()
	s, err := newSuite(b, models)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if c.skip != nil {
				if why := c.skip(s); why != "" {
					t.Skip(why)
				}
			}
			r := new(report)
			c.run(s, r)
			for _, line := range r.lines() {
				t.Error(line)
			}
		})
	}
}

// Check runs the same checks as [Run] and returns the problems found,
// joined, each line prefixed "backendtest: <check>: ", or nil when b keeps
// the contract. It is the kit without a *testing.T, as fstest.TestFS is.
func Check(b backend.Backend, models ...Model) error {
	s, err := newSuite(b, models)
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range checks {
		r := new(report)
		c.run(s, r)
		for _, line := range r.lines() {
			errs = append(errs, errors.New("backendtest: "+c.name+": "+line))
		}
	}
	return errors.Join(errs...)
}

// maxLines bounds what one check reports.
const maxLines = 20

// report collects the problems one check finds, from any goroutine. One
// fault usually shows in many places (every batch, every version), so a
// problem is reported once, at the first place where it was seen (in
// sorted order), with how often it was.
type report struct {
	mu sync.Mutex
	// mu protects the following.
	seen map[string]*sighting // by problem
}

type sighting struct {
	where string
	n     int
}

// add records problem what, seen at where (the model, version, instance,
// batch and request it concerns).
func (r *report) add(where, what string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen == nil {
		r.seen = map[string]*sighting{}
	}
	s := r.seen[what]
	if s == nil {
		r.seen[what] = &sighting{where: where, n: 1}
		return
	}
	s.n++
	s.where = min(s.where, where)
}

// lines returns the problems, sorted, at most maxLines of them.
func (r *report) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	msgs := make([]string, 0, len(r.seen))
	for what, s := range r.seen {
		line := s.where + ": " + what
		if s.n > 1 {
			line += fmt.Sprintf(" (%d times in all)", s.n)
		}
		msgs = append(msgs, line)
	}
	slices.Sort(msgs)
	if len(msgs) > maxLines {
		more := len(msgs) - maxLines
		msgs = append(msgs[:maxLines], "... and "+strconv.Itoa(more)+" more")
	}
	return msgs
}
