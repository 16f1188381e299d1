// Package backendtest is a conformance kit for backend authors: it checks
// that a [backend.Backend] keeps the contract of package backend by
// driving it the way the server does, as testing/fstest.TestFS does for a
// file system. Use it in the tests of a backend, with a few small models
// and requests whose answers are known:
//
//	func TestConformance(t *testing.T) {
//		backendtest.Run(t, mybackend.New(), backendtest.Model{
//			Config: cfg, // parsed, normalized, validated
//			Dir:    "testdata/models/add_sub",
//			Requests: []backendtest.Request{{
//				Inputs: []tensor.Tensor{in0, in1},
//				Check:  func(outs []tensor.Tensor) error { ... }, // OUTPUT0 = INPUT0 + INPUT1
//			}},
//		})
//	}
//
// Run it under -race: several of the checks are concurrent so that the
// race detector sees what a backend shares between models and instances.
// [Check] runs the same checks and returns the problems as an error, for
// use outside a test (and for testing the kit itself).
//
// Each problem is one line naming where it was seen and what is wrong:
//
//	model "add" version 1, instance add_0, batch [Requests[0] Requests[1]/OUTPUT1], Requests[1]/OUTPUT1: output "OUTPUT1" has shape [1,4], the config expects [2,4] (its first dimension must be the request's batch size, 2) (6 times in all)
//
// Requests are named by their place in [Model.Requests] and
// [Model.Failing] (also their [backend.Request.ID]); "Requests[1]/OUTPUT1"
// is the variant of Requests[1] that asks for OUTPUT1 alone. A problem
// seen in several places is reported once, at the first of them, with
// the count.
//
// The kit calls the backend directly, with no server: it builds each
// [backend.ModelSpec], [backend.InstanceSpec] and [backend.Batch] itself
// (Logger is a no-op logger, Caller is nil), validates the requests as the
// server would (a request the server would reject is the caller's mistake
// and stops the run), and reshapes inputs as the config's `reshape` asks.
// It calls [backend.Warmup] after each NewInstance and [backend.Ready]
// during Execute, as the server may.
//
// # What the kit promises the backend
//
// Exactly the server's promises, which the kit asserts on itself (a
// broken one is reported as a "backendtest bug"): Execute is never called
// concurrently on one Instance, nor after its Close; Close is called once
// per Instance and once per Model, the Model's after all its instances';
// Load and NewInstance may be called concurrently. Input tensors are
// shared by concurrent batches and must only be read.
//
// # The checks
//
// Each check is a subtest of [Run], and the prefix of its lines in the
// error of [Check]:
//
//   - load: every model is loaded three times at once (its version and
//     the next two, the same folder shown under those numbers through
//     ModelSpec.FS, with Dir empty), together with the other models; each
//     loaded version creates all its instances at once (at least two: the
//     kit raises the config's count when it asks for one), every instance
//     runs every request, and all is closed. Load must not change
//     ModelSpec.Config.
//   - execute: the instances of each model run batches in parallel, each
//     instance one batch at a time: every request alone, then, when the
//     model batches (max_batch_size > 0), requests gathered into batches of
//     up to max_batch_size rows as the dynamic batcher gathers them
//     (inputs concatenated along the batch dimension by [backend.Batch]),
//     asking for different outputs. A request that asks for every output
//     of a model with several also goes out asking for each one alone.
//     Ready is asked during each Execute and must report the instance
//     ready.
//   - lifecycle: a model closed without instances, instances closed without
//     having run a batch, and a model loaded, run and closed twice in a row
//     (a backend that releases process-wide state with its last model must
//     set it up again).
//   - cancel: Load and NewInstance with a cancelled context, and Execute
//     with a cancelled context and with one past its deadline.
//   - failing: each of [Model.Failing] alone, then, when the model batches,
//     in a batch with a good request before it and in one with a good
//     request after it; then a good request alone on the same instance.
//
// In every check, each call into the backend must return within
// [Model.Timeout] and must not panic (a panic is recovered and reported
// with where it happened; the instance is then out of use, as the server
// replaces it), and every Close must return nil. Every batch that ran is
// checked:
//
//   - Execute returns nil for a batch with a good request in it: an error
//     fails the whole batch, so a request the backend cannot serve must
//     fail on its own with [backend.Request.Fail]. Only a batch of Failing
//     requests alone may fail as a whole.
//   - A good request does not fail, and gets every output it asked for
//     (every output of the config when it names none). Each has the
//     config's datatype and a shape that matches the config's dims, or its
//     reshape when it has one (-1 matches any size), with the request's
//     batch size as the first dimension when the model batches; its data
//     has the size the shape implies, and BYTES data is well framed
//     ([tensor.Tensor.Validate]). Then [Request.Check] verifies the
//     values. Outputs the request did not ask for are ignored, as the
//     server drops them.
//   - A Failing request fails.
//   - Execute did not write to the inputs.
//
// For a context that has ended, the rule is: the call returns within
// [Model.Timeout]; an error it returns wraps the context's error
// (errors.Is(err, ctx.Err())), and so does the error of any request it
// fails; and what it reports as a success is a real one, passing every
// check above. Doing the work anyway is allowed (the contract asks for
// ctx.Err() "where the runtime allows it"); stopping early and reporting
// success is not.
//
// # What it does not check
//
// The kit does not cancel a context while Execute runs (that needs a model
// slow enough to be caught mid-run), does not keep sequence state (for a
// sequence_batching model, give the control and state inputs in each
// request; state outputs are not checked), and checks no optional
// capability beyond calling Warmup and Ready. Data races are the race
// detector's to find.
//
// # Experimental
//
// The kit is new: its checks may grow stricter and its API change in a
// later release.
package backendtest
