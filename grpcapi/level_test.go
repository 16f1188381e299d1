package grpcapi

import "testing"

// TestCompressionLevelAlgorithm checks grpc-core's choice of an encoding
// for a level among the client's accepted ones, including clients that
// accept one of gzip and deflate, or neither.
func TestCompressionLevelAlgorithm(t *testing.T) {
	both := []string{"identity", "deflate", "gzip"}
	for _, tc := range []struct {
		level    compressionLevel
		accepted []string
		want     string
	}{
		{levelNone, both, "identity"},
		{levelLow, both, "gzip"},
		{levelMedium, both, "deflate"},
		{levelHigh, both, "deflate"},
		{levelLow, []string{"gzip"}, "gzip"},
		{levelHigh, []string{"gzip"}, "gzip"},
		{levelLow, []string{"deflate"}, "deflate"},
		{levelMedium, []string{"deflate", "snappy"}, "deflate"},
		{levelHigh, []string{"identity"}, "identity"},
		{levelHigh, nil, "identity"},
	} {
		if got := tc.level.algorithm(tc.accepted); got != tc.want {
			t.Errorf("level %d, client accepting %v: %q, want %q", tc.level, tc.accepted, got, tc.want)
		}
	}
	for s, want := range map[string]compressionLevel{"none": levelNone, "LOW": levelLow, "Medium": levelMedium, "high": levelHigh} {
		if got, err := parseCompressionLevel(s); err != nil || got != want {
			t.Errorf("parse %q: %v, %v", s, got, err)
		}
	}
	if _, err := parseCompressionLevel("max"); err == nil {
		t.Error(`level "max" accepted`)
	}
}
