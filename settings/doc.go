// Package settings holds the server-wide state of Triton's logging and trace
// extensions (protocol §1.12, §1.13 and the LogSettings and TraceSetting
// RPCs of §2): the current values, their defaults, the rules by which an
// update changes them, and Triton's messages for updates it refuses.
// Triton has one such state per server, whichever protocol changes it, so an
// application makes one [Store] per server and hands it to each adapter it
// runs (httpapi.WithSettings, grpcapi.WithSettings). The adapters keep only
// the wire work: reading a request into a [LogUpdate] or [TraceUpdate] and
// writing the [Log] or [Trace] that results. It imports nothing of this
// module.
//
// # Entry points
//
//   - [NewStore] once per server, optionally driving a zap.AtomicLevel.
//   - [Store.Log] and [Store.UpdateLog] for the logging extension.
//   - [Store.Trace], [Store.UpdateTrace] and [Store.ClearTrace] for the
//     trace extension, globally (model "") or per model;
//     [Store.SetTraceDefaults] for the command line's trace settings;
//     [Store.SetTraceMode], [Store.WatchTrace] and [Store.TraceSnapshot]
//     for the tracer that samples by them (package trace).
//
// # Logging
//
// The log settings are log_file (the --log-file of the command line,
// [Store.SetLogFile]; it cannot be changed over the network), log_info, log_warning, log_error, log_verbose_level and
// log_format ("default" or "ISO8601"). With a level, an update sets it to
// the most verbose level the settings enable (verbose > 0: Debug; info:
// Info; warning: Warn; error: Error; none: DPanic) and the initial
// settings are read from it; the rest is stored and reported back, as
// Triton reports it, but changes nothing else.
//
// # Tracing
//
// The trace settings are trace_level (OFF, or TIMESTAMPS and/or TENSORS),
// trace_rate, trace_count, log_frequency, trace_file and trace_mode. A
// model's own values override the global ones; clearing one makes the
// global value apply again, and clearing a global value restores its
// default: the command line's ([Store.SetTraceDefaults], which also sets
// trace_file, never changeable over the network), else Triton's (level
// OFF, rate 1000, count -1, log frequency 0).
//
// A trace.Tracer samples requests by these settings: it sets trace_mode
// ([Store.SetTraceMode]) and follows every change ([Store.WatchTrace]),
// which applies to the next request. From then on an update that would
// leave a setting that cannot sample ([Trace.Valid]: no trace file in mode
// triton, rate 0, count 0) and is not OFF is refused with Triton's
// "Attempting to set invalid trace setting :<reason>". A store no tracer
// uses only stores and reports its trace settings.
//
// # Errors
//
// An update is checked whole before any of it applies: a refused update
// changes nothing. Its error's message is Triton's, to be sent to clients
// as is, and it wraps [ErrInvalid] (Triton's INVALID_ARG), [ErrUnavailable]
// (UNAVAILABLE) or [errors.ErrUnsupported] (UNSUPPORTED). Triton's HTTP and
// gRPC frontends word two of these messages differently; the [Protocol]
// given to an update picks the wording.
//
// # Concurrency
//
// A Store is safe for concurrent use; each call sees and makes one
// consistent state.
package settings
