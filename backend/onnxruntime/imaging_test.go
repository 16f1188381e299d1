package onnxruntime_test

// Image and audio helpers for the real-model tests (realmodels_test.go) and
// benchmarks (bench_test.go): text lines rendered with Go's own fonts,
// PP-OCR preprocessing and CTC decoding, and a 16-bit PCM WAV reader. The
// facts they follow are in testdata/REAL_MODELS.md.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/color"
	"math"
	"os"
	"strings"

	"golang.org/x/image/draw"
	"golang.org/x/image/font"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/opentype"
	"golang.org/x/image/math/fixed"
)

// ocrHeight is the input height of the PP-OCR recogniser and classifier.
const ocrHeight = 48

// renderLine draws text in Go Regular at size px, black on white, with a
// margin of an eighth of the font size around it: a tight crop, as
// PP-OCR's detector gives the recogniser. (With a quarter of the font size
// on the left, the recogniser reads a leading space before some lines.)
func renderLine(text string, size float64) (*image.RGBA, error) {
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
	d := font.Drawer{
		Dst:  img,
		Src:  image.NewUniform(color.Black),
		Face: face,
		Dot:  fixed.P(margin, margin+m.Ascent.Ceil()),
	}
	d.DrawString(text)
	return img, nil
}

// rotate180 returns img turned upside down.
func rotate180(img image.Image) *image.RGBA {
	b := img.Bounds()
	out := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	for y := 0; y < b.Dy(); y++ {
		for x := 0; x < b.Dx(); x++ {
			out.Set(b.Dx()-1-x, b.Dy()-1-y, img.At(b.Min.X+x, b.Min.Y+y))
		}
	}
	return out
}

// resizedWidth is PaddleOCR's width for img scaled to height 48 with its
// aspect ratio kept: ceil(48·w/h).
func resizedWidth(img image.Image) int {
	b := img.Bounds()
	return int(math.Ceil(float64(ocrHeight) * float64(b.Dx()) / float64(b.Dy())))
}

// normalizeLine scales img to height 48 (width min(ceil(48·w/h), maxW),
// bilinear) and writes it into dst, a [3, 48, W] CHW plane set, as
// (x/255 − 0.5)/0.5 in B, G, R order; the columns to the right of the image
// stay as they are (zero: PaddleOCR's padding after normalisation).
func normalizeLine(dst []float32, W int, img image.Image, maxW int) {
	w := min(resizedWidth(img), maxW, W)
	scaled := image.NewRGBA(image.Rect(0, 0, w, ocrHeight))
	draw.BiLinear.Scale(scaled, scaled.Bounds(), img, img.Bounds(), draw.Src, nil)
	plane := ocrHeight * W
	for y := 0; y < ocrHeight; y++ {
		for x := 0; x < w; x++ {
			p := scaled.RGBAAt(x, y)
			for c, v := range [3]uint8{p.B, p.G, p.R} {
				dst[c*plane+y*W+x] = (float32(v)/255 - 0.5) / 0.5
			}
		}
	}
}

// recBatch is the recogniser's input for lines, [N, 3, 48, W]: each line at
// height 48, right-padded with zeros to W = max(48·max(w/h), 320) rounded up
// as PaddleOCR's resize_norm_img does.
func recBatch(lines []image.Image) (data []float32, W int) {
	maxRatio := 320.0 / ocrHeight
	for _, img := range lines {
		b := img.Bounds()
		maxRatio = max(maxRatio, float64(b.Dx())/float64(b.Dy()))
	}
	W = int(math.Ceil(ocrHeight * maxRatio))
	item := 3 * ocrHeight * W
	data = make([]float32, len(lines)*item)
	for i, img := range lines {
		normalizeLine(data[i*item:(i+1)*item], W, img, W)
	}
	return data, W
}

// clsWidth is the classifier's input width.
const clsWidth = 192

// clsBatch is the direction classifier's input for lines, [N, 3, 48, 192]:
// each line at height 48, width capped at 192 and zero-padded to it.
func clsBatch(lines []image.Image) []float32 {
	item := 3 * ocrHeight * clsWidth
	data := make([]float32, len(lines)*item)
	for i, img := range lines {
		normalizeLine(data[i*item:(i+1)*item], clsWidth, img, clsWidth)
	}
	return data
}

// readKeys reads ppocr_keys_v1.txt: one character a line, no empty last
// entry when the file ends in a newline.
func readKeys(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	keys := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	return keys, nil
}

// ctcDecode greedily decodes one line of recogniser output, probs being
// [T, C] row-major: argmax per step, repeats collapsed, blanks (index 0)
// dropped; index i in 1..len(keys) is keys[i-1] and index len(keys)+1 is a
// space. conf is the mean probability of the kept steps.
func ctcDecode(probs []float32, T, C int, keys []string) (text string, conf float64, err error) {
	if len(probs) != T*C {
		return "", 0, fmt.Errorf("ctc: %d probabilities for [%d, %d]", len(probs), T, C)
	}
	if C != len(keys)+2 {
		return "", 0, fmt.Errorf("ctc: %d classes for %d keys (want keys+2)", C, len(keys))
	}
	var sb strings.Builder
	prev, kept := -1, 0
	for t := 0; t < T; t++ {
		row := probs[t*C : (t+1)*C]
		best := 0
		for c := 1; c < C; c++ {
			if row[c] > row[best] {
				best = c
			}
		}
		if best != prev && best != 0 {
			if best == C-1 {
				sb.WriteByte(' ')
			} else {
				sb.WriteString(keys[best-1])
			}
			conf += float64(row[best])
			kept++
		}
		prev = best
	}
	if kept > 0 {
		conf /= float64(kept)
	}
	return sb.String(), conf, nil
}

// readWAV reads a mono 16-bit PCM WAV file into float32 samples in [-1, 1)
// (int16 / 32768), walking the RIFF chunks rather than assuming a 44-byte
// header.
func readWAV(path string) (samples []float32, rate int, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	if len(b) < 12 || string(b[0:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		return nil, 0, errors.New(path + ": not a RIFF/WAVE file")
	}
	var haveFmt bool
	for off := 12; off+8 <= len(b); {
		id := string(b[off : off+4])
		size := int(binary.LittleEndian.Uint32(b[off+4 : off+8]))
		body := off + 8
		if size < 0 || body+size > len(b) {
			return nil, 0, fmt.Errorf("%s: chunk %q of %d bytes overruns the file", path, id, size)
		}
		chunk := b[body : body+size]
		switch id {
		case "fmt ":
			if size < 16 {
				return nil, 0, fmt.Errorf("%s: fmt chunk of %d bytes", path, size)
			}
			format := binary.LittleEndian.Uint16(chunk[0:2])
			channels := binary.LittleEndian.Uint16(chunk[2:4])
			rate = int(binary.LittleEndian.Uint32(chunk[4:8]))
			bits := binary.LittleEndian.Uint16(chunk[14:16])
			if format != 1 || channels != 1 || bits != 16 {
				return nil, 0, fmt.Errorf("%s: format %d, %d channels, %d bits; want PCM (1), mono, 16-bit", path, format, channels, bits)
			}
			haveFmt = true
		case "data":
			if !haveFmt {
				return nil, 0, errors.New(path + ": data chunk before fmt chunk")
			}
			samples = make([]float32, size/2)
			for i := range samples {
				samples[i] = float32(int16(binary.LittleEndian.Uint16(chunk[2*i:]))) / 32768
			}
			return samples, rate, nil
		}
		off = body + size + size&1 // chunks are word-aligned
	}
	return nil, 0, errors.New(path + ": no data chunk")
}

// Silero VAD v6 at 16 kHz: 512 new samples a call, after 64 of context.
const (
	sileroChunk   = 512
	sileroContext = 64
	sileroState   = 2 * 1 * 128 // [2, batch 1, 128]
)

// sileroStep runs one [1, 576] input with the state [2, 1, 128] and returns
// the speech probability and the next state.
type sileroStep func(input, state []float32) (prob float32, next []float32, err error)

// sileroProbs runs Silero over samples in whole 512-sample chunks, each
// preceded by the previous chunk's last 64 samples (zeros for the first),
// carrying the state from call to call; it returns one probability a chunk.
func sileroProbs(samples []float32, step sileroStep) ([]float32, error) {
	state := make([]float32, sileroState)
	input := make([]float32, sileroContext+sileroChunk)
	var probs []float32
	for c := 0; (c+1)*sileroChunk <= len(samples); c++ {
		copy(input, input[sileroChunk:]) // last 64 samples become the context
		copy(input[sileroContext:], samples[c*sileroChunk:(c+1)*sileroChunk])
		p, next, err := step(input, state)
		if err != nil {
			return probs, fmt.Errorf("chunk %d: %w", c, err)
		}
		if len(next) != sileroState {
			return probs, fmt.Errorf("chunk %d: next state has %d values, want %d", c, len(next), sileroState)
		}
		copy(state, next)
		probs = append(probs, p)
	}
	return probs, nil
}
