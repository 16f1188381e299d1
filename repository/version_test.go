package repository_test

import (
	"slices"
	"testing"

	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/repository"
)

func latest(n uint32) *modelconfig.ModelVersionPolicy {
	return &modelconfig.ModelVersionPolicy{PolicyChoice: &modelconfig.ModelVersionPolicy_Latest_{
		Latest: &modelconfig.ModelVersionPolicy_Latest{NumVersions: n}}}
}

func all() *modelconfig.ModelVersionPolicy {
	return &modelconfig.ModelVersionPolicy{PolicyChoice: &modelconfig.ModelVersionPolicy_All_{
		All: &modelconfig.ModelVersionPolicy_All{}}}
}

func specific(v ...int64) *modelconfig.ModelVersionPolicy {
	return &modelconfig.ModelVersionPolicy{PolicyChoice: &modelconfig.ModelVersionPolicy_Specific_{
		Specific: &modelconfig.ModelVersionPolicy_Specific{Versions: v}}}
}

func TestSelectVersions(t *testing.T) {
	avail := []int64{1, 2, 3, 10}
	tests := []struct {
		name      string
		policy    *modelconfig.ModelVersionPolicy
		available []int64
		want      []int64
	}{
		{"nil policy is latest 1", nil, avail, []int64{10}},
		{"empty policy is latest 1", &modelconfig.ModelVersionPolicy{}, avail, []int64{10}},
		{"latest 1", latest(1), avail, []int64{10}},
		{"latest 0 is latest 1", latest(0), avail, []int64{10}},
		{"latest 2", latest(2), avail, []int64{3, 10}},
		{"latest more than available", latest(100), avail, avail},
		{"latest max uint32", latest(^uint32(0)), avail, avail},
		{"all", all(), avail, avail},
		{"specific present", specific(3, 1), avail, []int64{1, 3}},
		{"specific partly missing", specific(2, 7), avail, []int64{2}},
		{"specific none present", specific(7, 8), avail, nil},
		{"specific empty", specific(), avail, nil},
		{"unsorted with duplicates", latest(2), []int64{3, 1, 10, 3, 2}, []int64{3, 10}},
		{"all unsorted with duplicates", all(), []int64{3, 1, 3}, []int64{1, 3}},
		{"no versions latest", latest(1), nil, nil},
		{"no versions all", all(), []int64{}, nil},
		{"no versions specific", specific(1), nil, nil},
		{"empty latest message", &modelconfig.ModelVersionPolicy{PolicyChoice: &modelconfig.ModelVersionPolicy_Latest_{}}, avail, []int64{10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.available)
			got := repository.SelectVersions(tt.policy, tt.available)
			if !slices.Equal(got, tt.want) {
				t.Errorf("SelectVersions = %v, want %v", got, tt.want)
			}
			if !slices.Equal(in, tt.available) {
				t.Errorf("input changed to %v", tt.available)
			}
			if len(got) > 0 && len(tt.available) > 0 {
				got[0] = -42
				if slices.Contains(tt.available, -42) {
					t.Error("result aliases the input")
				}
			}
		})
	}
}

func FuzzSelectVersions(f *testing.F) {
	f.Add(uint8(0), uint32(1), []byte{1, 2, 3})
	f.Add(uint8(1), uint32(0), []byte{5, 5, 1})
	f.Add(uint8(2), uint32(2), []byte{})
	f.Fuzz(func(t *testing.T, kind uint8, n uint32, raw []byte) {
		available := make([]int64, len(raw))
		for i, b := range raw {
			available[i] = int64(b)
		}
		var policy *modelconfig.ModelVersionPolicy
		switch kind % 4 {
		case 0:
			policy = latest(n)
		case 1:
			policy = all()
		case 2:
			policy = specific(available[:len(available)/2]...)
		}
		got := repository.SelectVersions(policy, available)
		if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
			t.Fatalf("result %v is not strictly ascending", got)
		}
		for _, v := range got {
			if !slices.Contains(available, v) {
				t.Fatalf("result %v has %d, which is not available", got, v)
			}
		}
		if policy.GetAll() == nil && policy.GetSpecific() == nil && len(available) > 0 && len(got) == 0 {
			t.Fatalf("latest policy selected nothing from %v", available)
		}
	})
}
