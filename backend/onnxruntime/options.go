package onnxruntime

import (
	"fmt"
	"maps"
	"runtime"
	"strconv"
	"strings"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/triton-go/triton/modelconfig"
)

// sessionPlan is what a model's configuration asks of its ONNX Runtime
// sessions, worked out before any session exists so that it can be checked
// (and unit-tested) without the library.
type sessionPlan struct {
	intraOpThreads int // 0: ONNX Runtime's default
	interOpThreads int
	parallel       bool // execution_mode 1
	graphLevel     ort.GraphOptimizationLevel
	memArena       *bool // nil: library default
	memPattern     *bool
	configEntries  map[string]string // session config entries ("session.*")
	providers      []provider        // execution providers, in priority order
}

// provider is one execution provider with its options.
type provider struct {
	name    string // "cuda", "tensorrt", "openvino"
	options map[string]string
}

// defaultConfigEntries are the session config entries every session gets
// unless the configuration's parameters set them: the threads of ONNX
// Runtime's pools do not spin while they wait for work. A spinning thread
// keeps a core busy between the parallel parts of a run and between runs,
// and in a server that core is one the request path, the batcher and the
// other instances need. Measured on 2 cores with one instance (two intra-op
// threads; docs/performance.md, issue #22): on add/sub the pool's idle
// worker spun up to 30,000 instructions per run, twice the run's own work,
// and none with spinning off; PP-OCR's classifier and Silero VAD served
// 1.0–3.0 times as many requests with spinning off. A lone model on an
// otherwise idle machine, where the latency of each parallel section
// matters most, can turn spinning back on with
// parameters { key: "session.intra_op.allow_spinning" value: { string_value: "1" } }.
var defaultConfigEntries = map[string]string{
	"session.intra_op.allow_spinning": "0",
	"session.inter_op.allow_spinning": "0",
}

// planSession reads the Triton ONNX Runtime backend's parameters and
// optimization settings from cfg. instances is the number of instances the
// model runs with, gpu whether they are GPU instances (device the GPU id).
//
// Defaults suit a server: each instance gets an equal share of the cores
// for its intra-op pool (at least one) rather than every instance starting
// one thread per core, one inter-op thread, and pools whose threads do not
// spin (defaultConfigEntries).
func planSession(cfg *modelconfig.ModelConfig, instances int, gpu bool, device int) (sessionPlan, error) {
	p := sessionPlan{interOpThreads: 1, graphLevel: ort.GraphOptimizationLevelEnableAll}
	if instances > 0 && !gpu {
		p.intraOpThreads = max(1, runtime.NumCPU()/instances)
	}
	params := map[string]string{}
	for k, v := range cfg.GetParameters() {
		params[k] = strings.TrimSpace(v.GetStringValue())
	}
	var err error
	intParam := func(key string, min int, dst *int) {
		v, ok := params[key]
		if !ok || err != nil {
			return
		}
		n, e := strconv.Atoi(v)
		if e != nil || n < min {
			err = fmt.Errorf("parameters: %s must be an integer >= %d, got %q", key, min, v)
			return
		}
		*dst = n
	}
	boolParam := func(key string, dst **bool) {
		v, ok := params[key]
		if !ok || err != nil {
			return
		}
		b, e := strconv.ParseBool(v)
		if e != nil {
			err = fmt.Errorf("parameters: %s must be a boolean (0, 1, true, false), got %q", key, v)
			return
		}
		*dst = &b
	}
	threads := -1
	intParam("intra_op_thread_count", 0, &threads)
	if threads >= 0 {
		p.intraOpThreads = threads // 0: the library's default
	}
	intParam("inter_op_thread_count", 0, &p.interOpThreads)
	mode := 0
	intParam("execution_mode", 0, &mode)
	if err == nil && mode > 1 {
		err = fmt.Errorf("parameters: execution_mode must be 0 (sequential) or 1 (parallel), got %d", mode)
	}
	p.parallel = mode == 1
	boolParam("enable_mem_arena", &p.memArena)
	boolParam("enable_mem_pattern", &p.memPattern)
	if err != nil {
		return p, err
	}
	p.configEntries = maps.Clone(defaultConfigEntries)
	for k, v := range params {
		if strings.HasPrefix(k, "session.") {
			p.configEntries[k] = v
		}
	}

	switch level := cfg.GetOptimization().GetGraph().GetLevel(); level {
	case 0:
		p.graphLevel = ort.GraphOptimizationLevelEnableAll
	case -1:
		p.graphLevel = ort.GraphOptimizationLevelEnableBasic
	case 1:
		p.graphLevel = ort.GraphOptimizationLevelEnableExtended
	case 2:
		p.graphLevel = ort.GraphOptimizationLevelDisableAll
	default:
		return p, fmt.Errorf("optimization.graph.level: %d is not one of -1 (basic), 0 (all, the default), 1 (extended), 2 (disabled)", level)
	}

	p.providers, err = planProviders(cfg.GetOptimization().GetExecutionAccelerators(), gpu, device)
	return p, err
}

// planProviders maps optimization.execution_accelerators onto ONNX Runtime
// execution providers, in Triton's priority order: the GPU accelerators
// (GPU instances only), then CUDA (GPU instances), then the CPU
// accelerators; the default CPU provider always comes last on its own.
func planProviders(acc *modelconfig.ModelOptimizationPolicy_ExecutionAccelerators, gpu bool, device int) ([]provider, error) {
	var out []provider
	hasCUDA := false
	for i, a := range acc.GetGpuExecutionAccelerator() {
		field := fmt.Sprintf("optimization.execution_accelerators.gpu_execution_accelerator[%d]", i)
		switch a.GetName() {
		case "tensorrt":
			opts, err := tensorRTOptions(a.GetParameters(), device)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", field, err)
			}
			if gpu {
				out = append(out, provider{name: "tensorrt", options: opts})
			}
		case "cuda":
			opts := map[string]string{"device_id": strconv.Itoa(device)}
			for k, v := range a.GetParameters() {
				opts[k] = v
			}
			if gpu {
				out = append(out, provider{name: "cuda", options: opts})
				hasCUDA = true
			}
		default:
			return nil, fmt.Errorf("%s: unknown GPU execution accelerator %q for the onnxruntime backend (known: tensorrt, cuda)", field, a.GetName())
		}
	}
	if gpu && !hasCUDA {
		out = append(out, provider{name: "cuda", options: map[string]string{"device_id": strconv.Itoa(device)}})
	}
	for i, a := range acc.GetCpuExecutionAccelerator() {
		field := fmt.Sprintf("optimization.execution_accelerators.cpu_execution_accelerator[%d]", i)
		switch a.GetName() {
		case "openvino":
			opts := map[string]string{}
			for k, v := range a.GetParameters() {
				opts[k] = v
			}
			out = append(out, provider{name: "openvino", options: opts})
		default:
			return nil, fmt.Errorf("%s: unknown CPU execution accelerator %q for the onnxruntime backend (known: openvino)", field, a.GetName())
		}
	}
	return out, nil
}

// tensorRTOptions translates Triton's TensorRT accelerator parameters into
// TensorRT execution provider options: precision_mode and
// max_workspace_size_bytes have Triton names; trt_* keys pass through.
func tensorRTOptions(params map[string]string, device int) (map[string]string, error) {
	opts := map[string]string{"device_id": strconv.Itoa(device)}
	for k, v := range params {
		switch {
		case k == "precision_mode":
			switch strings.ToUpper(v) {
			case "FP32":
			case "FP16":
				opts["trt_fp16_enable"] = "1"
			case "INT8":
				opts["trt_int8_enable"] = "1"
			default:
				return nil, fmt.Errorf("precision_mode must be FP32, FP16 or INT8, got %q", v)
			}
		case k == "max_workspace_size_bytes":
			if n, err := strconv.ParseUint(v, 10, 64); err != nil || n == 0 {
				return nil, fmt.Errorf("max_workspace_size_bytes must be a positive integer, got %q", v)
			}
			opts["trt_max_workspace_size"] = v
		case strings.HasPrefix(k, "trt_"):
			opts[k] = v
		default:
			return nil, fmt.Errorf("unknown TensorRT accelerator parameter %q (known: precision_mode, max_workspace_size_bytes, trt_*)", k)
		}
	}
	return opts, nil
}

// newSessionOptions builds the library's session options from a plan. The
// caller destroys them.
func newSessionOptions(p sessionPlan) (*ort.SessionOptions, error) {
	o, err := ort.NewSessionOptions()
	if err != nil {
		return nil, err
	}
	fail := func(what string, err error) (*ort.SessionOptions, error) {
		_ = o.Destroy()
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if p.intraOpThreads > 0 {
		if err := o.SetIntraOpNumThreads(p.intraOpThreads); err != nil {
			return fail("intra_op_thread_count", err)
		}
	}
	if p.interOpThreads > 0 {
		if err := o.SetInterOpNumThreads(p.interOpThreads); err != nil {
			return fail("inter_op_thread_count", err)
		}
	}
	mode := ort.ExecutionMode(ort.ExecutionModeSequential)
	if p.parallel {
		mode = ort.ExecutionModeParallel
	}
	if err := o.SetExecutionMode(mode); err != nil {
		return fail("execution_mode", err)
	}
	if err := o.SetGraphOptimizationLevel(p.graphLevel); err != nil {
		return fail("optimization.graph.level", err)
	}
	if p.memArena != nil {
		if err := o.SetCpuMemArena(*p.memArena); err != nil {
			return fail("enable_mem_arena", err)
		}
	}
	if p.memPattern != nil {
		if err := o.SetMemPattern(*p.memPattern); err != nil {
			return fail("enable_mem_pattern", err)
		}
	}
	for k, v := range p.configEntries {
		if err := o.AddSessionConfigEntry(k, v); err != nil {
			return fail("parameters: "+k, err)
		}
	}
	for _, pr := range p.providers {
		if err := appendProvider(o, pr); err != nil {
			return fail("execution accelerator "+pr.name, fmt.Errorf("%w (this ONNX Runtime build or machine does not provide it: the library fetched by scripts/fetch-onnxruntime.sh is the CPU build)", err))
		}
	}
	return o, nil
}

func appendProvider(o *ort.SessionOptions, p provider) error {
	switch p.name {
	case "cuda":
		c, err := ort.NewCUDAProviderOptions()
		if err != nil {
			return err
		}
		defer c.Destroy()
		if err := c.Update(p.options); err != nil {
			return err
		}
		return o.AppendExecutionProviderCUDA(c)
	case "tensorrt":
		t, err := ort.NewTensorRTProviderOptions()
		if err != nil {
			return err
		}
		defer t.Destroy()
		if err := t.Update(p.options); err != nil {
			return err
		}
		return o.AppendExecutionProviderTensorRT(t)
	case "openvino":
		return o.AppendExecutionProviderOpenVINO(p.options)
	}
	return fmt.Errorf("unknown execution provider %q", p.name)
}
