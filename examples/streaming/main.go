// Command streaming runs several audio streams at once through Silero VAD
// v6 served as a stateful model (sequence batching with implicit state):
// each stream is a sequence of requests, one 32 ms chunk each, and only
// carries its audio; the server keeps every stream's recurrent state
// between its requests and batches the chunks of different streams
// together. It prints where each stream has speech.
//
//	go run ./examples/streaming [-model .cache/models/silero_vad_v6.onnx] [-wav speech.wav] [-streams 4]
//
// The model is the unmodified silero_vad_v6.onnx that scripts/fetch-models.sh
// (make deps) puts in .cache/models; by default it is looked for from the
// working directory up. The audio is a 16 kHz mono 16-bit WAV file, by
// default the recording committed at backend/onnxruntime/testdata/speech_16k.wav
// (0.5 s of silence, "The quick brown fox jumps over the lazy dog." until
// 2.49 s, 0.5 s of silence); without it, a generated tone between two
// silences. Stream i is the audio after i × 0.25 s of extra silence, so
// that the streams differ. Chunks are sent as fast as the server answers,
// not in real time.
package main

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend/onnxruntime"
	"github.com/triton-go/triton/tensor"
)

// Silero VAD v6 at 16 kHz: each request is the previous chunk's last 64
// samples followed by 512 new ones.
const (
	rate       = 16000
	chunk      = 512
	contextLen = 64
)

// config serves the original model file as a sequence model. The client
// sends input [1, 576] and sr [1]; the server adds the state, [2, 1, 128]
// per request, zeros at a sequence's START, and keeps stateN for the next
// request. batch_axis:state says the state's batch is its dimension 1
// ([2, batch, 128]), batch_shared:sr that sr, a rank-0 input, is one value
// for the whole batch.
const config = `
name: "silero_vad"
backend: "onnxruntime"
max_batch_size: 64
input [
  { name: "input" data_type: TYPE_FP32 dims: [ 576 ] },
  { name: "sr" data_type: TYPE_INT64 dims: [ 1 ] reshape: { shape: [ ] } }
]
output [ { name: "output" data_type: TYPE_FP32 dims: [ 1 ] } ]
sequence_batching {
  max_sequence_idle_microseconds: 10000000
  state [ { input_name: "state" output_name: "stateN" data_type: TYPE_FP32 dims: [ 2, 128 ] } ]
  oldest { max_candidate_sequences: 64 preferred_batch_size: [ %d ] max_queue_delay_microseconds: 1000 }
}
parameters { key: "batch_axis:state" value: { string_value: "1" } }
parameters { key: "batch_shared:sr" value: { string_value: "true" } }
parameters { key: "intra_op_thread_count" value: { string_value: "1" } }
parameters { key: "inter_op_thread_count" value: { string_value: "1" } }
instance_group [ { count: 2 kind: KIND_CPU } ]
`

func main() {
	model := flag.String("model", "", "the Silero VAD v6 model file (default: .cache/models/silero_vad_v6.onnx, looked for from the working directory up)")
	wav := flag.String("wav", "", "16 kHz mono 16-bit WAV file (default: backend/onnxruntime/testdata/speech_16k.wav from the working directory up, else a generated tone)")
	streams := flag.Int("streams", 4, "number of concurrent streams (1 to 64)")
	flag.Parse()
	if err := run(os.Stdout, *model, *wav, *streams); err != nil {
		log.Fatal(err)
	}
}

// run serves the model, sends the streams concurrently and writes each
// stream's speech segments to w.
func run(w io.Writer, model, wav string, streams int) error {
	if streams < 1 || streams > 64 {
		return fmt.Errorf("-streams %d: want 1 to 64", streams)
	}
	var err error
	if model == "" {
		if model, err = findUp(filepath.Join(".cache", "models", "silero_vad_v6.onnx")); err != nil {
			return fmt.Errorf("%w: run make deps (scripts/fetch-models.sh), or pass -model", err)
		}
	}
	if model, err = filepath.Abs(model); err != nil {
		return err
	}
	if _, err := os.Stat(model); err != nil {
		return err
	}
	audio, source, err := loadAudio(wav)
	if err != nil {
		return err
	}

	dir, err := os.MkdirTemp("", "streaming-repository")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := writeRepository(dir, model, streams); err != nil {
		return err
	}
	srv, err := triton.New(triton.WithModelRepository(dir), triton.WithBackend("onnxruntime", onnxruntime.New()))
	if err != nil {
		return err
	}
	defer srv.Close()

	ctx := context.Background()
	probs := make([][]float32, streams)
	errs := make([]error, streams)
	lengths := make([]int, streams)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range streams {
		wg.Go(func() {
			samples := append(make([]float32, i*rate/4), audio...)
			lengths[i] = len(samples)
			probs[i], errs[i] = detect(ctx, srv, uint64(i+1), samples)
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return err
	}

	fmt.Fprintf(w, "%d streams of %s through model silero_vad (sequence batching, state kept by the server):\n", streams, source)
	chunks := 0
	for i, p := range probs {
		chunks += len(p)
		var segs []string
		for _, s := range segments(p) {
			segs = append(segs, fmt.Sprintf("%.2f–%.2f s", s.start, s.end))
		}
		if len(segs) == 0 {
			segs = []string{"none"}
		}
		fmt.Fprintf(w, "stream %d (%.2f s of audio after %.2f s of extra silence): speech %s\n",
			i, float64(lengths[i])/rate, float64(i)/4, strings.Join(segs, ", "))
	}
	st, err := srv.Stats("silero_vad", 1)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%d chunks (one request each) in %v, %.0f chunks/s; the server ran them in %d batches (%.1f chunks a batch)\n",
		chunks, elapsed.Round(time.Millisecond), float64(chunks)/elapsed.Seconds(), st[0].ExecutionCount,
		float64(st[0].InferenceCount)/float64(max(st[0].ExecutionCount, 1)))
	return srv.Shutdown(ctx)
}

// detect sends samples as one sequence, a whole chunk a request with the
// previous 64 samples in front (zeros for the first), START on the first
// chunk and END on the last, and returns each chunk's speech probability.
// It sends no state: the server keeps it.
func detect(ctx context.Context, srv *triton.Server, id uint64, samples []float32) ([]float32, error) {
	n := len(samples) / chunk
	sr, err := tensor.From("sr", tensor.Shape{1}, []int64{rate})
	if err != nil {
		return nil, err
	}
	input := make([]float32, contextLen+chunk)
	probs := make([]float32, 0, n)
	for c := range n {
		copy(input, input[chunk:])
		copy(input[contextLen:], samples[c*chunk:(c+1)*chunk])
		in, err := tensor.From("input", tensor.Shape{1, contextLen + chunk}, input)
		if err != nil {
			return nil, err
		}
		resp, err := srv.Infer(ctx, &triton.InferRequest{
			Model: "silero_vad", SequenceID: id, SequenceStart: c == 0, SequenceEnd: c == n-1,
			Inputs: []tensor.Tensor{in, sr},
		})
		if err != nil {
			return nil, fmt.Errorf("stream %d, chunk %d: %w", id, c, err)
		}
		out, ok := resp.Output("output")
		if !ok {
			return nil, fmt.Errorf("stream %d, chunk %d: no output", id, c)
		}
		p, err := tensor.View[float32](out)
		if err != nil {
			return nil, err
		}
		probs = append(probs, p[0])
	}
	return probs, nil
}

// segment is a stretch of speech, in seconds from the stream's start.
type segment struct{ start, end float64 }

// segments returns the stretches of chunks whose probability is above 0.5,
// joining stretches less than 100 ms apart (Silero dips inside words).
func segments(probs []float32) []segment {
	const threshold, gap = 0.5, 0.1
	secs := func(c int) float64 { return float64(c*chunk) / rate }
	var out []segment
	for c := 0; c < len(probs); c++ {
		if probs[c] <= threshold {
			continue
		}
		first := c
		for c < len(probs) && probs[c] > threshold {
			c++
		}
		if k := len(out) - 1; k >= 0 && secs(first)-out[k].end < gap {
			out[k].end = secs(c)
			continue
		}
		out = append(out, segment{secs(first), secs(c)})
	}
	return out
}

// writeRepository lays out <dir>/silero_vad: config.pbtxt, with the
// preferred batch size set to the number of streams, and 1/model.onnx, a
// link to the model file.
func writeRepository(dir, model string, streams int) error {
	m := filepath.Join(dir, "silero_vad")
	if err := os.MkdirAll(filepath.Join(m, "1"), 0o755); err != nil {
		return err
	}
	if err := os.Symlink(model, filepath.Join(m, "1", "model.onnx")); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(m, "config.pbtxt"), fmt.Appendf(nil, config, streams), 0o644)
}

// loadAudio reads the WAV file at path, or the committed recording, or
// generates a signal when path is "" and the recording is not found. It
// returns the samples and a description.
func loadAudio(path string) ([]float32, string, error) {
	if path == "" {
		var err error
		if path, err = findUp(filepath.Join("backend", "onnxruntime", "testdata", "speech_16k.wav")); err != nil {
			return tone(), "a generated tone (0.5 s of silence, 2 s of a 220 Hz tone, 0.5 s of silence)", nil
		}
	}
	samples, err := readWAV(path)
	if err != nil {
		return nil, "", err
	}
	return samples, filepath.Base(path), nil
}

// tone is 0.5 s of silence, 2 s of a 220 Hz tone with harmonics, pulsing
// four times a second, and 0.5 s of silence. Silero may or may not call it
// speech; it is there so that the example runs without the recording.
func tone() []float32 {
	s := make([]float32, 3*rate)
	for i := rate / 2; i < 5*rate/2; i++ {
		t := float64(i) / rate
		v := math.Sin(2*math.Pi*220*t) + 0.5*math.Sin(2*math.Pi*440*t) + 0.25*math.Sin(2*math.Pi*660*t)
		s[i] = float32(0.3 * v * (0.6 + 0.4*math.Sin(2*math.Pi*4*t)))
	}
	return s
}

// readWAV reads a 16 kHz mono 16-bit PCM WAV file into samples in [-1, 1).
func readWAV(path string) ([]float32, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) < 12 || string(b[0:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		return nil, fmt.Errorf("%s: not a RIFF/WAVE file", path)
	}
	haveFmt := false
	for off := 12; off+8 <= len(b); {
		id, size := string(b[off:off+4]), int(binary.LittleEndian.Uint32(b[off+4:off+8]))
		body := off + 8
		if size < 0 || body+size > len(b) {
			return nil, fmt.Errorf("%s: chunk %q overruns the file", path, id)
		}
		data := b[body : body+size]
		switch id {
		case "fmt ":
			if size < 16 {
				return nil, fmt.Errorf("%s: short fmt chunk", path)
			}
			format, channels := binary.LittleEndian.Uint16(data[0:2]), binary.LittleEndian.Uint16(data[2:4])
			r, bits := binary.LittleEndian.Uint32(data[4:8]), binary.LittleEndian.Uint16(data[14:16])
			if format != 1 || channels != 1 || r != rate || bits != 16 {
				return nil, fmt.Errorf("%s: format %d, %d channels, %d Hz, %d bits; want PCM, mono, 16000 Hz, 16-bit", path, format, channels, r, bits)
			}
			haveFmt = true
		case "data":
			if !haveFmt {
				return nil, fmt.Errorf("%s: data chunk before fmt chunk", path)
			}
			samples := make([]float32, size/2)
			for i := range samples {
				samples[i] = float32(int16(binary.LittleEndian.Uint16(data[2*i:]))) / 32768
			}
			return samples, nil
		}
		off = body + size + size&1
	}
	return nil, fmt.Errorf("%s: no data chunk", path)
}

// findUp looks for rel from the working directory up.
func findUp(rel string) (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, rel)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no %s above the working directory", rel)
		}
		dir = parent
	}
}
