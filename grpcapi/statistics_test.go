package grpcapi_test

import (
	"context"
	"io"
	"maps"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/grpcapi/inferencepb"
	"github.com/triton-go/triton/internal/testmodels"
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

// TestModelStatisticsResponseStats: after a decoupled model streams three
// responses and its final flag alone, response_stats has "0", "1" and "2"
// with one success each and "3" with one empty_response, as Triton counts
// the flag; compute_infer and compute_output split each success's time at
// the backend's Send (so they add up to it), and are zero for the flag.
func TestModelStatisticsResponseStats(t *testing.T) {
	files := repo()
	files["repeat/config.pbtxt"] = `name: "repeat"` + testmodels.RepeatConfig
	files["repeat/1/model"] = ""
	f := newFixture(t, setup{files: files, server: []triton.Option{triton.WithBackend("repeat", &testmodels.Repeat{})}})
	ctx := t.Context()

	stream, err := f.client.ModelStreamInfer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(repeatRequest("r", false, 7, 8, 9)); err != nil {
		t.Fatal(err)
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		m, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if m.GetErrorMessage() != "" {
			t.Fatalf("error in band: %s", m.GetErrorMessage())
		}
		n++
	}
	if n != 3 {
		t.Fatalf("%d responses, want 3", n)
	}

	resp, err := f.client.ModelStatistics(ctx, &inferencepb.ModelStatisticsRequest{Name: "repeat"})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetModelStats()) != 1 {
		t.Fatalf("statistics %v", resp)
	}
	rs := resp.GetModelStats()[0].GetResponseStats()
	if len(rs) != 4 {
		t.Fatalf("response_stats has keys %v, want 0..3", slices.Sorted(maps.Keys(rs)))
	}
	for key, want := range map[string][4]uint64{"0": {1, 0, 0, 0}, "1": {1, 0, 0, 0}, "2": {1, 0, 0, 0}, "3": {0, 0, 1, 0}} {
		r := rs[key]
		if r == nil {
			t.Errorf("response_stats has no %q", key)
			continue
		}
		got := [4]uint64{r.GetSuccess().GetCount(), r.GetFail().GetCount(), r.GetEmptyResponse().GetCount(), r.GetCancel().GetCount()}
		if got != want {
			t.Errorf("response_stats[%q] success, fail, empty_response, cancel counts %v, want %v", key, got, want)
		}
		if want[0] == 1 && r.GetSuccess().GetNs() == 0 {
			t.Errorf("response_stats[%q] success has no duration", key)
		}
		ci, co := r.GetComputeInfer(), r.GetComputeOutput()
		if ci == nil || co == nil || ci.GetCount() != want[0] || co.GetCount() != want[0] || ci.GetNs()+co.GetNs() != r.GetSuccess().GetNs() {
			t.Errorf("response_stats[%q] compute_infer %v, compute_output %v, success %v: want counts %d adding up to success", key, ci, co, r.GetSuccess(), want[0])
		}
	}
}
