package ppocr

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"image"
	"slices"

	"golang.org/x/sync/errgroup"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/tensor"
)

// Default names of the ONNX models the pipeline calls, as in the
// repository [WriteRepository] writes.
const (
	DetModel = "ppocr_det"
	ClsModel = "ppocr_cls"
	RecModel = "ppocr_rec"
)

// The ONNX models' tensor names (testdata/REAL_MODELS.md of
// backend/onnxruntime).
const (
	modelInput = "x"
	detOutput  = "sigmoid_0.tmp_0"
	clsOutput  = "softmax_0.tmp_0"
	recOutput  = "softmax_11.tmp_0"
)

// BLSBackend returns the ppocr_bls backend, the whole pipeline as one Go
// model that calls the ONNX models through the server (Triton's business
// logic scripting): input IMAGE, UINT8 [H, W, 3] (RGB); outputs TEXT, BYTES
// [N], CONF, FP32 [N], and BOXES, INT32 [N, 4] (x0, y0, x1, y1), one row a
// line of text, top to bottom. Per request it preprocesses the image in Go,
// calls the detector, finds and crops the lines ([DBPostprocess]), asks the
// classifier which lines are upside down (in chunks of at most its
// max_batch_size) and turns those, then calls the recogniser on the lines
// sorted by aspect ratio, in concurrent chunks of at most its
// max_batch_size, and decodes them ([CTCDecode]) with the dictionary of
// the model's version folder (config parameter "keys_file", default
// [KeysFile]). An image without text gives N = 0 without calling the
// classifier or the recogniser.
//
// The called models are named by the config parameters det_model,
// cls_model and rec_model (defaults [DetModel], [ClsModel], [RecModel]).
// Loading fails without [backend.ModelSpec.Caller].
func BLSBackend() backend.Backend {
	return goBackend(func(spec *backend.ModelSpec) (requestFunc, error) {
		if spec.Caller == nil {
			return nil, errors.New("ppocr_bls calls other models and needs the server's Caller, but ModelSpec.Caller is nil")
		}
		fsys, err := spec.VersionFS()
		if err != nil {
			return nil, err
		}
		keysFile := parameter(spec, "keys_file", KeysFile)
		keys, err := ReadKeysFS(fsys, keysFile)
		if err != nil {
			return nil, fmt.Errorf("reading the dictionary (parameter keys_file): %w", err)
		}
		p := &pipeline{
			caller: spec.Caller,
			keys:   keys,
			det:    parameter(spec, "det_model", DetModel),
			cls:    parameter(spec, "cls_model", ClsModel),
			rec:    parameter(spec, "rec_model", RecModel),
		}
		return func(ctx context.Context, r *backend.Request) error {
			img, err := imageInput(r)
			if err != nil {
				return err
			}
			lines, err := p.read(ctx, img)
			if err != nil {
				return err
			}
			return setLines(r, lines)
		}, nil
	})
}

// parameter returns a config parameter, or def when it is unset or empty.
func parameter(spec *backend.ModelSpec, key, def string) string {
	if v, ok := spec.Parameter(key); ok && v != "" {
		return v
	}
	return def
}

// setLines sets the TEXT, CONF and BOXES outputs of lines.
func setLines(r *backend.Request, lines []Line) error {
	n := int64(len(lines))
	text, conf, boxes := make([]string, n), make([]float32, n), make([]image.Rectangle, n)
	for i, l := range lines {
		text[i], conf[i], boxes[i] = l.Text, l.Conf, l.Box
	}
	t, err := tensor.FromStrings("TEXT", tensor.Shape{n}, text)
	if err != nil {
		return err
	}
	r.SetOutput(t)
	if err := setOutput(r, "CONF", tensor.Shape{n}, conf); err != nil {
		return err
	}
	return setOutput(r, "BOXES", tensor.Shape{n, 4}, boxData(boxes))
}

// pipeline is a loaded ppocr_bls model.
type pipeline struct {
	caller        backend.Caller
	keys          []string
	det, cls, rec string
}

// read runs the pipeline on img.
func (p *pipeline) read(ctx context.Context, img *image.RGBA) ([]Line, error) {
	data, w, h := DetPreprocess(img)
	resp, err := p.infer(ctx, p.det, tensor.Shape{1, 3, int64(h), int64(w)}, data, detOutput)
	if err != nil {
		return nil, err
	}
	pt, err := output(resp, detOutput, tensor.FP32, tensor.Shape{1, 1, int64(h), int64(w)})
	if err != nil {
		return nil, err
	}
	prob, err := values[float32](pt)
	if err != nil {
		return nil, err
	}
	boxes := DBPostprocess(prob, w, h, img.Bounds())
	if len(boxes) == 0 {
		return nil, nil
	}
	crops := make([]image.Image, len(boxes))
	for i, b := range boxes {
		crops[i] = Crop(img, b)
	}

	// Orientation: turn the lines the classifier finds upside down.
	upsideDown := make([]bool, len(crops))
	err = p.chunks(ctx, p.cls, len(crops), func(ctx context.Context, lo, hi int) error {
		n := int64(hi - lo)
		resp, err := p.infer(ctx, p.cls, tensor.Shape{n, 3, Height, ClsWidth}, ClsBatch(crops[lo:hi]), clsOutput)
		if err != nil {
			return err
		}
		ct, err := output(resp, clsOutput, tensor.FP32, tensor.Shape{n, 2})
		if err != nil {
			return err
		}
		cls, err := values[float32](ct)
		if err != nil {
			return err
		}
		for i := range n {
			upsideDown[lo+int(i)] = cls[2*i+1] > ClsThresh
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i, flip := range upsideDown {
		if flip {
			crops[i] = Rotate180(crops[i])
		}
	}

	// Recognition, in chunks of lines of similar aspect ratios: each chunk
	// is padded to its widest line.
	order := make([]int, len(crops))
	for i := range order {
		order[i] = i
	}
	ratio := func(i int) float64 { b := crops[i].Bounds(); return float64(b.Dx()) / float64(b.Dy()) }
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(ratio(a), ratio(b)) })
	lines := make([]Line, len(crops))
	err = p.chunks(ctx, p.rec, len(order), func(ctx context.Context, lo, hi int) error {
		chunk := make([]image.Image, hi-lo)
		for i, k := range order[lo:hi] {
			chunk[i] = crops[k]
		}
		data, W, _ := RecBatch(chunk)
		n := int64(hi - lo)
		resp, err := p.infer(ctx, p.rec, tensor.Shape{n, 3, Height, int64(W)}, data, recOutput)
		if err != nil {
			return err
		}
		rt, err := output(resp, recOutput, tensor.FP32, tensor.Shape{n, -1, int64(len(p.keys) + 2)})
		if err != nil {
			return err
		}
		probs, err := values[float32](rt)
		if err != nil {
			return err
		}
		text, conf, err := decodeLines(probs, int(n), int(rt.Shape[1]), p.keys)
		if err != nil {
			return fmt.Errorf("model %q: %w", p.rec, err)
		}
		for i, k := range order[lo:hi] {
			lines[k] = Line{Text: text[i], Conf: conf[i], Box: boxes[k]}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return lines, nil
}

// infer calls model with one FP32 input x and asks for one output.
func (p *pipeline) infer(ctx context.Context, model string, shape tensor.Shape, data []float32, out string) (*backend.InferResponse, error) {
	x, err := tensor.From(modelInput, shape, data)
	if err != nil {
		return nil, err
	}
	resp, err := p.caller.Infer(ctx, &backend.InferRequest{Model: model, Inputs: []tensor.Tensor{x}, Outputs: []string{out}})
	if err != nil {
		return nil, fmt.Errorf("calling model %q: %w", model, err)
	}
	return resp, nil
}

// chunks runs f concurrently on [0, n) cut into chunks of at most model's
// max_batch_size rows (one chunk when the model does not batch, its batch
// axis then being an ordinary dimension).
func (p *pipeline) chunks(ctx context.Context, model string, n int, f func(ctx context.Context, lo, hi int) error) error {
	cfg, err := p.caller.ModelConfig(model, 0)
	if err != nil {
		return fmt.Errorf("model %q: %w", model, err)
	}
	size := int(cfg.GetMaxBatchSize())
	if size <= 0 {
		size = n
	}
	g, ctx := errgroup.WithContext(ctx)
	for lo := 0; lo < n; lo += size {
		hi := min(lo+size, n)
		g.Go(func() error { return f(ctx, lo, hi) })
	}
	return g.Wait()
}
