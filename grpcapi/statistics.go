package grpcapi

import (
	"context"
	"strconv"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/grpcapi/inferencepb"
	"github.com/triton-go/triton/internal/wire"
)

// ModelStatistics answers the statistics of ready model versions: every
// model for an empty name, every ready version of the model for an empty
// version, else that version; a model or version that is not ready is
// INVALID_ARGUMENT with Triton's messages. The fields are the HTTP
// adapter's: last_inference in milliseconds since the epoch (0: none yet),
// response_stats keyed by response index ("0", "1", …) for decoupled models,
// memory_usage empty.
func (s *Service) ModelStatistics(ctx context.Context, req *inferencepb.ModelStatisticsRequest) (*inferencepb.ModelStatisticsResponse, error) {
	if err := s.allowed(ctx, wire.Statistics); err != nil {
		return nil, err
	}
	ver, err := parseVersion(req.GetName(), req.GetVersion())
	if err != nil {
		return nil, s.toStatus(err)
	}
	stats, err := s.srv.Stats(req.GetName(), ver)
	if err != nil {
		return nil, s.toStatus(err)
	}
	out := &inferencepb.ModelStatisticsResponse{ModelStats: make([]*inferencepb.ModelStatistics, len(stats))}
	for i, st := range stats {
		out.ModelStats[i] = modelStatistics(st)
	}
	return out, nil
}

func modelStatistics(st triton.ModelStats) *inferencepb.ModelStatistics {
	var last uint64
	if !st.LastInference.IsZero() {
		last = uint64(max(st.LastInference.UnixMilli(), 0))
	}
	ms := &inferencepb.ModelStatistics{
		Name:           st.Name,
		Version:        strconv.FormatInt(st.Version, 10),
		LastInference:  last,
		InferenceCount: st.InferenceCount,
		ExecutionCount: st.ExecutionCount,
		InferenceStats: &inferencepb.InferStatistics{
			Success:       duration(st.Success),
			Fail:          duration(st.Fail),
			Queue:         duration(st.Queue),
			ComputeInput:  duration(st.ComputeInput),
			ComputeInfer:  duration(st.ComputeInfer),
			ComputeOutput: duration(st.ComputeOutput),
			CacheHit:      duration(st.CacheHit),
			CacheMiss:     duration(st.CacheMiss),
		},
		BatchStats: make([]*inferencepb.InferBatchStatistics, len(st.Batches)),
	}
	for i, b := range st.Batches {
		ms.BatchStats[i] = &inferencepb.InferBatchStatistics{
			BatchSize:     uint64(max(b.BatchSize, 0)),
			ComputeInput:  duration(b.ComputeInput),
			ComputeInfer:  duration(b.ComputeInfer),
			ComputeOutput: duration(b.ComputeOutput),
		}
	}
	if len(st.Responses) > 0 {
		ms.ResponseStats = make(map[string]*inferencepb.InferResponseStatistics, len(st.Responses))
		for _, r := range st.Responses {
			ms.ResponseStats[strconv.Itoa(r.Index)] = &inferencepb.InferResponseStatistics{
				ComputeInfer:  duration(r.ComputeInfer),
				ComputeOutput: duration(r.ComputeOutput),
				Success:       duration(r.Success),
				Fail:          duration(r.Fail),
				EmptyResponse: duration(r.EmptyResponse),
				Cancel:        duration(r.Cancel),
			}
		}
	}
	return ms
}

func duration(d triton.StatDuration) *inferencepb.StatisticDuration {
	return &inferencepb.StatisticDuration{Count: d.Count, Ns: uint64(max(d.Total.Nanoseconds(), 0))}
}
