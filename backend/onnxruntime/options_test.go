package onnxruntime

import (
	"maps"
	"runtime"
	"slices"
	"strings"
	"testing"

	ort "github.com/yalue/onnxruntime_go"
	"google.golang.org/protobuf/encoding/prototext"

	"github.com/triton-go/triton/modelconfig"
)

func parse(t *testing.T, text string) *modelconfig.ModelConfig {
	t.Helper()
	cfg := &modelconfig.ModelConfig{}
	if err := prototext.Unmarshal([]byte(text), cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestPlanSessionDefaults(t *testing.T) {
	p, err := planSession(parse(t, ``), 2, false, -1)
	if err != nil {
		t.Fatal(err)
	}
	if want := max(1, runtime.NumCPU()/2); p.intraOpThreads != want {
		t.Errorf("intra-op threads %d, want %d (cores shared by 2 instances)", p.intraOpThreads, want)
	}
	if p.interOpThreads != 1 || p.parallel || p.graphLevel != ort.GraphOptimizationLevelEnableAll || p.memArena != nil || len(p.providers) != 0 {
		t.Errorf("defaults: %+v", p)
	}
	if want := map[string]string{"session.intra_op.allow_spinning": "0", "session.inter_op.allow_spinning": "0"}; !maps.Equal(p.configEntries, want) {
		t.Errorf("default config entries %v, want %v (pools that do not spin)", p.configEntries, want)
	}
	on, err := planSession(parse(t, `parameters { key: "session.intra_op.allow_spinning" value: { string_value: "1" } }`), 2, false, -1)
	if err != nil {
		t.Fatal(err)
	}
	if on.configEntries["session.intra_op.allow_spinning"] != "1" || on.configEntries["session.inter_op.allow_spinning"] != "0" {
		t.Errorf("config entries %v: the configuration's allow_spinning must win", on.configEntries)
	}
}

func TestPlanSessionParameters(t *testing.T) {
	cfg := parse(t, `
parameters { key: "intra_op_thread_count" value: { string_value: "3" } }
parameters { key: "inter_op_thread_count" value: { string_value: "2" } }
parameters { key: "execution_mode" value: { string_value: "1" } }
parameters { key: "enable_mem_arena" value: { string_value: "0" } }
parameters { key: "enable_mem_pattern" value: { string_value: "true" } }
parameters { key: "session.use_device_allocator_for_initializers" value: { string_value: "1" } }
parameters { key: "unrelated" value: { string_value: "x" } }
optimization { graph { level: -1 } }`)
	p, err := planSession(cfg, 4, false, -1)
	if err != nil {
		t.Fatal(err)
	}
	if p.intraOpThreads != 3 || p.interOpThreads != 2 || !p.parallel || p.graphLevel != ort.GraphOptimizationLevelEnableBasic {
		t.Errorf("plan %+v", p)
	}
	if p.memArena == nil || *p.memArena || p.memPattern == nil || !*p.memPattern {
		t.Errorf("arena %v pattern %v", p.memArena, p.memPattern)
	}
	if !maps.Equal(p.configEntries, map[string]string{"session.use_device_allocator_for_initializers": "1",
		"session.intra_op.allow_spinning": "0", "session.inter_op.allow_spinning": "0"}) {
		t.Errorf("config entries %v", p.configEntries)
	}
	for level, want := range map[int32]ort.GraphOptimizationLevel{0: ort.GraphOptimizationLevelEnableAll, 1: ort.GraphOptimizationLevelEnableExtended, 2: ort.GraphOptimizationLevelDisableAll} {
		cfg := &modelconfig.ModelConfig{Optimization: &modelconfig.ModelOptimizationPolicy{Graph: &modelconfig.ModelOptimizationPolicy_Graph{Level: level}}}
		if p, err := planSession(cfg, 1, false, -1); err != nil || p.graphLevel != want {
			t.Errorf("level %d: %v %v", level, p.graphLevel, err)
		}
	}
}

func TestPlanSessionErrors(t *testing.T) {
	for name, tc := range map[string]struct{ cfg, want string }{
		"threads":     {`parameters { key: "intra_op_thread_count" value: { string_value: "many" } }`, "intra_op_thread_count must be an integer"},
		"negative":    {`parameters { key: "inter_op_thread_count" value: { string_value: "-1" } }`, "inter_op_thread_count must be an integer >= 0"},
		"mode":        {`parameters { key: "execution_mode" value: { string_value: "2" } }`, "execution_mode must be 0"},
		"arena":       {`parameters { key: "enable_mem_arena" value: { string_value: "yes please" } }`, "enable_mem_arena must be a boolean"},
		"graph level": {`optimization { graph { level: 7 } }`, "optimization.graph.level: 7"},
		"gpu name": {`optimization { execution_accelerators { gpu_execution_accelerator { name: "magic" } } }`,
			`gpu_execution_accelerator[0]: unknown GPU execution accelerator "magic"`},
		"cpu name": {`optimization { execution_accelerators { cpu_execution_accelerator { name: "tensorrt" } } }`,
			`cpu_execution_accelerator[0]: unknown CPU execution accelerator "tensorrt"`},
		"precision": {`optimization { execution_accelerators { gpu_execution_accelerator { name: "tensorrt" parameters { key: "precision_mode" value: "FP8" } } } }`,
			"precision_mode must be FP32, FP16 or INT8"},
		"workspace": {`optimization { execution_accelerators { gpu_execution_accelerator { name: "tensorrt" parameters { key: "max_workspace_size_bytes" value: "lots" } } } }`,
			"max_workspace_size_bytes must be a positive integer"},
		"trt param": {`optimization { execution_accelerators { gpu_execution_accelerator { name: "tensorrt" parameters { key: "speed" value: "max" } } } }`,
			`unknown TensorRT accelerator parameter "speed"`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := planSession(parse(t, tc.cfg), 1, true, 0)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestPlanProviders(t *testing.T) {
	acc := parse(t, `optimization { execution_accelerators {
  gpu_execution_accelerator {
    name: "tensorrt"
    parameters { key: "precision_mode" value: "FP16" }
    parameters { key: "max_workspace_size_bytes" value: "1073741824" }
    parameters { key: "trt_engine_cache_enable" value: "1" }
    parameters { key: "trt_engine_cache_path" value: "/tmp/trt" }
  }
  gpu_execution_accelerator { name: "cuda" parameters { key: "cudnn_conv_use_max_workspace" value: "1" } }
  cpu_execution_accelerator { name: "openvino" parameters { key: "device_type" value: "CPU" } }
} }`).GetOptimization().GetExecutionAccelerators()

	gpu, err := planProviders(acc, true, 1)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range gpu {
		names = append(names, p.name)
	}
	if strings.Join(names, ",") != "tensorrt,cuda,openvino" {
		t.Fatalf("GPU instance providers %v, want tensorrt,cuda,openvino", names)
	}
	wantTRT := map[string]string{"device_id": "1", "trt_fp16_enable": "1", "trt_max_workspace_size": "1073741824", "trt_engine_cache_enable": "1", "trt_engine_cache_path": "/tmp/trt"}
	if !maps.Equal(gpu[0].options, wantTRT) {
		t.Errorf("tensorrt options %v, want %v", gpu[0].options, wantTRT)
	}
	if !maps.Equal(gpu[1].options, map[string]string{"device_id": "1", "cudnn_conv_use_max_workspace": "1"}) {
		t.Errorf("cuda options %v", gpu[1].options)
	}
	if !maps.Equal(gpu[2].options, map[string]string{"device_type": "CPU"}) {
		t.Errorf("openvino options %v", gpu[2].options)
	}

	cpu, err := planProviders(acc, false, -1)
	if err != nil || len(cpu) != 1 || cpu[0].name != "openvino" {
		t.Fatalf("CPU instance providers %+v, %v; want only openvino (GPU accelerators apply to GPU instances)", cpu, err)
	}
	plainGPU, _ := planProviders(nil, true, 0)
	if len(plainGPU) != 1 || plainGPU[0].name != "cuda" || plainGPU[0].options["device_id"] != "0" {
		t.Errorf("a GPU instance without accelerators runs on CUDA: %+v", plainGPU)
	}
	int8, _ := tensorRTOptions(map[string]string{"precision_mode": "int8"}, 0)
	if int8["trt_int8_enable"] != "1" {
		t.Errorf("INT8 precision: %v", int8)
	}
}

func info(name string, dt ort.TensorElementDataType, dims ...int64) ort.InputOutputInfo {
	return ort.InputOutputInfo{Name: name, OrtValueType: ort.ONNXTypeTensor, DataType: dt, Dimensions: dims}
}

func TestComplete(t *testing.T) {
	fp32, i64 := ort.TensorElementDataType(ort.TensorElementDataTypeFloat), ort.TensorElementDataType(ort.TensorElementDataTypeInt64)
	batchable := []ort.InputOutputInfo{info("x", fp32, -1, 16)}
	batchOut := []ort.InputOutputInfo{info("y", fp32, -1, 16)}
	cases := []struct {
		name      string
		cfg       string
		ins, outs []ort.InputOutputInfo
		batch     int
		want      string
	}{
		{"batchable", ``, batchable, batchOut, 4,
			`max_batch_size:4 input:{name:"x" data_type:TYPE_FP32 dims:16} output:{name:"y" data_type:TYPE_FP32 dims:16} dynamic_batching:{}`},
		{"batch size one keeps the default scheduler", ``, batchable, batchOut, 1,
			`max_batch_size:1 input:{name:"x" data_type:TYPE_FP32 dims:16} output:{name:"y" data_type:TYPE_FP32 dims:16}`},
		{"default batching off", ``, batchable, batchOut, 0,
			`input:{name:"x" data_type:TYPE_FP32 dims:-1 dims:16} output:{name:"y" data_type:TYPE_FP32 dims:-1 dims:16}`},
		{"explicit batch size kept", `max_batch_size: 2 sequence_batching {}`, batchable, batchOut, 4,
			`max_batch_size:2 input:{name:"x" data_type:TYPE_FP32 dims:16} output:{name:"y" data_type:TYPE_FP32 dims:16} sequence_batching:{}`},
		{"fixed first dim", ``, []ort.InputOutputInfo{info("x", fp32, 2, 3)}, []ort.InputOutputInfo{info("y", fp32, 2, 2)}, 4,
			`input:{name:"x" data_type:TYPE_FP32 dims:2 dims:3} output:{name:"y" data_type:TYPE_FP32 dims:2 dims:2}`},
		{"scalar input", ``, []ort.InputOutputInfo{info("x", fp32, -1, 4), info("sr", i64)}, batchOut, 4,
			`input:{name:"x" data_type:TYPE_FP32 dims:-1 dims:4} input:{name:"sr" data_type:TYPE_INT64 dims:1} output:{name:"y" data_type:TYPE_FP32 dims:-1 dims:16}`},
		{"symbolic dims", ``, []ort.InputOutputInfo{info("x", fp32, -1, 0, 3)}, []ort.InputOutputInfo{info("y", fp32, -1, -1)}, 4,
			`max_batch_size:4 input:{name:"x" data_type:TYPE_FP32 dims:-1 dims:3} output:{name:"y" data_type:TYPE_FP32 dims:-1} dynamic_batching:{}`},
		{"full shapes in config mean no batching", `input { name: "x" data_type: TYPE_FP32 dims: [ -1, 16 ] }`, batchable, batchOut, 4,
			`input:{name:"x" data_type:TYPE_FP32 dims:-1 dims:16} output:{name:"y" data_type:TYPE_FP32 dims:-1 dims:16}`},
		{"configured inputs kept", `input { name: "x" data_type: TYPE_FP32 dims: [ 16 ] } max_batch_size: 8`, batchable, batchOut, 4,
			`max_batch_size:8 input:{name:"x" data_type:TYPE_FP32 dims:16} output:{name:"y" data_type:TYPE_FP32 dims:16}`},
		{"batch inputs are not completed as inputs", `max_batch_size: 8 batch_input { kind: BATCH_ELEMENT_COUNT target_name: "n" data_type: TYPE_FP32 }`,
			[]ort.InputOutputInfo{info("x", fp32, -1, 16), info("n", fp32, -1)}, batchOut, 4,
			`max_batch_size:8 input:{name:"x" data_type:TYPE_FP32 dims:16} output:{name:"y" data_type:TYPE_FP32 dims:16} batch_input:{kind:BATCH_ELEMENT_COUNT target_name:"n" data_type:TYPE_FP32}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := parse(t, tc.cfg)
			if err := complete(cfg, tc.ins, tc.outs, tc.batch); err != nil {
				t.Fatal(err)
			}
			want := parse(t, tc.want)
			if got, w := prototext.Format(cfg), prototext.Format(want); got != w {
				t.Errorf("completed:\n%s\nwant:\n%s", got, w)
			}
		})
	}
	bad := []ort.InputOutputInfo{{Name: "seq", OrtValueType: ort.ONNXTypeSequence}}
	if err := complete(parse(t, ``), bad, nil, 4); err == nil || !strings.Contains(err.Error(), "'seq'") {
		t.Errorf("sequence input: %v", err)
	}
	c64 := []ort.InputOutputInfo{info("c", ort.TensorElementDataType(ort.TensorElementDataTypeComplex64), 2)}
	if err := complete(parse(t, ``), c64, nil, 4); err == nil || !strings.Contains(err.Error(), "'c'") {
		t.Errorf("complex input: %v", err)
	}
}

func TestCheckConfig(t *testing.T) {
	fp32 := ort.TensorElementDataType(ort.TensorElementDataTypeFloat)
	ins := []ort.InputOutputInfo{info("x", fp32, -1, 16)}
	outs := []ort.InputOutputInfo{info("y", fp32, -1, 16)}
	for name, tc := range map[string]struct{ cfg, want string }{
		"ok":            {`max_batch_size: 8 input { name: "x" data_type: TYPE_FP32 dims: [ 16 ] } output { name: "y" data_type: TYPE_FP32 dims: [ 16 ] }`, ""},
		"unbatched ok":  {`input { name: "x" data_type: TYPE_FP32 dims: [ -1, 16 ] } output { name: "y" data_type: TYPE_FP32 dims: [ 4, 16 ] }`, ""},
		"datatype":      {`max_batch_size: 8 input { name: "x" data_type: TYPE_INT32 dims: [ 16 ] }`, "input 'x' has datatype TYPE_INT32, but the model's is TYPE_FP32"},
		"dims":          {`max_batch_size: 8 input { name: "x" data_type: TYPE_FP32 dims: [ 8 ] }`, "input 'x' has shape [-1 8]"},
		"batch in dims": {`max_batch_size: 8 input { name: "x" data_type: TYPE_FP32 dims: [ -1, 16 ] }`, "batch dimension is implicit"},
		"missing batch": {`input { name: "x" data_type: TYPE_FP32 dims: [ 16 ] }`, "the model has a batch dimension"},
		"unknown input": {`max_batch_size: 8 input { name: "x" data_type: TYPE_FP32 dims: [ 16 ] } input { name: "z" data_type: TYPE_FP32 dims: [ 16 ] }`, "input 'z' is not one of the model's inputs [x]"},
		"unknown output": {`max_batch_size: 8 input { name: "x" data_type: TYPE_FP32 dims: [ 16 ] } output { name: "w" data_type: TYPE_FP32 dims: [ 16 ] }`,
			"output 'w' is not one of the model's outputs [y]"},
		"unconfigured input": {`max_batch_size: 8 output { name: "y" data_type: TYPE_FP32 dims: [ 16 ] }`, "model input 'x' is not in the configuration"},
	} {
		t.Run(name, func(t *testing.T) {
			err := checkConfig("m/1/model.onnx", parse(t, tc.cfg), ins, outs)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "m/1/model.onnx") {
				t.Fatalf("error %v, want %q and the file", err, tc.want)
			}
		})
	}
}

// TestKnownShape: the outputs whose shape Execute knows before the run
// (and ONNX Runtime writes in place) are those the model file fixes but for
// the batch dimension, wherever the configuration puts it.
func TestKnownShape(t *testing.T) {
	outs := []ort.InputOutputInfo{
		{Name: "fixed", Dimensions: ort.NewShape(-1, 16)},
		{Name: "dynamic", Dimensions: ort.NewShape(-1, -1)},
		{Name: "state", Dimensions: ort.NewShape(2, -1, 128)},
		{Name: "scalar", Dimensions: ort.NewShape()},
		{Name: "all fixed", Dimensions: ort.NewShape(3, 4)},
	}
	batching := parse(t, `max_batch_size: 8
		sequence_batching { state { input_name: "state_in" output_name: "state" data_type: TYPE_FP32 dims: [ 2, 128 ] } }
		parameters { key: "batch_axis:state" value: { string_value: "1" } }`)
	plain := parse(t, `max_batch_size: 0`)
	for _, tc := range []struct {
		cfg  *modelconfig.ModelConfig
		name string
		want outputShape
	}{
		{batching, "fixed", outputShape{dims: []int64{-1, 16}, batch: 0}},
		{batching, "dynamic", outputShape{}},
		{batching, "state", outputShape{dims: []int64{2, -1, 128}, batch: 1}},
		{batching, "scalar", outputShape{}}, // no dimension to batch along
		{batching, "all fixed", outputShape{dims: []int64{3, 4}, batch: 0}},
		{batching, "missing", outputShape{}},
		{plain, "fixed", outputShape{}},
		{plain, "scalar", outputShape{dims: []int64{}, batch: -1}},
		{plain, "all fixed", outputShape{dims: []int64{3, 4}, batch: -1}},
	} {
		got, err := knownShape(tc.cfg, tc.name, outs)
		if err != nil || !slices.Equal(got.dims, tc.want.dims) || (got.dims == nil) != (tc.want.dims == nil) || (got.dims != nil && got.batch != tc.want.batch) {
			t.Errorf("knownShape(max_batch_size %d, %q) = %+v, %v; want %+v", tc.cfg.GetMaxBatchSize(), tc.name, got, err, tc.want)
		}
	}
}
