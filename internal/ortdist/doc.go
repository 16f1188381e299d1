// Package ortdist describes the ONNX Runtime build the onnxruntime backend
// runs with and installs it: the onnxruntime-node npm package of
// [Version] (pinned by its sha256), the library inside it for this
// machine, and the places it is kept. backend/onnxruntime finds the
// library there; cmd/fetch-onnxruntime and scripts/fetch-onnxruntime.sh
// put it there with [Install].
package ortdist
