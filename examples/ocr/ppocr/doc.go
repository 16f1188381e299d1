// Package ppocr serves PaddleOCR's PP-OCR pipeline (text detection,
// direction classification, recognition) with triton-go: the ONNX models
// run on the onnxruntime backend, and everything around them is Go.
//
// The package holds three layers:
//
//   - Image and tensor helpers, usable on their own: [DetPreprocess] and
//     [DBPostprocess] for the detector, [ClsBatch], [RecBatch] and
//     [CTCDecode] for the classifier and the recogniser, [RenderLine] and
//     [RenderPage] to draw test images with Go's own font, and
//     [ImageTensor] for the RGB image tensors (UINT8 [H, W, 3]) the models
//     below take.
//   - Go backends ([Backends]) for the steps between the ONNX models
//     (ppocr_det_pre, ppocr_crop, ppocr_orient, ppocr_decode) and for the
//     whole pipeline as one model that calls the others through
//     [backend.Caller] (ppocr_bls, Triton's business logic scripting in Go).
//   - A model repository ([WriteRepository], [Configs]) with the three ONNX
//     models, the Go models, and ppocr_ensemble, the same pipeline as a
//     Triton ensemble. [Recognize] reads an image through ppocr_bls or
//     ppocr_ensemble; [RunSteps] calls the steps one by one.
//
// The models' facts (tensor names, normalisation, CTC classes) are in
// backend/onnxruntime/testdata/REAL_MODELS.md; scripts/fetch-models.sh
// fetches the models into .cache/models/ppocr.
//
// Boxes are axis-aligned rectangles, enough for horizontal text; PaddleOCR
// itself fits rotated rectangles.
package ppocr
