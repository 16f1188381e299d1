package ppocr

import (
	"image"
	"math"
	"slices"

	"golang.org/x/image/draw"
)

// Detection parameters, PaddleOCR's defaults for PP-OCRv4.
const (
	// DetLimit is the longest side of the detector's input (DetResizeForTest
	// with limit_type "max"); images are scaled down to it, never up.
	DetLimit = 960
	// DetThresh binarises the probability map.
	DetThresh = 0.3
	// BoxThresh is the lowest mean probability inside a kept box.
	BoxThresh = 0.6
	// UnclipRatio grows each box by area·UnclipRatio/perimeter on every
	// side: the detector marks shrunk text kernels.
	UnclipRatio = 1.5
)

// detMean and detStd normalise the detector's input planes, in the order
// B, G, R: PaddleOCR applies the ImageNet values to OpenCV's BGR image as
// stored.
var (
	detMean = [3]float32{0.485, 0.456, 0.406}
	detStd  = [3]float32{0.229, 0.224, 0.225}
)

// DetSize is the detector's input size for an image of w × h: scaled so
// that the longer side is at most [DetLimit], then each side rounded to a
// multiple of 32 (at least 32), as PaddleOCR's DetResizeForTest does.
func DetSize(w, h int) (dw, dh int) {
	ratio := 1.0
	if m := max(w, h); m > DetLimit {
		ratio = float64(DetLimit) / float64(m)
	}
	round32 := func(n int) int {
		n = int(float64(n) * ratio)
		return max(int(math.RoundToEven(float64(n)/32))*32, 32)
	}
	return round32(w), round32(h)
}

// DetPreprocess is the detector's input for img, [1, 3, h, w] with
// (w, h) = [DetSize] of img's size: img scaled (bilinear) and normalised as
// (x/255 − mean)/std, planes in B, G, R order.
func DetPreprocess(img image.Image) (data []float32, w, h int) {
	b := img.Bounds()
	w, h = DetSize(b.Dx(), b.Dy())
	scaled, ok := img.(*image.RGBA)
	if !ok || b.Dx() != w || b.Dy() != h {
		scaled = image.NewRGBA(image.Rect(0, 0, w, h))
		draw.BiLinear.Scale(scaled, scaled.Bounds(), img, b, draw.Src, nil)
	}
	plane := w * h
	data = make([]float32, 3*plane)
	var scale, shift [3]float32 // (x/255 − mean)/std = x·scale + shift
	for c := range 3 {
		scale[c] = 1 / (255 * detStd[c])
		shift[c] = -detMean[c] / detStd[c]
	}
	sb := scaled.Bounds()
	for y := range h {
		row := scaled.Pix[scaled.PixOffset(sb.Min.X, sb.Min.Y+y):]
		for x := range w {
			p := row[4*x : 4*x+3] // R, G, B
			i := y*w + x
			data[i] = float32(p[2])*scale[0] + shift[0]
			data[plane+i] = float32(p[1])*scale[1] + shift[1]
			data[2*plane+i] = float32(p[0])*scale[2] + shift[2]
		}
	}
	return data, w, h
}

// maxCandidates caps the connected components DBPostprocess considers.
const maxCandidates = 1000

// DBPostprocess turns the detector's probability map prob ([h, w]
// row-major, the detector's [1, 1, h, w] output) into axis-aligned text
// boxes on the image bounds the detector's input was made from, following
// PaddleOCR's DBPostProcess with rectangles instead of rotated boxes: the
// map is binarised at [DetThresh]; each 8-connected component gives its
// bounding box, kept when it is at least 3 pixels on each side and the
// mean probability inside is at least [BoxThresh]; the box is grown by
// area·[UnclipRatio]/perimeter, scaled to bounds, clipped to it, and
// dropped when 3 pixels or less on a side. Boxes come sorted top to
// bottom, then left to right within a line (PaddleOCR's sorted_boxes).
func DBPostprocess(prob []float32, w, h int, bounds image.Rectangle) []image.Rectangle {
	if w <= 0 || h <= 0 || len(prob) != w*h {
		return nil
	}
	seen := make([]bool, len(prob))
	var stack []int
	var boxes []image.Rectangle
	sx := float64(bounds.Dx()) / float64(w)
	sy := float64(bounds.Dy()) / float64(h)
	for start, p := range prob {
		if seen[start] || p <= DetThresh {
			continue
		}
		if len(boxes) == maxCandidates {
			break
		}
		// Flood-fill the component, tracking its bounding box.
		x0, y0, x1, y1 := w, h, -1, -1
		seen[start] = true
		stack = append(stack[:0], start)
		for len(stack) > 0 {
			i := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			x, y := i%w, i/w
			x0, y0, x1, y1 = min(x0, x), min(y0, y), max(x1, x), max(y1, y)
			for ny := max(y-1, 0); ny <= min(y+1, h-1); ny++ {
				for nx := max(x-1, 0); nx <= min(x+1, w-1); nx++ {
					if j := ny*w + nx; !seen[j] && prob[j] > DetThresh {
						seen[j] = true
						stack = append(stack, j)
					}
				}
			}
		}
		bw, bh := x1+1-x0, y1+1-y0
		if min(bw, bh) < 3 {
			continue
		}
		var sum float64
		for y := y0; y <= y1; y++ {
			for _, v := range prob[y*w+x0 : y*w+x1+1] {
				sum += float64(v)
			}
		}
		if sum/float64(bw*bh) < BoxThresh {
			continue
		}
		d := float64(bw*bh) * UnclipRatio / float64(2*(bw+bh))
		if float64(min(bw, bh))+2*d < 5 {
			continue
		}
		scale := func(v, s float64, limit int) int {
			return int(min(max(math.RoundToEven(v*s), 0), float64(limit)))
		}
		r := image.Rect(
			scale(float64(x0)-d, sx, bounds.Dx()), scale(float64(y0)-d, sy, bounds.Dy()),
			scale(float64(x1+1)+d, sx, bounds.Dx()), scale(float64(y1+1)+d, sy, bounds.Dy()),
		)
		if r.Dx() <= 3 || r.Dy() <= 3 {
			continue
		}
		boxes = append(boxes, r.Add(bounds.Min))
	}
	sortBoxes(boxes)
	return boxes
}

// sortBoxes sorts boxes top to bottom and left to right, treating boxes
// whose tops are less than 10 pixels apart as one line, as PaddleOCR's
// sorted_boxes does.
func sortBoxes(boxes []image.Rectangle) {
	slices.SortStableFunc(boxes, func(a, b image.Rectangle) int {
		if a.Min.Y != b.Min.Y {
			return a.Min.Y - b.Min.Y
		}
		return a.Min.X - b.Min.X
	})
	for i := 0; i+1 < len(boxes); i++ {
		for j := i; j >= 0; j-- {
			a, b := boxes[j], boxes[j+1]
			if abs(b.Min.Y-a.Min.Y) >= 10 || b.Min.X >= a.Min.X {
				break
			}
			boxes[j], boxes[j+1] = b, a
		}
	}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
