package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/triton-go/triton/backend/python"
	"github.com/triton-go/triton/internal/testenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const repo = "../model_repository"

// TestRun: the command prints a class for each sentence, the BLS answers
// with the classifier run once for the one bright image, and the stream's
// responses in order.
func TestRun(t *testing.T) {
	testenv.NeedLibrary(t)
	testenv.Need(t, python.DefaultInterpreter, "run make deps (scripts/deps.sh installs python3-numpy)")
	var out bytes.Buffer
	if err := run(t.Context(), &out, repo); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{
		fmt.Sprintf("%q: positive (p = ", Sentences[0]),
		fmt.Sprintf("%q: negative (p = ", Sentences[1]),
		fmt.Sprintf("%q: neutral (p = ", Sentences[2]),
		"image 0: detector score 0.500, class none\n",
		"image 1: detector score 0.731, class middle_right\n",
		"the classifier ran 1 time(s) on 1 image(s)\n",
		"repeat_py: OUT 4 IDX 0\nrepeat_py: OUT 8 IDX 1\nrepeat_py: OUT 15 IDX 2\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
}

// TestCopies: the example repository's ONNX models and vocabulary are
// what scripts/gen-test-models.py makes (make check-models checks those).
func TestCopies(t *testing.T) {
	const models = "../../backend/onnxruntime/testdata/models/"
	for copy, orig := range map[string]string{
		repo + "/sentiment/1/model.onnx":  models + "sentiment.onnx",
		repo + "/detector/1/model.onnx":   models + "detector.onnx",
		repo + "/classifier/1/model.onnx": models + "classifier.onnx",
		repo + "/preprocess/vocab.txt":    models + "sentiment_vocab.txt",
	} {
		a, err1 := os.ReadFile(copy)
		b, err2 := os.ReadFile(orig)
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs from %s (%v, %v): copy it again", copy, orig, err1, err2)
		}
	}
}
