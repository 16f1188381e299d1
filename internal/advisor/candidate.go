package advisor

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Candidate is one setting of the model's batching and instances: what
// the advice changes in its config.pbtxt, everything else kept.
type Candidate struct {
	// Instances is the instance_group count.
	Instances int
	// MaxBatch is max_batch_size (0: the model takes no batch dimension).
	MaxBatch int
	// Dynamic turns dynamic_batching on, with Preferred (none when
	// empty) and Delay as preferred_batch_size and
	// max_queue_delay_microseconds.
	Dynamic   bool
	Preferred []int
	Delay     time.Duration
}

// Equal reports whether c and o set the same config.
func (c Candidate) Equal(o Candidate) bool {
	if c.Instances != o.Instances || c.MaxBatch != o.MaxBatch || c.Dynamic != o.Dynamic {
		return false
	}
	return !c.Dynamic || (c.Delay == o.Delay && slices.Equal(c.Preferred, o.Preferred))
}

// waits is the longest a request may wait for its batch: the delay with
// dynamic batching, 0 without.
func (c Candidate) waits() time.Duration {
	if !c.Dynamic {
		return 0
	}
	return c.Delay
}

// preferredString is the preferred sizes as a table cell: "16", "8,16",
// "-" for none.
func (c Candidate) preferredString() string {
	if !c.Dynamic || len(c.Preferred) == 0 {
		return "-"
	}
	s := make([]string, len(c.Preferred))
	for i, p := range c.Preferred {
		s[i] = strconv.Itoa(p)
	}
	return strings.Join(s, ",")
}

func (c Candidate) delayString() string {
	if !c.Dynamic {
		return "-"
	}
	return formatDuration(c.Delay)
}

// String is a short description: "2 instances, max_batch_size 16,
// dynamic batching (preferred 16, delay 1ms)".
func (c Candidate) String() string {
	s := fmt.Sprintf("%d instance", c.Instances)
	if c.Instances != 1 {
		s += "s"
	}
	s += fmt.Sprintf(", max_batch_size %d", c.MaxBatch)
	if !c.Dynamic {
		return s + ", no dynamic batching"
	}
	return s + fmt.Sprintf(", dynamic batching (preferred %s, delay %s)", c.preferredString(), formatDuration(c.Delay))
}

// Label is c as a table cell or a legend entry: "2×, max_batch 16,
// preferred 16, delay 1ms" or "2×, max_batch 8, no dynamic batching".
func (c Candidate) Label() string {
	if !c.Dynamic {
		return fmt.Sprintf("%d×, max_batch %d, no dynamic batching", c.Instances, c.MaxBatch)
	}
	return fmt.Sprintf("%d×, max_batch %d, preferred %s, delay %s", c.Instances, c.MaxBatch, c.preferredString(), formatDuration(c.Delay))
}

// Snippet is c as config.pbtxt text: max_batch_size, dynamic_batching
// (when on) and instance_group, the group of kind (KIND_CPU when empty).
func (c Candidate) Snippet(kind string) string {
	if kind == "" {
		kind = "KIND_CPU"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "max_batch_size: %d\n", c.MaxBatch)
	if c.Dynamic {
		b.WriteString("dynamic_batching {\n")
		if len(c.Preferred) > 0 {
			fmt.Fprintf(&b, "  preferred_batch_size: [ %s ]\n", strings.ReplaceAll(c.preferredString(), ",", ", "))
		}
		fmt.Fprintf(&b, "  max_queue_delay_microseconds: %d\n", c.Delay.Microseconds())
		b.WriteString("}\n")
	}
	fmt.Fprintf(&b, "instance_group [ { count: %d kind: %s } ]\n", c.Instances, kind)
	return b.String()
}
