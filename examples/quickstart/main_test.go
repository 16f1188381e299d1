package main

import (
	"bytes"
	"strings"
	"testing"

	"go.uber.org/goleak"
	"go.uber.org/zap"

	"github.com/triton-go/triton/internal/testenv"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestQuickstart(t *testing.T) {
	testenv.NeedLibrary(t)
	for name, dir := range map[string]string{"embedded": "", "on disk": "models"} {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			if err := run(&out, dir, zap.NewNop()); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{
				"model simple   version 1 READY",
				"model reverse  version 1 READY",
				"model add_sub_onnx version 1 READY",
				"add_sub_onnx: platform onnxruntime_onnx, max_batch_size 4, inputs INPUT0 TYPE_FP32 [16] INPUT1 TYPE_FP32 [16]",
				"add_sub_onnx: OUTPUT0 [2,16] = [0 1.5 3] ... 46.5",
				"req-2: simple v1 OUTPUT0=[2 5 8 11] OUTPUT1=[-2 1 4 7]",
				`reverse: ["olleh" "notirt" "oll\x00eh"]`,
				`bad request: InvalidArgument: triton: model "simple" version 1: request "bad-1": inference input 'INPUT0' data-type is 'FP32', but model 'simple' expects 'INT32'`,
			} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}
