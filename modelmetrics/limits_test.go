package modelmetrics_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/triton-go/triton/modelmetrics"
)

// TestLimits: the caps on families, series per family and series in all,
// each with an error naming it; closing frees room again.
func TestLimits(t *testing.T) {
	t.Run("families", func(t *testing.T) {
		r := modelmetrics.NewRegistry()
		fams := make([]*modelmetrics.Family, 0, modelmetrics.MaxFamilies)
		for i := range modelmetrics.MaxFamilies {
			fams = append(fams, family(t, r, "f"+strconv.Itoa(i), modelmetrics.Counter))
		}
		_, err := r.Family("one_more", "h", modelmetrics.Counter)
		wantErrContains(t, "family past the cap", err, `cannot create metric family "one_more": the server already has 10000 model-defined metric families`, modelmetrics.ErrLimit)
		if f, err := r.Family("f7", "h", modelmetrics.Counter); err != nil { // existing names still work
			t.Errorf("existing family at the cap: %v", err)
		} else {
			f.Close()
		}
		fams[0].Close()
		family(t, r, "one_more", modelmetrics.Counter)
	})
	t.Run("series per family", func(t *testing.T) {
		r := modelmetrics.NewRegistry()
		f := family(t, r, "wide", modelmetrics.Gauge)
		var first *modelmetrics.Metric
		for i := range modelmetrics.MaxSeriesPerFamily {
			m := metric(t, f, map[string]string{"i": strconv.Itoa(i)}, nil)
			if i == 0 {
				first = m
			}
		}
		_, err := f.Metric(map[string]string{"i": "x"}, nil)
		wantErrContains(t, "series past the cap", err, `metric family "wide": cannot create a metric with labels map[i:x]: the family already has 10000 metrics`, modelmetrics.ErrLimit)
		metric(t, f, map[string]string{"i": "5"}, nil) // existing series still work
		first.Close()
		metric(t, f, map[string]string{"i": "x"}, nil)
	})
	t.Run("series in all", func(t *testing.T) {
		r := modelmetrics.NewRegistry()
		var fams []*modelmetrics.Family
		for i := range modelmetrics.MaxSeries / modelmetrics.MaxSeriesPerFamily {
			f := family(t, r, "f"+strconv.Itoa(i), modelmetrics.Counter)
			fams = append(fams, f)
			for j := range modelmetrics.MaxSeriesPerFamily {
				metric(t, f, map[string]string{"j": strconv.Itoa(j)}, nil)
			}
		}
		g := family(t, r, "g", modelmetrics.Counter)
		_, err := g.Metric(nil, nil)
		wantErrContains(t, "series past the total cap", err, "the server already has 100000 model-defined metrics", modelmetrics.ErrLimit)
		if err != nil && !strings.Contains(err.Error(), `metric family "g"`) {
			t.Errorf("error does not name the family: %v", err)
		}
		fams[3].Close() // a family closed to zero frees all its series
		if _, err := g.Metric(nil, nil); errors.Is(err, modelmetrics.ErrLimit) {
			t.Errorf("still at the cap after a family closed: %v", err)
		}
	})
}
