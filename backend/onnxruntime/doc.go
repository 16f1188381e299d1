// Package onnxruntime is the ONNX Runtime backend: it serves `.onnx` models
// through github.com/yalue/onnxruntime_go, with ONNX Runtime [RuntimeVersion]
// loaded at run time. Importing the package registers it as "onnxruntime",
// which also serves `platform: "onnxruntime_onnx"`:
//
//	import _ "github.com/triton-go/triton/backend/onnxruntime"
//
// # The library
//
// The shared library is searched for in this order: [WithLibraryPath];
// the ONNXRUNTIME_LIB environment variable; the copy that
// scripts/fetch-onnxruntime.sh keeps in a triton-go checkout
// (.cache/onnxruntime/1.24.1/linux-<arch>/, found from the working
// directory upwards); the user's cache folder ([UserCachePath]:
// $XDG_CACHE_HOME or ~/.cache, then triton-go/onnxruntime/1.24.1/linux-<arch>/),
// where a program built without a checkout (go install) finds the library
// that [FetchCommand] installs:
//
//	go run github.com/triton-go/triton/cmd/fetch-onnxruntime@latest
//
// and last the folders of $LD_LIBRARY_PATH and the system's library
// folders (/usr/local/lib, /usr/lib/<multiarch>, /usr/lib, ...), for
// libonnxruntime.so.1.24.1 or libonnxruntime.so.1. The load error names
// the places searched and that command. onnxruntime_go keeps
// one ONNX Runtime environment per process, shared by every Backend value:
// the first model to load creates it, the last model to close releases it,
// and several servers in one process work side by side.
//
// # Models and sessions
//
// A model version is the file named by default_model_filename (default
// model.onnx) in its version folder; from a repository on disk it is opened
// by path, so external data files next to it are found. Each instance_group
// instance gets its own ONNX Runtime session. Execute feeds a whole batch at
// once (the requests' inputs concatenated along the batch dimension, none
// copied for a batch of one), computes only the outputs some request asked
// for, and hands each request a view of its rows. Outputs whose shape the
// model file fixes, but for the batch dimension, are written by ONNX
// Runtime straight into the response's memory; the others are copied out
// of ONNX Runtime's. BYTES tensors travel in
// Triton's framing through the length-aware string API (package
// cgo/ortrun), so elements with NUL bytes or invalid UTF-8 round-trip
// exactly. A request's context cancels a running session through ONNX
// Runtime's terminate flag.
//
// Each instance reports (backend.MemoryReporter) the bytes of the model's
// initializers, of which its session holds a copy: those of the graph and
// its subgraphs, sparse ones included, whether their data is in the model
// file or in external data files, sized from their data types and dims
// when the model loads (the file is walked without reading the weights).
// That is the weights only. ONNX Runtime's arena, where a run's
// activations live, is not counted: its in-use bytes move with every run,
// and its statistics (AllocatorGetStats) need the session's allocator,
// which the binding does not reach. Nor are the copies ONNX Runtime makes
// of some weights (pre-packed for its kernels) and the Constant nodes it
// turns into initializers.
//
// # Configuration
//
// Config parameters follow Triton's ONNX Runtime backend:
// intra_op_thread_count (default: the machine's cores shared among the
// model's instances, at least 1), inter_op_thread_count (default 1),
// execution_mode (0 sequential, 1 parallel), enable_mem_arena,
// enable_mem_pattern, and session.* keys passed as session config entries.
// Unlike ONNX Runtime on its own, the pools' threads do not spin while they
// wait for work (session.intra_op.allow_spinning and
// session.inter_op.allow_spinning default to "0"): a spinning thread holds
// a core that the server's own goroutines and the model's other instances
// need; set them to "1" for a lone model on an idle machine where the
// latency of each parallel section counts most. With instance_group absent
// a CPU model gets two instances (Triton's default for this backend), each
// with half the cores.
// optimization.graph.level: 0 (all optimizations, default), -1 (basic), 1
// (extended), 2 (disabled). optimization.execution_accelerators map to
// execution providers in Triton's order: GPU accelerators "tensorrt" (with
// precision_mode, max_workspace_size_bytes and trt_* parameters) and "cuda"
// for GPU instances, CUDA for every GPU instance, then the CPU accelerator
// "openvino". A provider the library or machine lacks fails the load with an
// error saying so; the library fetched by the script is the CPU build.
// model_operations (custom operator libraries) is not loaded: a model that
// needs one fails to load with ONNX Runtime's error and a note naming the
// libraries, and one that loads without them logs a warning.
//
// # Auto-complete
//
// Unless the server runs with strict configuration, a config (or a missing
// config.pbtxt) is completed from the model file as Triton does: inputs and
// outputs with their datatypes and dims when the config lists none (the
// targets of batch_input, which the server makes, left out); a model
// whose every input and output has a dynamic first dimension is batchable,
// and a max_batch_size left at 0 becomes 4 ([WithDefaultMaxBatchSize]) with
// dynamic batching enabled. Rank-0 tensors become dims [1] (they make the
// model unbatchable), as Triton's ONNX Runtime backend writes them; the
// backend feeds such a tensor to the session as rank 0 and answers it as
// [1]. Whatever the config states is then checked against
// the model: names, datatypes and dims must agree, and the error names the
// file and tensor (with a hint when the batch dimension was written into
// dims).
//
// # Sequence batching and implicit state
//
// A model with sequence_batching may have inputs and outputs that the
// config does not list in input and output: the control inputs
// (control_input; the server feeds them, [1] per request, INT32, FP32 or
// BOOL after the *_false_true list they set, CORRID in its data_type) and
// the implicit state (state: the server feeds input_name and takes
// output_name back from every request). They are fed to and taken from the
// session like configured tensors and checked against the model file when
// the model loads (datatype, and shape: a control is [-1, 1] for a batching
// model, a state its dims with the batch dimension inserted); auto-complete
// leaves them out of input and output. State outputs are computed for every
// batch, whatever outputs the clients asked for. A state whose batch is not
// its first dimension (recurrent state laid out [layers, batch, hidden])
// says where it is with a config parameter named after the state's
// input_name or output_name:
//
//	parameters { key: "batch_axis:STATE_IN" value: { string_value: "1" } }
//
// The value is the index of the batch dimension among the state's
// dimensions, the batch dimension counted (0 by default); given under both
// names, the two values must agree. Auto-complete takes that dimension,
// not the first, for the state's batch dimension.
package onnxruntime
