// Package python runs Triton Python backend models: model.py files with a
// TritonPythonModel class, unchanged.
//
// Each model instance is its own Python process (a stub), so instances run
// in parallel beyond the GIL and a crash stays in its process. A stub
// imports the model, calls initialize, then execute for each batch the
// server forms, and finalize at unload. Tensors cross through shared
// memory: two anonymous memfd regions per stub (inputs one way, outputs the
// other), so a numpy array in execute is a view of the server's bytes;
// only small messages (Python's marshal format) cross the pipes and the
// socket, and a stub waiting for work blocks reading its command pipe.
//
// The module models import, triton_python_backend_utils, is ours (in
// stub/): Tensor, InferenceRequest (with BLS: exec, exec(decoupled=True),
// async_exec), InferenceResponse, TritonError, Logger, MetricFamily,
// ModelConfig for auto_complete_config, and Triton's helper functions.
//
// A decoupled request's response sender has credits (sendWindow): send
// waits while that many of its responses are ahead of what the server has
// handed on to the request's stream, so a slow consumer holds back its own
// request only, never the stub's event reader and the other requests, and
// what the server keeps for it is bounded. The other way, the iterator of a
// decoupled BLS request (exec(decoupled=True)) is sent at most sendWindow
// responses ahead of those the model has taken; one the model drops before
// its final response cancels its request.
//
// BLS calls work anywhere once initialize has returned (execute, its
// threads, threads of the model's own) until finalize, as in Triton. A
// request that execute returns without answering (None in its list, no
// list, or any request of a decoupled model) waits for its response
// sender; it fails with an error saying so when the model releases the
// request and its sender without a final response (Triton's client would
// wait for ever), and at its deadline or cancellation when the model
// keeps it; a request kept past that reads as cancelled (is_cancelled).
// An execute that raises closes its requests' senders: a later send
// raises "Response sender has been closed.", as in Triton.
//
// Inputs are numpy views of the shared memory the server wrote them to.
// What the model keeps of them past execute (a request, a tensor, an
// array or a view of one, or a response sender, whose is_cancelled reads
// there) keeps that memory: the stub tells the server,
// which gives the block to a later batch only once the model has freed
// the last of them, as Triton's reference-counted memory does.
//
// Outputs reach clients with the datatype the model produced, even where
// the config declares another (a numpy sum is int64 whatever the config
// says), as Triton's Python backend passes them on: the model is a
// backend.DataTypeKeeper. The first such output of each name is logged at
// warning level.
//
// The model's folders are appended to sys.path, as Triton does: a file in
// them does not shadow a module of the interpreter's own.
//
// A stub that dies (killed, crashed) fails the requests it had and is
// replaced by a new one; one still executing a batch stub-timeout-seconds
// after every request of the batch passed its deadline is killed and
// replaced. A stub exits by itself when the server goes away.
//
// Each instance reports (backend.MemoryReporter) its stub's private and
// shared-memory resident pages, RssAnon and RssShmem of /proc/<pid>/status:
// the interpreter's heap, what the model imported and keeps, and the pages
// of the shared-memory regions the stub has touched (not the code it
// shares with every Python process); processes the model starts are not
// counted. An instance whose stub has exited (one being replaced) reports
// an error.
//
// Python-based backends: a model whose ModelSpec has a BackendDir and whose
// config's runtime is "model.py" (the server found its backend in the
// backend directory, triton.WithBackendDirectory) runs BackendDir/model.py,
// imported as the module "model" with BackendDir on the path, as Triton
// runs them; a pb_exec_env_model.py.tar.gz there is its EXECUTION_ENV_PATH
// unless the config sets one.
//
// The interpreter is, in order: the model's EXECUTION_ENV_PATH (an
// environment folder, or a packed one, a .tar.gz, unpacked once for the
// models that share it and removed with the last of them),
// [WithInterpreter], Debian's /usr/bin/python3 ([DefaultInterpreter]), the
// first python3 on PATH. It must have numpy.
package python
