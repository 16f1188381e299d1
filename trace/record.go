package trace

import (
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/triton-go/triton/tensor"
)

// Activity is a point in a request's life that a trace stamps, with
// Triton's names ([Activity.String]).
type Activity uint8

// The activities, as Triton names them. The adapters stamp the HTTP_*,
// GRPC_* and INFER_RESPONSE_COMPLETE ones; the server the others.
const (
	RequestStart Activity = iota
	QueueStart
	ComputeStart
	ComputeInputEnd
	ComputeOutputStart
	ComputeEnd
	RequestEnd
	HTTPRecvStart
	HTTPRecvEnd
	HTTPSendStart
	HTTPSendEnd
	GRPCWaitReadStart
	GRPCWaitReadEnd
	GRPCSendStart
	GRPCSendEnd
	InferResponseComplete
	numActivities
)

var activityNames = [numActivities]string{
	RequestStart:          "REQUEST_START",
	QueueStart:            "QUEUE_START",
	ComputeStart:          "COMPUTE_START",
	ComputeInputEnd:       "COMPUTE_INPUT_END",
	ComputeOutputStart:    "COMPUTE_OUTPUT_START",
	ComputeEnd:            "COMPUTE_END",
	RequestEnd:            "REQUEST_END",
	HTTPRecvStart:         "HTTP_RECV_START",
	HTTPRecvEnd:           "HTTP_RECV_END",
	HTTPSendStart:         "HTTP_SEND_START",
	HTTPSendEnd:           "HTTP_SEND_END",
	GRPCWaitReadStart:     "GRPC_WAITREAD_START",
	GRPCWaitReadEnd:       "GRPC_WAITREAD_END",
	GRPCSendStart:         "GRPC_SEND_START",
	GRPCSendEnd:           "GRPC_SEND_END",
	InferResponseComplete: "INFER_RESPONSE_COMPLETE",
}

// String returns Triton's name of the activity.
func (a Activity) String() string {
	if a < numActivities {
		return activityNames[a]
	}
	return "CUSTOM_ACTIVITY"
}

// Frontend reports whether the activity is an adapter's (HTTP_*, GRPC_*,
// INFER_RESPONSE_COMPLETE): in OpenTelemetry mode an event of the root
// span, not of the model's.
func (a Activity) Frontend() bool { return a >= HTTPRecvStart && a < numActivities }

// TensorActivity is what a tensor record of level TENSORS reports.
type TensorActivity uint8

// The tensor activities, as Triton names them ([TensorActivity.String]).
const (
	TensorQueueInput    TensorActivity = iota // an input, when the request is queued
	TensorBackendOutput                       // an output, when its response is sent
)

// String returns Triton's name of the tensor activity.
func (a TensorActivity) String() string {
	if a == TensorQueueInput {
		return "TENSOR_QUEUE_INPUT"
	}
	return "TENSOR_BACKEND_OUTPUT"
}

// Stamp is one timestamp of a trace.
type Stamp struct {
	Activity Activity
	At       time.Time // with its monotonic reading
}

// TensorRecord is one tensor of a trace at level TENSORS. Tensor's data is
// a copy, owned by the record.
type TensorRecord struct {
	Activity TensorActivity
	Tensor   tensor.Tensor
	At       time.Time // when it was recorded (places it among the stamps)
}

// Record is a finished trace, what an exporter receives: one request's
// stamps and tensors, and the traces of the requests it made (ensemble
// steps, BLS calls) as Children. Records are read-only once exported.
type Record struct {
	// ID is the trace's id, from a process-wide counter that starts at 1;
	// Parent is the parent trace's id, 0 for a request a client sent.
	ID, Parent uint64
	// Model, Version and RequestID name the request (RequestID may be "").
	Model     string
	Version   int64
	RequestID string
	// Stamps are in the order they were taken.
	Stamps  []Stamp
	Tensors []TensorRecord
	// Children are the traces of the requests this one made, in the order
	// they started.
	Children []*Record
	// Remote is the span this trace continues, in OpenTelemetry mode: the
	// W3C traceparent of the HTTP headers or gRPC metadata, or the span in
	// the caller's context for an in-process request; not valid when none.
	Remote trace.SpanContext
}

// exporter is where finished traces go: the trace file (mode triton) or
// OpenTelemetry (mode opentelemetry). export is called once per root
// trace, from the goroutine that ended it, and must not block on I/O for
// long (buffer and write in the background, or write quickly); close
// flushes what is buffered and releases the exporter.
type exporter interface {
	export(r *Record)
	close() error
}
