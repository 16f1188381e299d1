package ppocr

import (
	"image"
	"image/color"
	"math"

	"golang.org/x/image/draw"
	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
)

// Input geometry of the recogniser and the direction classifier.
const (
	// Height is the input height of the recogniser and the classifier.
	Height = 48
	// ClsWidth is the classifier's input width: lines are capped at it and
	// zero-padded to it.
	ClsWidth = 192
	// MinRecWidth is the narrowest recogniser input PaddleOCR pads to
	// (48 × 320/48).
	MinRecWidth = 320
)

// RenderLine draws text in Go Regular at size px, black on white, with a
// margin of an eighth of the font size around it: a tight crop, as PP-OCR's
// detector gives the recogniser. (With a quarter of the font size on the
// left, the recogniser reads a leading space before some lines.)
func RenderLine(text string, size float64) (*image.RGBA, error) {
	f, err := opentype.Parse(goregular.TTF)
	if err != nil {
		return nil, err
	}
	face, err := opentype.NewFace(f, &opentype.FaceOptions{Size: size, DPI: 72, Hinting: font.HintingFull})
	if err != nil {
		return nil, err
	}
	defer face.Close()
	m := face.Metrics()
	margin := int(math.Ceil(size / 8))
	w := font.MeasureString(face, text).Ceil() + 2*margin
	h := (m.Ascent + m.Descent).Ceil() + 2*margin
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
	d := font.Drawer{Dst: img, Src: image.NewUniform(color.Black), Face: face, Dot: fixed.P(margin, margin+m.Ascent.Ceil())}
	d.DrawString(text)
	return img, nil
}

// PageLine is one line of text on a page drawn by [RenderPage].
type PageLine struct {
	Text string
	// At is where the top-left corner of the rendered line goes.
	At image.Point
	// Size is the font size in pixels (0 means 36).
	Size float64
	// UpsideDown turns the rendered line by 180° before it is pasted.
	UpsideDown bool
}

// RenderPage returns a white width × height page with lines rendered by
// [RenderLine] pasted on it (clipped to the page).
func RenderPage(width, height int, lines ...PageLine) (*image.RGBA, error) {
	page := image.NewRGBA(image.Rect(0, 0, width, height))
	draw.Draw(page, page.Bounds(), image.NewUniform(color.White), image.Point{}, draw.Src)
	for _, l := range lines {
		size := l.Size
		if size == 0 {
			size = 36
		}
		img, err := RenderLine(l.Text, size)
		if err != nil {
			return nil, err
		}
		if l.UpsideDown {
			img = Rotate180(img)
		}
		draw.Draw(page, img.Bounds().Add(l.At), img, image.Point{}, draw.Src)
	}
	return page, nil
}

// Rotate180 returns a copy of img turned upside down, with its origin at
// (0, 0).
func Rotate180(img image.Image) *image.RGBA {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	out := image.NewRGBA(image.Rect(0, 0, w, h))
	if src, ok := img.(*image.RGBA); ok {
		for y := range h {
			from := src.Pix[src.PixOffset(b.Min.X, b.Min.Y+y):]
			to := out.Pix[out.PixOffset(0, h-1-y):]
			for x := range w {
				copy(to[4*(w-1-x):4*(w-x)], from[4*x:4*x+4])
			}
		}
		return out
	}
	for y := range h {
		for x := range w {
			out.Set(w-1-x, h-1-y, img.At(b.Min.X+x, b.Min.Y+y))
		}
	}
	return out
}

// Crop returns the part of img inside r (clipped to img), sharing img's
// pixels when img can make sub-images (as every image type of package
// image can), otherwise as a copy.
func Crop(img image.Image, r image.Rectangle) image.Image {
	r = r.Intersect(img.Bounds())
	if s, ok := img.(interface {
		SubImage(image.Rectangle) image.Image
	}); ok {
		return s.SubImage(r)
	}
	out := image.NewRGBA(image.Rect(0, 0, r.Dx(), r.Dy()))
	draw.Draw(out, out.Bounds(), img, r.Min, draw.Src)
	return out
}

// LineWidth is PaddleOCR's width for a line of size w × h scaled to height
// 48 with its aspect ratio kept: ceil(48·w/h).
func LineWidth(w, h int) int {
	return int(math.Ceil(Height * float64(w) / float64(h)))
}

// NormalizeLine scales img to height 48 (width min(ceil(48·w/h), maxW, W),
// bilinear) and writes it into dst, a [3, 48, W] CHW plane set, as
// (x/255 − 0.5)/0.5 in B, G, R order; the columns to the right of the image
// stay as they are (zero in a fresh buffer: PaddleOCR's padding after
// normalisation). It returns the width written.
func NormalizeLine(dst []float32, W int, img image.Image, maxW int) int {
	b := img.Bounds()
	w := max(min(LineWidth(b.Dx(), b.Dy()), maxW, W), 1)
	scaled := image.NewRGBA(image.Rect(0, 0, w, Height))
	draw.BiLinear.Scale(scaled, scaled.Bounds(), img, b, draw.Src, nil)
	plane := Height * W
	for y := range Height {
		row := scaled.Pix[y*scaled.Stride:]
		for x := range w {
			p := row[4*x : 4*x+3] // R, G, B
			for c, v := range [3]uint8{p[2], p[1], p[0]} {
				dst[c*plane+y*W+x] = (float32(v)/255 - 0.5) / 0.5
			}
		}
	}
	return w
}

// RecWidth is the common input width of a recogniser batch of lines:
// ceil(48 · max(w/h over the lines, 320/48)), as PaddleOCR's resize_norm_img
// pads.
func RecWidth(lines []image.Image) int {
	maxRatio := float64(MinRecWidth) / Height
	for _, img := range lines {
		b := img.Bounds()
		maxRatio = max(maxRatio, float64(b.Dx())/float64(b.Dy()))
	}
	return int(math.Ceil(Height * maxRatio))
}

// RecBatch is the recogniser's input for lines, [N, 3, 48, W] with
// W = [RecWidth](lines): each line at height 48, right-padded with zeros.
// widths holds each line's width in columns of the batch.
func RecBatch(lines []image.Image) (data []float32, W int, widths []int32) {
	W = RecWidth(lines)
	item := 3 * Height * W
	data = make([]float32, len(lines)*item)
	widths = make([]int32, len(lines))
	for i, img := range lines {
		widths[i] = int32(NormalizeLine(data[i*item:(i+1)*item], W, img, W))
	}
	return data, W, widths
}

// ClsBatch is the direction classifier's input for lines,
// [N, 3, 48, 192]: each line at height 48, width capped at 192 and
// zero-padded to it.
func ClsBatch(lines []image.Image) []float32 {
	item := 3 * Height * ClsWidth
	data := make([]float32, len(lines)*item)
	for i, img := range lines {
		NormalizeLine(data[i*item:(i+1)*item], ClsWidth, img, ClsWidth)
	}
	return data
}
