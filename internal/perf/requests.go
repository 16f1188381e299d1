package perf

import (
	"fmt"

	"github.com/triton-go/triton/client"
	"github.com/triton-go/triton/tensor"
)

// requests.go turns the data set into requests, all built before the load
// starts, so that sending one costs no allocation and no copy: a worker
// points its request at a prepared input list and sends it.

// prepared is one request's inputs (batch-concatenated) and, with
// validation data, the outputs it must produce.
type prepared struct {
	inputs   []tensor.Tensor
	expected []tensor.Tensor
	// inRegions place the inputs in shared memory (--shared-memory
	// system); the inputs then have no Data.
	inRegions []client.Region
}

// requestSet is every request the load sends. cycle serves models
// without sequences: a batch of b takes b consecutive steps of stream 0,
// the j-th request starting at step (j·b) mod steps, as perf_analyzer's
// InferContext does. streams serves sequence models: stream s, step k, in
// order (batch size 1).
type requestSet struct {
	cycle   []prepared
	streams [][]prepared
}

// prepareRequests builds the request set. batch is -b; shapes the inputs'
// default shapes.
func prepareRequests(ds *dataSet, m *modelInfo, shapes map[string][]int64, batch int64) (*requestSet, error) {
	rs := &requestSet{}
	if m.sequence {
		for _, st := range ds.streams {
			var ps []prepared
			for k := range st {
				p, err := prepareBatch(st, k, 1, m, shapes)
				if err != nil {
					return nil, err
				}
				ps = append(ps, p)
			}
			rs.streams = append(rs.streams, ps)
		}
		return rs, nil
	}
	steps := ds.streams[0]
	n := int64(len(steps))
	cycle := n / gcd(n, batch)
	for j := range cycle {
		p, err := prepareBatch(steps, int((j*batch)%n), batch, m, shapes)
		if err != nil {
			return nil, err
		}
		rs.cycle = append(rs.cycle, p)
	}
	return rs, nil
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// prepareBatch concatenates batch steps from first (wrapping around) into
// one request. A batching model's inputs get the batch dimension in front;
// shape tensors are not batched (step first's value is sent).
func prepareBatch(steps []step, first int, batch int64, m *modelInfo, shapes map[string][]int64) (prepared, error) {
	var p prepared
	for _, in := range m.inputs {
		count := batch
		if in.shapeTensor {
			count = 1
		}
		var data []byte
		var shape []int64
		present := 0
		for c := range count {
			st := steps[(int64(first)+c)%int64(len(steps))]
			td, ok := st.inputs[in.name]
			if !ok {
				continue
			}
			present++
			s := shapes[in.name]
			if td.shape != nil {
				s = td.shape
			}
			if c == 0 {
				shape = s
			} else if !equalShape(s, shape) {
				return p, fmt.Errorf("can not batch tensors with different shapes together (input '%s' expected shape %s and received %s", in.name, shapeString(shape), shapeString(s))
			}
			if count == 1 {
				data = td.data
			} else {
				data = append(data, td.data...)
			}
		}
		if present == 0 {
			if in.optional {
				continue
			}
			return p, fmt.Errorf("unable to find data for input '%s'.", in.name)
		}
		if present != int(count) {
			return p, fmt.Errorf("unable to find data for input '%s' in every step of a batch of %d.", in.name, count)
		}
		full := shape
		if m.maxBatch > 0 && !in.shapeTensor {
			full = append([]int64{batch}, shape...)
		}
		t, err := tensor.New(in.name, in.dtype, full, data)
		if err != nil {
			return p, fmt.Errorf("input '%s': %w", in.name, err)
		}
		p.inputs = append(p.inputs, t)
	}
	for _, out := range m.outputs {
		var data []byte
		present := 0
		for c := range batch {
			st := steps[(int64(first)+c)%int64(len(steps))]
			td, ok := st.outputs[out.name]
			if !ok {
				continue
			}
			present++
			data = append(data, td.data...)
		}
		if present == 0 {
			continue
		}
		if present != int(batch) {
			return p, fmt.Errorf("validation data for output '%s' is missing in some steps of a batch of %d", out.name, batch)
		}
		p.expected = append(p.expected, tensor.Tensor{Name: out.name, DataType: out.dtype, Data: data})
	}
	return p, nil
}

func equalShape(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
