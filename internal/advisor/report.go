package advisor

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Report writes the advice as text: the pipeline's shares (for an
// ensemble or BLS model), the table of measured candidates, the knee,
// whether batching pays, the choice and why, and the config.pbtxt
// snippet.
func (a *Advice) Report(w io.Writer) error {
	var b strings.Builder
	name := strconv.Quote(a.Model)
	if a.Pipeline != "" {
		name += " (through " + strconv.Quote(a.Pipeline) + ")"
	}
	fmt.Fprintf(&b, "Batching advice for %s\n", name)
	fmt.Fprintf(&b, "Latency budget: %s. Profile: %s (%s): batches %s, delays %s.\n",
		a.Budget, a.Profile.Name, a.Profile.Why, joinInts(a.Profile.Batches), joinDurations(a.Profile.Delays))
	if len(a.Points) > 0 && len(a.Points[0].Shares) > 0 {
		fmt.Fprintf(&b, "\nShare of the pipeline's compute at concurrency %d (statistics extension, compute infer):\n", a.Points[0].Concurrency)
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "  model\tshare\tcompute ms/exec\tavg batch\t")
		for _, s := range a.Points[0].Shares {
			var per time.Duration
			var avg float64
			if s.Executions > 0 {
				per = s.Compute / time.Duration(s.Executions)
				avg = float64(s.Inferences) / float64(s.Executions)
			}
			fmt.Fprintf(tw, "  %s\t%.1f%%\t%s\t%.1f\t\n", s.Model, s.Share*100, formatMS(per), avg)
		}
		tw.Flush()
		fmt.Fprintf(&b, "Tuning %q, the largest share.\n", a.Model)
	}

	b.WriteString("\nMeasured (" + a.Budget.Stat() + " and throughput from the client; queue, compute and batch from the server's statistics; ~ unstable):\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "#\tstage\tinstances\tmax_batch\tpreferred\tdelay\tconcurrency\tinfer/s\t%s ms\tavg batch\tqueue ms\tcompute ms\tbudget\t\n", a.Budget.Stat())
	for _, p := range a.Points {
		c := p.Candidate
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%s\t%s\t%d\t", p.N, p.Stage, c.Instances, c.MaxBatch, c.preferredString(), c.delayString(), p.Concurrency)
		if p.Err != nil {
			fmt.Fprintf(tw, "load failed\t\t\t\t\t\t\n")
			continue
		}
		mark := ""
		if !p.Stable {
			mark = "~"
		}
		within := "no"
		if p.Within {
			within = "yes"
		}
		fmt.Fprintf(tw, "%s%.1f\t%s\t%.1f\t%s\t%s\t%s\t\n", mark, p.Throughput, formatMS(a.Budget.Of(&p.Measurement)),
			p.AvgBatch(), formatMS(p.Queue), formatMS(p.Compute), within)
	}
	tw.Flush()

	b.WriteByte('\n')
	if len(a.Curve) > 1 {
		knee := fmt.Sprintf("batch %d", a.Knee)
		if a.Knee == a.Curve[len(a.Curve)-1].Batch {
			knee += ", the largest measured: the curve had not bent yet"
		}
		fmt.Fprintf(&b, "Knee: %s. Along the curve (batch b at %d×b requests an instance, delay %s), throughput and %s grew:",
			knee, perInstance, formatDuration(a.Profile.Delay), a.Budget.Stat())
		for i, s := range a.Steps {
			if i > 0 {
				b.WriteByte(';')
			}
			fmt.Fprintf(&b, " to %d %+.0f%% and %+.0f%%", s.Batch, s.ThroughputUp*100, s.LatencyUp*100)
		}
		b.WriteString(" (the knee is the last batch whose step raised throughput by a larger fraction than latency).\n")
	}
	switch {
	case a.FitOK:
		verdict := "batching pays"
		if !a.Fit.Pays() {
			verdict = "batching does not pay: compute grows linearly with the batch, so a row costs about as much in any batch"
		}
		fmt.Fprintf(&b, "Batch cost: compute a batch ≈ %s ms + %s ms a row (fitted on %d batch sizes up to %d; fixed share %.0f%%, a row at batch %d costs %.2f of one alone): %s.\n",
			signedMS(a.Fit.Fixed), signedMS(a.Fit.PerRow), a.Fit.Sizes, a.Fit.Largest, math.Max(a.Fit.FixedShare(), 0)*100,
			a.Fit.Largest, a.Fit.RowCost(a.Fit.Largest), verdict)
	case len(a.Curve) > 1:
		b.WriteString("Batch cost: too few batch sizes were executed to tell whether batching pays.\n")
	}
	for _, n := range a.Notes {
		fmt.Fprintf(&b, "Note: %s.\n", n)
	}
	if len(a.Finals) > 1 {
		fmt.Fprintf(&b, "\nThe best %d, measured again in %d rounds of rotating order (medians):\n", len(a.Finals), confirmRounds)
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "settings\tconcurrency\tmeasurements\tinfer/s\t%s ms\tbudget\t\n", a.Budget.Stat())
		for _, f := range a.Finals {
			within := "no"
			if f.Within {
				within = "yes"
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%.1f\t%s\t%s\t\n", f.Candidate.Label(), f.Concurrency, pointList(f.Points), f.Throughput, formatMS(f.Latency), within)
		}
		tw.Flush()
	}
	b.WriteByte('\n')
	if a.Chosen == nil {
		b.WriteString("Chosen: nothing was measured.\n")
	} else {
		fmt.Fprintf(&b, "Chosen: %s.\n", a.Reason)
		if a.Met && a.HoldsUpTo > 0 {
			fmt.Fprintf(&b, "These settings met the budget at every concurrency measured up to %d.\n", a.HoldsUpTo)
		}
		if p := a.Peak; p != nil {
			fmt.Fprintf(&b, "Their most within the budget: %.1f infer/s at %s %s ms, concurrency %d (#%d).\n",
				p.Throughput, a.Budget.Stat(), formatMS(a.Budget.Of(&p.Measurement)), p.Concurrency, p.N)
		}
		fmt.Fprintf(&b, "\n# %s: %s\n", a.Model, a.Chosen.Candidate)
		b.WriteString(a.Chosen.Candidate.Snippet(a.Kind))
	}
	fmt.Fprintf(&b, "\n%d measurements, %d reloads, %s.\n", len(a.Points), a.Loads, a.Elapsed.Round(time.Second))
	_, err := io.WriteString(w, b.String())
	return err
}

func signedMS(d time.Duration) string {
	if d < 0 {
		return "-" + formatMS(-d)
	}
	return formatMS(d)
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}

func joinDurations(ds []time.Duration) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = formatDuration(d)
	}
	return strings.Join(s, ", ")
}
