package perf

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/client"
)

// serverstats.go reads the statistics extension around each window and
// keeps the differences, as perf_analyzer's SummarizeServerStats does.

// serverStats are a model's statistics over a window or step.
type serverStats struct {
	inferenceCount, executionCount, successCount uint64
	queueCount                                   uint64
	computeInputCount, computeInferCount         uint64
	computeOutputCount                           uint64
	cummNS, queueNS                              uint64
	computeInputNS, computeInferNS               uint64
	computeOutputNS                              uint64
	cacheHitCount, cacheHitNS                    uint64
	cacheMissCount, cacheMissNS                  uint64
	// composing are an ensemble's steps' models, by name then version
	// (perf_analyzer's std::map order).
	composing []composingStats
}

type composingStats struct {
	id    modelID // version as reported, never ""
	stats serverStats
}

// statsSnapshot is the cumulative statistics of the models a run watches,
// by name and version.
type statsSnapshot map[modelID]triton.ModelStats

// fetchStats reads the statistics the step needs: every model for an
// ensemble, else the model (all its versions when -x is not given).
func fetchStats(ctx context.Context, conn client.Conn, m *modelInfo) (statsSnapshot, error) {
	name, ver := m.name, int64(0)
	if m.ensemble() {
		name = ""
	} else if m.version != "" {
		ver, _ = parseVersion(m.version)
	}
	list, err := conn.ModelStatistics(ctx, name, ver)
	if err != nil {
		return nil, fmt.Errorf("failed to get model statistics: %w", err)
	}
	snap := statsSnapshot{}
	for _, s := range list {
		snap[modelID{s.Name, strconv.FormatInt(s.Version, 10)}] = s
	}
	return snap, nil
}

// statsVersion is DetermineStatsModelVersion: the requested version, or
// without one the highest version whose queue count grew (with a warning
// when several did).
func statsVersion(id modelID, start, end statsSnapshot, stderr func(string)) (string, error) {
	if id.version != "" {
		if _, ok := end[id]; ok {
			return id.version, nil
		}
		return "", fmt.Errorf("failed to find the requested model version")
	}
	best := int64(-1)
	multiple := false
	for k, e := range end {
		if k.name != id.name {
			continue
		}
		var before uint64
		if s, ok := start[k]; ok {
			before = s.Queue.Count
		}
		if e.Queue.Count > before {
			v, _ := strconv.ParseInt(k.version, 10, 64)
			if best != -1 {
				multiple = true
			}
			best = max(best, v)
		}
	}
	if best == -1 {
		return "", fmt.Errorf("failed to find the requested model version")
	}
	if multiple && stderr != nil {
		stderr("WARNING: Multiple versions of model " + id.name + " are loaded in the triton server, and the version to use was unspecified. The stats for that model may be inaccurate.")
	}
	return strconv.FormatInt(best, 10), nil
}

// summarizeServer is SummarizeServerStats: the model's differences, and
// its composing models' for an ensemble.
func summarizeServer(m *modelInfo, id modelID, start, end statsSnapshot, stderr func(string)) (serverStats, error) {
	ver, err := statsVersion(id, start, end, stderr)
	if err != nil {
		return serverStats{}, err
	}
	key := modelID{id.name, ver}
	e, ok := end[key]
	if !ok {
		return serverStats{}, fmt.Errorf("missing statistics for requested model")
	}
	s := diffStats(start[key], e)
	for _, sub := range m.composing[id.name] {
		cs, err := summarizeServer(m, sub, start, end, stderr)
		if err != nil {
			return serverStats{}, err
		}
		subVer, _ := statsVersion(sub, start, end, nil)
		s.composing = append(s.composing, composingStats{modelID{sub.name, subVer}, cs})
	}
	sortComposing(s.composing)
	return s, nil
}

func sortComposing(c []composingStats) {
	slices.SortFunc(c, func(a, b composingStats) int {
		if n := strings.Compare(a.id.name, b.id.name); n != 0 {
			return n
		}
		return strings.Compare(a.id.version, b.id.version)
	})
}

// diffStats is end − start, field by field.
func diffStats(a, b triton.ModelStats) serverStats {
	d := func(x, y triton.StatDuration) (uint64, uint64) {
		return y.Count - x.Count, uint64(y.Total - x.Total)
	}
	var s serverStats
	s.inferenceCount = b.InferenceCount - a.InferenceCount
	s.executionCount = b.ExecutionCount - a.ExecutionCount
	s.successCount, s.cummNS = d(a.Success, b.Success)
	s.queueCount, s.queueNS = d(a.Queue, b.Queue)
	s.computeInputCount, s.computeInputNS = d(a.ComputeInput, b.ComputeInput)
	s.computeInferCount, s.computeInferNS = d(a.ComputeInfer, b.ComputeInfer)
	s.computeOutputCount, s.computeOutputNS = d(a.ComputeOutput, b.ComputeOutput)
	s.cacheHitCount, s.cacheHitNS = d(a.CacheHit, b.CacheHit)
	s.cacheMissCount, s.cacheMissNS = d(a.CacheMiss, b.CacheMiss)
	return s
}

// mergeServer is MergeServerSideStats: the sum of the windows' stats.
func mergeServer(list []serverStats) serverStats {
	var m serverStats
	for _, s := range list {
		m.inferenceCount += s.inferenceCount
		m.executionCount += s.executionCount
		m.successCount += s.successCount
		m.queueCount += s.queueCount
		m.computeInputCount += s.computeInputCount
		m.computeInferCount += s.computeInferCount
		m.computeOutputCount += s.computeOutputCount
		m.cummNS += s.cummNS
		m.queueNS += s.queueNS
		m.computeInputNS += s.computeInputNS
		m.computeInferNS += s.computeInferNS
		m.computeOutputNS += s.computeOutputNS
		m.cacheHitCount += s.cacheHitCount
		m.cacheHitNS += s.cacheHitNS
		m.cacheMissCount += s.cacheMissCount
		m.cacheMissNS += s.cacheMissNS
	}
	if len(list) > 0 {
		for _, c := range list[0].composing {
			var subs []serverStats
			for _, s := range list {
				for _, x := range s.composing {
					if x.id == c.id {
						subs = append(subs, x.stats)
					}
				}
			}
			m.composing = append(m.composing, composingStats{c.id, mergeServer(subs)})
		}
	}
	return m
}

// avg is ns/count, 0 for no count.
func avg(ns, count uint64) uint64 {
	if count == 0 {
		return 0
	}
	return ns / count
}
