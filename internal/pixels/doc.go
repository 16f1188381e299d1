// Package pixels is the "pixels" Go backend of the digits example
// ensemble (examples/model_repository/digits): 8-bit grey images in
// IMAGE (UINT8 [28, 28] a request, batched on a leading dimension) become
// the network's input in PIXELS (FP32 [1, 28, 28]: one channel, each value
// divided by 255). cmd/tritonserver compiles it in; examples/digits
// registers it in its own process.
package pixels
