package onnxruntime_test

// Audio helpers for the real-model tests (realmodels_test.go): a 16-bit
// PCM WAV reader and Silero VAD's chunking. The facts they follow are in
// testdata/REAL_MODELS.md. The PP-OCR image helpers (rendered lines,
// preprocessing, CTC decoding) are package examples/ocr/ppocr's.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
)

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
