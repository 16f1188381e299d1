// Package signature compiles the inputs and outputs of a model
// configuration into the contract every request and every response is
// checked against: datatypes, shapes with the batch dimension, byte sizes
// and BYTES framing, reshapes, batch layouts, which requests may share a
// batch. The server (package triton) checks requests and backends' outputs
// with it, and the conformance kit (backend/backendtest) checks backends
// with the same code, so that the kit holds a backend to exactly what the
// server will. Messages follow Triton's wording.
//
// A Signature is immutable once compiled and safe for concurrent use.
package signature
