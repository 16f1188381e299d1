package repository

import (
	"slices"

	"github.com/triton-go/triton/modelconfig"
)

// SelectVersions returns the versions of available that a version policy
// serves, ascending:
//
//   - latest {num_versions: n}: the n highest (n = 0 counts as 1);
//   - all: every available version;
//   - specific {versions: [...]}: the listed versions that are available;
//     listed versions without a folder are left out (the loader reports
//     them).
//
// A nil policy, or one with no choice set, is Triton's default, latest 1.
// available need not be sorted; duplicates count once. The result is a new
// slice, empty (nil) when nothing is served.
func SelectVersions(policy *modelconfig.ModelVersionPolicy, available []int64) []int64 {
	avail := slices.Clone(available)
	slices.Sort(avail)
	avail = slices.Compact(avail)
	if len(avail) == 0 {
		return nil
	}
	switch {
	case policy.GetAll() != nil:
		return avail
	case policy.GetSpecific() != nil:
		var out []int64
		for _, v := range avail {
			if slices.Contains(policy.GetSpecific().GetVersions(), v) {
				out = append(out, v)
			}
		}
		return out
	default:
		n := len(avail)
		if k := policy.GetLatest().GetNumVersions(); k == 0 {
			n = 1
		} else if uint64(k) < uint64(n) {
			n = int(k)
		}
		return avail[len(avail)-n:]
	}
}
