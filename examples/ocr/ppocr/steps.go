package ppocr

import (
	"context"
	"fmt"
	"image"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/tensor"
)

// Line is one line of text read from an image.
type Line struct {
	// Text is the line as the recogniser read it.
	Text string
	// Conf is the mean probability of the line's characters.
	Conf float32
	// Box is where the line is in the image.
	Box image.Rectangle
}

// Recognize sends img to model, ppocr_bls or ppocr_ensemble (or any model
// with their inputs and outputs: IMAGE in; TEXT, CONF and BOXES out), and
// returns the lines it read. A *triton.Server is a [backend.Caller].
func Recognize(ctx context.Context, caller backend.Caller, model string, img image.Image) ([]Line, error) {
	x, err := ImageTensor("IMAGE", img)
	if err != nil {
		return nil, err
	}
	resp, err := caller.Infer(ctx, &backend.InferRequest{Model: model, Inputs: []tensor.Tensor{x}})
	if err != nil {
		return nil, err
	}
	return linesOf(resp, resp)
}

// linesOf builds lines from the TEXT and CONF outputs of one response and
// the BOXES output of another.
func linesOf(texts, boxes *backend.InferResponse) ([]Line, error) {
	tt, err := output(texts, "TEXT", tensor.Bytes, tensor.Shape{-1})
	if err != nil {
		return nil, err
	}
	n := tt.Shape[0]
	ct, err := output(texts, "CONF", tensor.FP32, tensor.Shape{n})
	if err != nil {
		return nil, err
	}
	bt, err := output(boxes, "BOXES", tensor.Int32, tensor.Shape{n, 4})
	if err != nil {
		return nil, err
	}
	text, err := tensor.Strings(tt)
	if err != nil {
		return nil, err
	}
	conf, err := values[float32](ct)
	if err != nil {
		return nil, err
	}
	b, err := values[int32](bt)
	if err != nil {
		return nil, err
	}
	lines := make([]Line, n)
	for i := range lines {
		lines[i] = Line{Text: text[i], Conf: conf[i], Box: image.Rect(int(b[4*i]), int(b[4*i+1]), int(b[4*i+2]), int(b[4*i+3]))}
	}
	return lines, nil
}

// RunSteps reads img by calling the pipeline's models one after another,
// as the ppocr_ensemble model does: ppocr_det_pre, ppocr_det, ppocr_crop,
// ppocr_cls, ppocr_orient, ppocr_rec and ppocr_decode (the names in the
// repository [WriteRepository] writes). Each step gets all lines in one
// request, so a page may hold at most the classifier's and the
// recogniser's max_batch_size lines (ppocr_bls chunks instead). A page
// without text gives no lines: RunSteps stops after ppocr_crop, where the
// ensemble fails at ppocr_cls.
func RunSteps(ctx context.Context, caller backend.Caller, img image.Image) ([]Line, error) {
	x, err := ImageTensor("IMAGE", img)
	if err != nil {
		return nil, err
	}
	var missing error // the first output get did not find
	call := func(model string, inputs ...tensor.Tensor) (*backend.InferResponse, error) {
		if missing != nil {
			return nil, missing
		}
		resp, err := caller.Infer(ctx, &backend.InferRequest{Model: model, Inputs: inputs})
		if err != nil {
			return nil, fmt.Errorf("calling model %q: %w", model, err)
		}
		return resp, nil
	}
	// get returns output name of resp, renamed as the next step's input.
	get := func(resp *backend.InferResponse, name, as string) tensor.Tensor {
		t, ok := resp.Output(name)
		if !ok && missing == nil {
			missing = fmt.Errorf("model %q returned no output %q", resp.Model, name)
		}
		t.Name = as
		return t
	}
	pre, err := call("ppocr_det_pre", x)
	if err != nil {
		return nil, err
	}
	det, err := call(DetModel, get(pre, "DET_INPUT", modelInput))
	if err != nil {
		return nil, err
	}
	crops, err := call("ppocr_crop", x, get(det, detOutput, "DET_PROB"))
	if err != nil {
		return nil, err
	}
	if bt, err := output(crops, "BOXES", tensor.Int32, tensor.Shape{-1, 4}); err != nil || bt.Shape[0] == 0 {
		return nil, err // no text: nothing to classify or recognise
	}
	cls, err := call(ClsModel, get(crops, "CLS_INPUT", modelInput))
	if err != nil {
		return nil, err
	}
	ready, err := call("ppocr_orient", get(crops, "REC_INPUT", "REC_INPUT"), get(crops, "WIDTHS", "WIDTHS"), get(cls, clsOutput, "CLS_PROB"))
	if err != nil {
		return nil, err
	}
	rec, err := call(RecModel, get(ready, "REC_READY", modelInput))
	if err != nil {
		return nil, err
	}
	text, err := call("ppocr_decode", get(rec, recOutput, "REC_PROB"))
	if err != nil {
		return nil, err
	}
	return linesOf(text, crops)
}
