package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/triton-go/triton/internal/testenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestStreaming runs three streams of the committed recording. Its speech
// lasts from 0.5 s to 2.49 s (backend/onnxruntime/testdata/REAL_MODELS.md);
// Silero's first confident chunk is at 0.54 s and its hang-over ends about
// 70 ms after the speech. Stream i is delayed by i × 0.25 s, so each must
// report one segment, about there, shifted by its delay.
func TestStreaming(t *testing.T) {
	testenv.Model(t, "silero_vad_v6.onnx")
	var out bytes.Buffer
	if err := run(&out, "", "", 3); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + out.String())
	if !strings.Contains(out.String(), "3 streams of speech_16k.wav") {
		t.Errorf("output does not name the recording:\n%s", out.String())
	}
	re := regexp.MustCompile(`(?m)^stream (\d+) .*: speech (\d+\.\d+)–(\d+\.\d+) s$`)
	found := re.FindAllStringSubmatch(out.String(), -1)
	if len(found) != 3 {
		t.Fatalf("%d streams with exactly one speech segment, want 3:\n%s", len(found), out.String())
	}
	for _, m := range found {
		i, _ := strconv.Atoi(m[1])
		start, _ := strconv.ParseFloat(m[2], 64)
		end, _ := strconv.ParseFloat(m[3], 64)
		delay := float64(i) / 4
		if start < 0.4+delay || start > 0.7+delay || end < 2.4+delay || end > 2.7+delay {
			t.Errorf("stream %d: speech %.2f–%.2f s, want about %.2f–%.2f s", i, start, end, 0.5+delay, 2.49+delay)
		}
	}
	if !regexp.MustCompile(`in \d+ batches \((\d+\.\d) chunks a batch\)`).MatchString(out.String()) {
		t.Errorf("output lacks the batch count:\n%s", out.String())
	}
}

// TestStreamingFlags passes the model and the recording explicitly.
func TestStreamingFlags(t *testing.T) {
	model := testenv.Model(t, "silero_vad_v6.onnx")
	wav := filepath.Join(testenv.RepoRoot(t), "backend", "onnxruntime", "testdata", "speech_16k.wav")
	var out bytes.Buffer
	if err := run(&out, model, wav, 1); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "stream 0 (2.99 s of audio after 0.00 s of extra silence): speech 0.") {
		t.Errorf("output:\n%s", out.String())
	}
}

func TestStreamingErrors(t *testing.T) {
	for _, tc := range []struct {
		model, wav string
		streams    int
		want       string
	}{
		{"", "", 0, "-streams 0"},
		{"", "", 65, "-streams 65"},
		{filepath.Join(t.TempDir(), "missing.onnx"), "", 1, "missing.onnx"},
	} {
		err := run(&bytes.Buffer{}, tc.model, tc.wav, tc.streams)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%q, %q, %d): %v, want an error mentioning %q", tc.model, tc.wav, tc.streams, err, tc.want)
		}
	}
}

// TestSegments checks the joining of chunks above 0.5 into segments.
func TestSegments(t *testing.T) {
	probs := []float32{0.01, 0.9, 0.2, 0.2, 0.95, 0.99, 0.1, 0.1, 0.1, 0.1, 0.7, 0.01}
	var got []string
	for _, s := range segments(probs) {
		got = append(got, fmt.Sprintf("%.3f-%.3f", s.start, s.end))
	}
	// Chunks 1-5 (the 64 ms dip joined), then chunk 10 alone (128 ms apart).
	if want := "0.032-0.192 0.320-0.352"; strings.Join(got, " ") != want {
		t.Errorf("segments %v, want %s", got, want)
	}
}

// TestTone checks the generated signal's layout: silence, then sound.
func TestTone(t *testing.T) {
	s := tone()
	if len(s) != 3*rate || s[rate/2-1] != 0 || s[5*rate/2] != 0 || s[rate/2+10] == 0 {
		t.Errorf("tone: %d samples, edges %v %v", len(s), s[rate/2-1], s[5*rate/2])
	}
}
