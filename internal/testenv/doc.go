// Package testenv tells the project's tests where the files that make deps
// fetches are (the ONNX Runtime library, the real models under
// .cache/models), and what to do when one is missing: skip the test on a
// developer's machine, fail it under CI=true, where the README's test
// command has fetched everything first, so that a broken set-up never
// passes as skipped.
//
//	func TestRecognizer(t *testing.T) {
//		model := testenv.Model(t, "ppocr/ch_PP-OCRv4_rec_infer.onnx")
//		...
//	}
package testenv
