package ppocr_test

import (
	"context"
	"errors"
	"image"
	"math"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"go.uber.org/goleak"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/examples/ocr/ppocr"
	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/tensor"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// execute loads b as model name (its version folder holding files) and runs
// one request with inputs through a new instance.
func execute(t *testing.T, b backend.Backend, name string, files fstest.MapFS, params map[string]string, inputs ...tensor.Tensor) *backend.Request {
	t.Helper()
	cfg := &modelconfig.ModelConfig{Name: name, Parameters: map[string]*modelconfig.ModelParameter{}}
	for k, v := range params {
		cfg.Parameters[k] = &modelconfig.ModelParameter{StringValue: v}
	}
	fsys := fstest.MapFS{}
	for f, data := range files {
		fsys["1/"+f] = data
	}
	ctx := context.Background()
	m, err := b.Load(ctx, &backend.ModelSpec{Name: name, Version: 1, Config: cfg, FS: fsys})
	if err != nil {
		t.Fatalf("Load %s: %v", name, err)
	}
	defer m.Close()
	inst, err := m.NewInstance(ctx, backend.InstanceSpec{Name: name + "_0"})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close()
	r := &backend.Request{ID: "test", Inputs: inputs, BatchSize: 1}
	if err := inst.Execute(ctx, backend.NewBatch(false, r)); err != nil {
		t.Fatalf("Execute %s: %v", name, err)
	}
	return r
}

// of wraps values as a tensor, failing the test on error.
func of[T tensor.Element](t *testing.T, name string, shape tensor.Shape, values []T) tensor.Tensor {
	t.Helper()
	x, err := tensor.From(name, shape, values)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// out returns the request's output name as a []T after checking its shape.
func out[T tensor.Element](t *testing.T, r *backend.Request, name string, shape tensor.Shape) []T {
	t.Helper()
	if err := r.Err(); err != nil {
		t.Fatalf("request failed: %v", err)
	}
	for _, o := range r.Outputs() {
		if o.Name == name {
			if !o.Shape.Equal(shape) {
				t.Fatalf("output %s has shape %v, want %v", name, o.Shape, shape)
			}
			v, err := tensor.View[T](o)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}
	}
	t.Fatalf("no output %s", name)
	return nil
}

func TestDetSize(t *testing.T) {
	for _, c := range []struct{ w, h, dw, dh int }{
		{800, 400, 800, 384}, // 400/32 = 12.5 rounds to even, as Python's round
		{640, 320, 640, 320},
		{2000, 1000, 960, 480},
		{1000, 3000, 320, 960},
		{10, 10, 32, 32},
		{1, 100, 32, 96},
	} {
		if dw, dh := ppocr.DetSize(c.w, c.h); dw != c.dw || dh != c.dh {
			t.Errorf("DetSize(%d, %d) = %d, %d; want %d, %d", c.w, c.h, dw, dh, c.dw, c.dh)
		}
	}
}

func TestDetPreprocess(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 64, 32))
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = 255, 128, 0, 255 // R, G, B
	}
	data, w, h := ppocr.DetPreprocess(img)
	if w != 64 || h != 32 || len(data) != 3*64*32 {
		t.Fatalf("got %d values for %d × %d, want 3 × 64 × 32", len(data), w, h)
	}
	// Planes B, G, R, each (x/255 − mean)/std with the ImageNet values in
	// that order.
	for c, want := range []float64{(0 - 0.485) / 0.229, (128.0/255 - 0.456) / 0.224, (1 - 0.406) / 0.225} {
		if got := float64(data[c*w*h+100]); math.Abs(got-want) > 1e-5 {
			t.Errorf("plane %d: %v, want %v", c, got, want)
		}
	}
}

// probMap is a w × h probability map with rectangles r filled with p.
func probMap(w, h int, fill ...struct {
	r image.Rectangle
	p float32
}) []float32 {
	m := make([]float32, w*h)
	for _, f := range fill {
		for y := f.r.Min.Y; y < f.r.Max.Y; y++ {
			for x := f.r.Min.X; x < f.r.Max.X; x++ {
				m[y*w+x] = f.p
			}
		}
	}
	return m
}

type fill = struct {
	r image.Rectangle
	p float32
}

func TestDBPostprocess(t *testing.T) {
	prob := probMap(100, 50,
		fill{image.Rect(20, 30, 80, 35), 0.8},  // second line
		fill{image.Rect(10, 10, 60, 15), 0.9},  // first line
		fill{image.Rect(90, 40, 92, 42), 1},    // 2 × 2: too small
		fill{image.Rect(70, 5, 95, 20), 0.35},  // above 0.3, mean below 0.6
		fill{image.Rect(0, 45, 100, 46), 0.99}, // 1 pixel high
	)
	// The image is twice the map's size and has its origin at (5, 7).
	bounds := image.Rect(5, 7, 205, 107)
	got := ppocr.DBPostprocess(prob, 100, 50, bounds)
	// Unclipped by d = area·1.5/perimeter: 50 × 5 → d = 3.41, 60 × 5 → 3.46;
	// then scaled by 2, rounded and moved to the origin.
	want := []image.Rectangle{
		image.Rect(13, 13, 127, 37).Add(bounds.Min),
		image.Rect(33, 53, 167, 77).Add(bounds.Min),
	}
	if !slices.Equal(got, want) {
		t.Errorf("boxes %v, want %v", got, want)
	}

	// Unclipping past the edges is clipped to the image.
	edge := ppocr.DBPostprocess(probMap(40, 20, fill{image.Rect(0, 0, 40, 20), 1}), 40, 20, image.Rect(0, 0, 40, 20))
	if want := []image.Rectangle{image.Rect(0, 0, 40, 20)}; !slices.Equal(edge, want) {
		t.Errorf("full-map box %v, want %v", edge, want)
	}
	if got := ppocr.DBPostprocess(make([]float32, 100), 10, 10, image.Rect(0, 0, 10, 10)); len(got) != 0 {
		t.Errorf("empty map gave boxes %v", got)
	}
	if got := ppocr.DBPostprocess(make([]float32, 99), 10, 10, image.Rect(0, 0, 10, 10)); got != nil {
		t.Errorf("a map of the wrong size gave boxes %v", got)
	}
}

func TestDBPostprocessOrder(t *testing.T) {
	// Two words of one line, the right one a little higher, and a line
	// below: left to right within the line, then down.
	prob := probMap(200, 100,
		fill{image.Rect(120, 20, 180, 30), 0.9},
		fill{image.Rect(10, 24, 100, 34), 0.9},
		fill{image.Rect(10, 60, 100, 70), 0.9},
	)
	got := ppocr.DBPostprocess(prob, 200, 100, image.Rect(0, 0, 200, 100))
	if len(got) != 3 || got[0].Min.X > 20 || got[1].Min.X < 100 || got[2].Min.Y < 50 {
		t.Errorf("boxes %v: want the left word, the right word, then the line below", got)
	}
}

func TestCTCDecode(t *testing.T) {
	keys := []string{"a", "b", "c"} // classes: blank, a, b, c, space
	const C = 5
	steps := []struct {
		class int
		p     float32
	}{{1, 0.9}, {1, 0.8}, {0, 0.99}, {1, 0.7}, {2, 0.6}, {4, 0.5}, {4, 0.9}, {3, 1}}
	probs := make([]float32, len(steps)*C)
	for i, s := range steps {
		for c := range C {
			probs[i*C+c] = (1 - s.p) / (C - 1)
		}
		probs[i*C+s.class] = s.p
	}
	text, conf, err := ppocr.CTCDecode(probs, len(steps), C, keys)
	if err != nil {
		t.Fatal(err)
	}
	// Kept steps: 0 (a), 3 (a), 4 (b), 5 (space), 7 (c).
	if want := float32(0.9+0.7+0.6+0.5+1) / 5; text != "aab c" || math.Abs(float64(conf-want)) > 1e-6 {
		t.Errorf("got %q (%v), want %q (%v)", text, conf, "aab c", want)
	}
	if text, conf, err := ppocr.CTCDecode(make([]float32, 2*C), 2, C, keys); err != nil || text != "" || conf != 0 {
		t.Errorf("all blanks: %q, %v, %v; want empty, 0", text, conf, err)
	}
	if _, _, err := ppocr.CTCDecode(probs, 3, C, keys); err == nil {
		t.Error("wrong T: no error")
	}
	if _, _, err := ppocr.CTCDecode(probs[:4*len(steps)], len(steps), 4, keys); err == nil {
		t.Error("wrong class count: no error")
	}
}

func TestParseKeys(t *testing.T) {
	for in, want := range map[string][]string{
		"a\nb\nc":      {"a", "b", "c"},
		"a\nb\nc\n":    {"a", "b", "c"},
		"a\r\nb\r\n":   {"a", "b"},
		"'\n中\n\u00e9": {"'", "中", "é"},
	} {
		if got := ppocr.ParseKeys([]byte(in)); !slices.Equal(got, want) {
			t.Errorf("ParseKeys(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestImageTensor(t *testing.T) {
	img, err := ppocr.RenderLine("Go", 20)
	if err != nil {
		t.Fatal(err)
	}
	x, err := ppocr.ImageTensor("IMAGE", img.SubImage(image.Rect(2, 3, 12, 9)))
	if err != nil {
		t.Fatal(err)
	}
	if want := (tensor.Shape{6, 10, 3}); x.DataType != tensor.Uint8 || !x.Shape.Equal(want) {
		t.Fatalf("tensor %v %v, want UINT8 %v", x.DataType, x.Shape, want)
	}
	back, err := ppocr.TensorImage(x)
	if err != nil {
		t.Fatal(err)
	}
	for y := range 6 {
		for x := range 10 {
			if got, want := back.RGBAAt(x, y), img.RGBAAt(x+2, y+3); got != want {
				t.Fatalf("pixel (%d, %d): %v, want %v", x, y, got, want)
			}
		}
	}
}

func TestRotate180(t *testing.T) {
	img, err := ppocr.RenderLine("Ab", 24)
	if err != nil {
		t.Fatal(err)
	}
	sub := img.SubImage(image.Rect(1, 2, 20, 25))
	r := ppocr.Rotate180(sub)
	b := sub.Bounds()
	if r.Bounds() != image.Rect(0, 0, b.Dx(), b.Dy()) {
		t.Fatalf("bounds %v", r.Bounds())
	}
	for y := range b.Dy() {
		for x := range b.Dx() {
			if got, want := r.RGBAAt(x, y), img.RGBAAt(b.Max.X-1-x, b.Max.Y-1-y); got != want {
				t.Fatalf("pixel (%d, %d): %v, want %v", x, y, got, want)
			}
		}
	}
	if twice := ppocr.Rotate180(r); !slices.Equal(twice.Pix, ppocr.Rotate180(ppocr.Rotate180(sub)).Pix) {
		t.Error("rotating twice is not the identity")
	}
}

func TestRecBatch(t *testing.T) {
	short, _ := ppocr.RenderLine("Go", 48)
	long, _ := ppocr.RenderLine("Triton Inference Server in Go, 2025", 48)
	data, W, widths := ppocr.RecBatch([]image.Image{short})
	if W != ppocr.MinRecWidth || len(data) != 3*48*W || len(widths) != 1 || int(widths[0]) != ppocr.LineWidth(short.Bounds().Dx(), short.Bounds().Dy()) {
		t.Errorf("one short line: W %d, widths %v; want W 320 and its own width", W, widths)
	}
	data, W, widths = ppocr.RecBatch([]image.Image{short, long})
	if W <= ppocr.MinRecWidth || int(widths[1]) != W || len(data) != 2*3*48*W {
		t.Errorf("short and long line: W %d, widths %v", W, widths)
	}
	for c := range 3 { // padding after the short line stays zero
		if v := data[c*48*W+10*W+int(widths[0])]; v != 0 {
			t.Errorf("plane %d: padding is %v", c, v)
		}
	}
	if cls := ppocr.ClsBatch([]image.Image{long}); len(cls) != 3*48*ppocr.ClsWidth {
		t.Errorf("ClsBatch: %d values", len(cls))
	}
}

// TestOrient runs ppocr_orient on two lines of a [2, 3, 48, 5] batch, the
// first 3 wide and upside down, the second 5 wide and upright.
func TestOrient(t *testing.T) {
	const W = 5
	item := 3 * 48 * W
	rec := make([]float32, 2*item)
	for i := range rec {
		rec[i] = float32(i)
	}
	orig := slices.Clone(rec)
	r := execute(t, ppocr.OrientBackend(), "ppocr_orient", nil, nil,
		of(t, "REC_INPUT", tensor.Shape{2, 3, 48, W}, rec),
		of(t, "WIDTHS", tensor.Shape{2}, []int32{3, 5}),
		of(t, "CLS_PROB", tensor.Shape{2, 2}, []float32{0.05, 0.95, 0.5, 0.5}))
	got := out[float32](t, r, "REC_READY", tensor.Shape{2, 3, 48, W})
	if !slices.Equal(rec, orig) {
		t.Fatal("ppocr_orient wrote into its input")
	}
	at := func(s []float32, n, c, y, x int) float32 { return s[n*item+c*48*W+y*W+x] }
	for c := range 3 {
		for y := range 48 {
			for x := range W {
				want := at(orig, 0, c, y, x) // padding: unchanged
				if x < 3 {
					want = at(orig, 0, c, 47-y, 2-x)
				}
				if g := at(got, 0, c, y, x); g != want {
					t.Fatalf("line 0 [%d, %d, %d] = %v, want %v", c, y, x, g, want)
				}
				if g, w := at(got, 1, c, y, x), at(orig, 1, c, y, x); g != w {
					t.Fatalf("line 1 (upright) [%d, %d, %d] = %v, want %v", c, y, x, g, w)
				}
			}
		}
	}
}

func TestDecode(t *testing.T) {
	keys := fstest.MapFS{"dict.txt": {Data: []byte("x\ny\n")}} // 4 classes
	probs := []float32{
		0, 1, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, // "xy"
		1, 0, 0, 0, 0, 0, 0, 0.5, 1, 0, 0, 0, // " "
	}
	r := execute(t, ppocr.DecodeBackend(), "ppocr_decode", keys, map[string]string{"keys_file": "dict.txt"},
		of(t, "REC_PROB", tensor.Shape{2, 3, 4}, probs))
	conf := out[float32](t, r, "CONF", tensor.Shape{2})
	var text []string
	for _, o := range r.Outputs() {
		if o.Name == "TEXT" {
			text, _ = tensor.Strings(o)
		}
	}
	if !slices.Equal(text, []string{"xy", " "}) || !slices.Equal(conf, []float32{1, 0.5}) {
		t.Errorf("TEXT %q CONF %v, want [xy  ] [1 0.5]", text, conf)
	}

	_, err := ppocr.DecodeBackend().Load(context.Background(), &backend.ModelSpec{
		Name: "dec", Version: 1, Config: &modelconfig.ModelConfig{}, FS: fstest.MapFS{},
	})
	if err == nil || !strings.Contains(err.Error(), `model "dec"`) || !strings.Contains(err.Error(), ppocr.KeysFile) {
		t.Errorf("Load without a dictionary: %v; want an error naming the model and %s", err, ppocr.KeysFile)
	}
}

func TestBLSNeedsCaller(t *testing.T) {
	_, err := ppocr.BLSBackend().Load(context.Background(), &backend.ModelSpec{
		Name: "ppocr_bls", Version: 1, Config: &modelconfig.ModelConfig{}, FS: fstest.MapFS{},
	})
	if err == nil || !strings.Contains(err.Error(), "Caller") {
		t.Errorf("Load without a Caller: %v", err)
	}
}

// TestBadInput checks that each Go model rejects malformed inputs with an
// error that wraps backend.ErrInvalidInput and names the model and the
// tensor.
func TestBadInput(t *testing.T) {
	img := of(t, "IMAGE", tensor.Shape{4, 4, 3}, make([]uint8, 48))
	prob := of(t, "DET_PROB", tensor.Shape{1, 1, 4, 4}, make([]float32, 16))
	rec := of(t, "REC_INPUT", tensor.Shape{1, 3, 48, 4}, make([]float32, 3*48*4))
	widths := of(t, "WIDTHS", tensor.Shape{1}, []int32{4})
	cls := of(t, "CLS_PROB", tensor.Shape{1, 2}, []float32{0, 1})
	keys := fstest.MapFS{ppocr.KeysFile: {Data: []byte("a\nb\n")}}
	for _, c := range []struct {
		name, model, tensor string
		b                   backend.Backend
		inputs              []tensor.Tensor
	}{
		{"image as FP32", "ppocr_det_pre", "IMAGE", ppocr.DetPreBackend(), []tensor.Tensor{of(t, "IMAGE", tensor.Shape{4, 4, 3}, make([]float32, 48))}},
		{"image with 4 channels", "ppocr_det_pre", "IMAGE", ppocr.DetPreBackend(), []tensor.Tensor{of(t, "IMAGE", tensor.Shape{4, 4, 4}, make([]uint8, 64))}},
		{"empty image", "ppocr_det_pre", "IMAGE", ppocr.DetPreBackend(), []tensor.Tensor{of(t, "IMAGE", tensor.Shape{0, 4, 3}, []uint8{})}},
		{"no image", "ppocr_crop", "IMAGE", ppocr.CropBackend(), []tensor.Tensor{prob}},
		{"prob map with 2 channels", "ppocr_crop", "DET_PROB", ppocr.CropBackend(), []tensor.Tensor{img, of(t, "DET_PROB", tensor.Shape{1, 2, 4, 2}, make([]float32, 16))}},
		{"short data", "ppocr_crop", "DET_PROB", ppocr.CropBackend(), []tensor.Tensor{img, {Name: "DET_PROB", DataType: tensor.FP32, Shape: tensor.Shape{1, 1, 4, 4}, Data: make([]byte, 60)}}},
		{"widths of another batch", "ppocr_orient", "WIDTHS", ppocr.OrientBackend(), []tensor.Tensor{rec, of(t, "WIDTHS", tensor.Shape{2}, []int32{4, 4}), cls}},
		{"width past the input", "ppocr_orient", "WIDTHS", ppocr.OrientBackend(), []tensor.Tensor{rec, of(t, "WIDTHS", tensor.Shape{1}, []int32{5}), cls}},
		{"cls of 3 classes", "ppocr_orient", "CLS_PROB", ppocr.OrientBackend(), []tensor.Tensor{rec, widths, of(t, "CLS_PROB", tensor.Shape{1, 3}, []float32{0, 1, 0})}},
		{"rec with another height", "ppocr_orient", "REC_INPUT", ppocr.OrientBackend(), []tensor.Tensor{of(t, "REC_INPUT", tensor.Shape{1, 3, 32, 4}, make([]float32, 3*32*4)), widths, cls}},
		{"classes of another dictionary", "ppocr_decode", "REC_PROB", ppocr.DecodeBackend(), []tensor.Tensor{of(t, "REC_PROB", tensor.Shape{1, 2, 5}, make([]float32, 10))}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := execute(t, c.b, c.model, keys, nil, c.inputs...)
			err := r.Err()
			if !errors.Is(err, backend.ErrInvalidInput) {
				t.Fatalf("error %v, want one wrapping backend.ErrInvalidInput", err)
			}
			if msg := err.Error(); !strings.Contains(msg, `"`+c.model+`"`) || !strings.Contains(msg, c.tensor) {
				t.Errorf("error %q does not name model %s and tensor %s", msg, c.model, c.tensor)
			}
			t.Log(err)
		})
	}
}

// TestCropNoText: a blank probability map gives no lines, as [0, ...]
// tensors.
func TestCropNoText(t *testing.T) {
	r := execute(t, ppocr.CropBackend(), "ppocr_crop", nil, nil,
		of(t, "IMAGE", tensor.Shape{64, 64, 3}, make([]uint8, 64*64*3)),
		of(t, "DET_PROB", tensor.Shape{1, 1, 64, 64}, make([]float32, 64*64)))
	out[float32](t, r, "CLS_INPUT", tensor.Shape{0, 3, 48, 192})
	out[float32](t, r, "REC_INPUT", tensor.Shape{0, 3, 48, 320})
	out[int32](t, r, "WIDTHS", tensor.Shape{0})
	out[int32](t, r, "BOXES", tensor.Shape{0, 4})
}

// TestCrop: one line of text on a page and a probability map marking it
// give one box around it and the line's classifier and recogniser inputs.
func TestCrop(t *testing.T) {
	page, err := ppocr.RenderPage(200, 100, ppocr.PageLine{Text: "Crop me", At: image.Pt(20, 30), Size: 24})
	if err != nil {
		t.Fatal(err)
	}
	img, err := ppocr.ImageTensor("IMAGE", page)
	if err != nil {
		t.Fatal(err)
	}
	// The map is 100 × 50, half the page: the kernel of the line.
	prob := probMap(100, 50, fill{image.Rect(14, 19, 58, 27), 0.9})
	r := execute(t, ppocr.CropBackend(), "ppocr_crop", nil, nil, img, of(t, "DET_PROB", tensor.Shape{1, 1, 50, 100}, prob))
	boxes := out[int32](t, r, "BOXES", tensor.Shape{1, 4})
	box := image.Rect(int(boxes[0]), int(boxes[1]), int(boxes[2]), int(boxes[3]))
	if want := image.Rect(20, 30, 125, 63); !box.Overlaps(want) || box.Dx() < 80 || box.Dy() < 20 {
		t.Errorf("box %v, want about %v", box, want)
	}
	widths := out[int32](t, r, "WIDTHS", tensor.Shape{1})
	if want := ppocr.LineWidth(box.Dx(), box.Dy()); int(widths[0]) != want {
		t.Errorf("width %d, want %d", widths[0], want)
	}
	out[float32](t, r, "CLS_INPUT", tensor.Shape{1, 3, 48, 192})
	out[float32](t, r, "REC_INPUT", tensor.Shape{1, 3, 48, 320})
}
