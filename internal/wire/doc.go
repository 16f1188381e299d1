// Package wire holds the tensor conversions that Triton's HTTP and gRPC
// protocols share, so that httpapi and grpcapi answer alike: the
// classification extension's top-k strings ([Classify]) and aligned views
// of request bytes ([Aligned]).
//
//	out, err := wire.Classify(logits, 3, true, labels) // "0.970000:2:cat", ...
package wire
