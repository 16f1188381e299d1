package ppocr

import (
	"context"
	"fmt"
	"image"
	"slices"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/tensor"
)

// ClsThresh is the probability of "180°" above which a line is turned
// upside down before recognition (PaddleOCR's cls_thresh).
const ClsThresh = 0.9

// Backends returns the pipeline's Go backends keyed by their `backend:`
// names: ppocr_det_pre ([DetPreBackend]), ppocr_crop ([CropBackend]),
// ppocr_orient ([OrientBackend]), ppocr_decode ([DecodeBackend]) and
// ppocr_bls ([BLSBackend]).
func Backends() map[string]backend.Backend {
	return map[string]backend.Backend{
		"ppocr_det_pre": DetPreBackend(),
		"ppocr_crop":    CropBackend(),
		"ppocr_orient":  OrientBackend(),
		"ppocr_decode":  DecodeBackend(),
		"ppocr_bls":     BLSBackend(),
	}
}

// requestFunc runs one request of a loaded Go model.
type requestFunc func(ctx context.Context, r *backend.Request) error

// goBackend is a Go backend whose models run each request with the
// requestFunc it prepares from the model's spec.
type goBackend func(spec *backend.ModelSpec) (requestFunc, error)

// model is a loaded Go model. It is stateless after Load, so it is also
// its own instance, and several instances share it.
type model struct {
	name string
	run  requestFunc
}

var (
	_ backend.Backend  = goBackend(nil)
	_ backend.Model    = (*model)(nil)
	_ backend.Instance = (*model)(nil)
)

// Load prepares the model's request function.
func (f goBackend) Load(_ context.Context, spec *backend.ModelSpec) (backend.Model, error) {
	run, err := f(spec)
	if err != nil {
		return nil, fmt.Errorf("model %q: %w", spec.Name, err)
	}
	return &model{name: spec.Name, run: run}, nil
}

// NewInstance returns the model itself: instances share it.
func (m *model) NewInstance(context.Context, backend.InstanceSpec) (backend.Instance, error) {
	return m, nil
}

// Execute runs the requests one by one; each fails alone.
func (m *model) Execute(ctx context.Context, b *backend.Batch) error {
	for _, r := range b.Requests {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := m.run(ctx, r); err != nil {
			r.Fail(fmt.Errorf("model %q: %w", m.name, err))
		}
	}
	return nil
}

// Close does nothing: the model holds no resources.
func (m *model) Close() error { return nil }

// stateless adapts a request function that needs nothing from the spec.
func stateless(f requestFunc) goBackend {
	return func(*backend.ModelSpec) (requestFunc, error) { return f, nil }
}

// setOutput sets the output name of shape shape holding values (no copy).
func setOutput[T tensor.Element](r *backend.Request, name string, shape tensor.Shape, values []T) error {
	t, err := tensor.From(name, shape, values)
	if err != nil {
		return err
	}
	r.SetOutput(t)
	return nil
}

// DetPreBackend returns the ppocr_det_pre backend: input IMAGE, UINT8
// [H, W, 3] (RGB, see [ImageTensor]); output DET_INPUT, FP32
// [1, 3, H', W'], the detector's input made by [DetPreprocess].
func DetPreBackend() backend.Backend {
	return stateless(func(_ context.Context, r *backend.Request) error {
		img, err := imageInput(r)
		if err != nil {
			return err
		}
		data, w, h := DetPreprocess(img)
		return setOutput(r, "DET_INPUT", tensor.Shape{1, 3, int64(h), int64(w)}, data)
	})
}

// imageInput reads the request's IMAGE input.
func imageInput(r *backend.Request) (*image.RGBA, error) {
	t, ok := r.Input("IMAGE")
	if !ok {
		return nil, fmt.Errorf("input %q is missing: %w", "IMAGE", backend.ErrInvalidInput)
	}
	return TensorImage(t)
}

// CropBackend returns the ppocr_crop backend. Inputs: IMAGE, UINT8
// [H, W, 3], and DET_PROB, FP32 [1, 1, H', W'], the detector's output for
// it (the scale between the two comes from their shapes). It finds the
// text boxes with [DBPostprocess], crops each line from IMAGE and outputs,
// for the N lines in box order: CLS_INPUT, FP32 [N, 3, 48, 192]
// ([ClsBatch]); REC_INPUT, FP32 [N, 3, 48, W] ([RecBatch]); WIDTHS, INT32
// [N], each line's width in REC_INPUT; and BOXES, INT32 [N, 4], each box as
// x0, y0, x1, y1 (x1 and y1 exclusive) in IMAGE's pixels. With no text,
// N is 0.
func CropBackend() backend.Backend {
	return stateless(func(_ context.Context, r *backend.Request) error {
		img, err := imageInput(r)
		if err != nil {
			return err
		}
		pt, err := input(r, "DET_PROB", tensor.FP32, tensor.Shape{1, 1, -1, -1})
		if err != nil {
			return err
		}
		prob, err := values[float32](pt)
		if err != nil {
			return err
		}
		boxes := DBPostprocess(prob, int(pt.Shape[3]), int(pt.Shape[2]), img.Bounds())
		lines := make([]image.Image, len(boxes))
		for i, b := range boxes {
			lines[i] = Crop(img, b)
		}
		n := int64(len(lines))
		rec, W, widths := RecBatch(lines)
		if err := setOutput(r, "CLS_INPUT", tensor.Shape{n, 3, Height, ClsWidth}, ClsBatch(lines)); err != nil {
			return err
		}
		if err := setOutput(r, "REC_INPUT", tensor.Shape{n, 3, Height, int64(W)}, rec); err != nil {
			return err
		}
		if err := setOutput(r, "WIDTHS", tensor.Shape{n}, widths); err != nil {
			return err
		}
		return setOutput(r, "BOXES", tensor.Shape{n, 4}, boxData(boxes))
	})
}

// boxData flattens boxes into x0, y0, x1, y1 rows.
func boxData(boxes []image.Rectangle) []int32 {
	data := make([]int32, 0, 4*len(boxes))
	for _, b := range boxes {
		data = append(data, int32(b.Min.X), int32(b.Min.Y), int32(b.Max.X), int32(b.Max.Y))
	}
	return data
}

// OrientBackend returns the ppocr_orient backend. Inputs: REC_INPUT, FP32
// [N, 3, 48, W], and WIDTHS, INT32 [N], as [CropBackend] makes them, and
// CLS_PROB, FP32 [N, 2], the classifier's output (P(0°), P(180°)). Output:
// REC_READY, a copy of REC_INPUT in which each line whose P(180°) exceeds
// [ClsThresh] is turned by 180° with [RotateLine].
func OrientBackend() backend.Backend {
	return stateless(func(_ context.Context, r *backend.Request) error {
		rt, err := input(r, "REC_INPUT", tensor.FP32, tensor.Shape{-1, 3, Height, -1})
		if err != nil {
			return err
		}
		wt, err := input(r, "WIDTHS", tensor.Int32, tensor.Shape{rt.Shape[0]})
		if err != nil {
			return err
		}
		ct, err := input(r, "CLS_PROB", tensor.FP32, tensor.Shape{rt.Shape[0], 2})
		if err != nil {
			return err
		}
		rec, err := values[float32](rt)
		if err != nil {
			return err
		}
		widths, err := values[int32](wt)
		if err != nil {
			return err
		}
		cls, err := values[float32](ct)
		if err != nil {
			return err
		}
		W := int(rt.Shape[3])
		out := slices.Clone(rec) // inputs are read-only
		item := 3 * Height * W
		for i, w := range widths {
			if w < 0 || int(w) > W {
				return fmt.Errorf("WIDTHS[%d] is %d, outside REC_INPUT's width [0, %d]: %w", i, w, W, backend.ErrInvalidInput)
			}
			if cls[2*i+1] > ClsThresh {
				RotateLine(out[i*item:(i+1)*item], W, int(w))
			}
		}
		return setOutput(r, "REC_READY", rt.Shape.Clone(), out)
	})
}

// RotateLine turns a line of a recogniser batch by 180° in place: line is
// a [3, 48, W] CHW plane set, and the columns [0, width) of every plane are
// reversed top to bottom and left to right, leaving the padding to their
// right as it is.
func RotateLine(line []float32, W, width int) {
	for c := range 3 {
		plane := line[c*Height*W : (c+1)*Height*W]
		for y := range Height / 2 { // Height is even: rows pair up
			top, bottom := plane[y*W:y*W+width], plane[(Height-1-y)*W:(Height-1-y)*W+width]
			for x := range width {
				top[x], bottom[width-1-x] = bottom[width-1-x], top[x]
			}
		}
	}
}

// DecodeBackend returns the ppocr_decode backend. Input: REC_PROB, FP32
// [N, T, C], the recogniser's output; outputs: TEXT, BYTES [N], each line
// decoded by [CTCDecode], and CONF, FP32 [N], its confidence. The
// dictionary is read when the model loads, from the file named by the
// config parameter "keys_file" (default [KeysFile]) in the model's version
// folder; C must be its number of entries + 2.
func DecodeBackend() backend.Backend {
	return goBackend(func(spec *backend.ModelSpec) (requestFunc, error) {
		name := KeysFile
		if p, ok := spec.Parameter("keys_file"); ok && p != "" {
			name = p
		}
		fsys, err := spec.VersionFS()
		if err != nil {
			return nil, err
		}
		keys, err := ReadKeysFS(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("reading the dictionary (parameter keys_file): %w", err)
		}
		classes := int64(len(keys) + 2)
		return func(_ context.Context, r *backend.Request) error {
			pt, err := input(r, "REC_PROB", tensor.FP32, tensor.Shape{-1, -1, -1})
			if err != nil {
				return err
			}
			if pt.Shape[2] != classes {
				return fmt.Errorf("tensor %q has %d classes (shape %v), want %d: the %d entries of %s, the blank and the space: %w",
					pt.Name, pt.Shape[2], pt.Shape, classes, len(keys), name, backend.ErrInvalidInput)
			}
			probs, err := values[float32](pt)
			if err != nil {
				return err
			}
			text, conf, err := decodeLines(probs, int(pt.Shape[0]), int(pt.Shape[1]), keys)
			if err != nil {
				return err
			}
			t, err := tensor.FromStrings("TEXT", tensor.Shape{pt.Shape[0]}, text)
			if err != nil {
				return err
			}
			r.SetOutput(t)
			return setOutput(r, "CONF", tensor.Shape{pt.Shape[0]}, conf)
		}, nil
	})
}

// decodeLines decodes n lines of recogniser output, probs being
// [n, T, len(keys)+2].
func decodeLines(probs []float32, n, T int, keys []string) (text []string, conf []float32, err error) {
	C := len(keys) + 2
	text, conf = make([]string, n), make([]float32, n)
	for i := range n {
		text[i], conf[i], err = CTCDecode(probs[i*T*C:(i+1)*T*C], T, C, keys)
		if err != nil {
			return nil, nil, err
		}
	}
	return text, conf, nil
}
