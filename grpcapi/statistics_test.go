package grpcapi_test

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/grpcapi/inferencepb"
	"github.com/triton-go/triton/tensor"
)

func TestModelStatistics(t *testing.T) {
	f := newFixture(t, setup{})
	ctx := context.Background()
	before := time.Now().UnixMilli()
	in, _ := tensor.From("INPUT0", tensor.Shape{2, 4}, make([]float32, 8))
	for range 3 {
		if _, err := f.srv.Infer(ctx, &triton.InferRequest{Model: "batched", Inputs: []tensor.Tensor{in}}); err != nil {
			t.Fatal(err)
		}
	}
	// One failure: a wrong datatype.
	bad, _ := tensor.From("INPUT0", tensor.Shape{1, 4}, []int32{1, 2, 3, 4})
	if _, err := f.srv.Infer(ctx, &triton.InferRequest{Model: "batched", Inputs: []tensor.Tensor{bad}}); err == nil {
		t.Fatal("an INT32 input to an FP32 model succeeded")
	}

	for _, v := range []string{"", "1"} {
		resp, err := f.client.ModelStatistics(ctx, &inferencepb.ModelStatisticsRequest{Name: "batched", Version: v})
		if err != nil {
			t.Fatalf("version %q: %v", v, err)
		}
		if len(resp.GetModelStats()) != 1 {
			t.Fatalf("version %q: %v", v, resp)
		}
		s := resp.GetModelStats()[0]
		if s.GetName() != "batched" || s.GetVersion() != "1" {
			t.Errorf("name/version %q/%q", s.GetName(), s.GetVersion())
		}
		if last := int64(s.GetLastInference()); last < before || last > time.Now().UnixMilli() {
			t.Errorf("last_inference %d not in [%d, now] (ms since epoch)", last, before)
		}
		is := s.GetInferenceStats()
		if is.GetSuccess().GetCount() != 3 || is.GetFail().GetCount() != 1 || is.GetQueue().GetCount() != 3 || is.GetSuccess().GetNs() == 0 {
			t.Errorf("inference_stats %v", is)
		}
		for name, d := range map[string]*inferencepb.StatisticDuration{
			"compute_input": is.GetComputeInput(), "compute_infer": is.GetComputeInfer(), "compute_output": is.GetComputeOutput(),
			"cache_hit": is.GetCacheHit(), "cache_miss": is.GetCacheMiss(),
		} {
			if d == nil {
				t.Errorf("inference_stats has no %s", name)
			}
		}
		if s.GetInferenceCount() != 6 || s.GetExecutionCount() == 0 || s.GetExecutionCount() > 3 {
			t.Errorf("inference_count %d (want 6), execution_count %d", s.GetInferenceCount(), s.GetExecutionCount())
		}
		if len(s.GetBatchStats()) == 0 || s.GetBatchStats()[0].GetComputeInfer().GetCount() == 0 || s.GetBatchStats()[0].GetBatchSize() == 0 {
			t.Errorf("batch_stats %v", s.GetBatchStats())
		}
		if len(s.GetResponseStats()) != 0 || len(s.GetMemoryUsage()) != 0 {
			t.Errorf("response_stats %v, memory_usage %v: want none", s.GetResponseStats(), s.GetMemoryUsage())
		}
	}

	// No name: every model, the unused ones with zeros.
	resp, err := f.client.ModelStatistics(ctx, &inferencepb.ModelStatisticsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetModelStats()) != len(repo())/2 {
		t.Errorf("all-model statistics have %d entries, want %d", len(resp.GetModelStats()), len(repo())/2)
	}
	for _, s := range resp.GetModelStats() {
		if s.GetName() == "simple" && (s.GetLastInference() != 0 || s.GetInferenceCount() != 0 || s.GetInferenceStats().GetSuccess().GetCount() != 0) {
			t.Errorf("unused model's statistics %v", s)
		}
	}

	for _, tc := range []struct {
		name, version string
		code          codes.Code
		msg           string
	}{
		{"nosuch", "", codes.InvalidArgument, "requested model 'nosuch' is not available"},
		{"simple", "4", codes.InvalidArgument, "requested model version is not available for model 'simple'"},
		{"simple", "v1", codes.InvalidArgument, "failed to get model version from specified version string 'v1'"},
		{"simple", "-1", codes.InvalidArgument, "invalid model version specified '-1'"},
	} {
		_, err := f.client.ModelStatistics(ctx, &inferencepb.ModelStatisticsRequest{Name: tc.name, Version: tc.version})
		wantStatus(t, err, tc.code, tc.msg)
	}
}
