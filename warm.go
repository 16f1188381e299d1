package triton

import (
	"context"
	"fmt"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/repository"
	"github.com/triton-go/triton/tensor"
	"github.com/triton-go/triton/warmup"
)

// warm runs the config's model_warmup samples on every instance, before the
// version takes traffic (Triton warms each instance). Any failure fails the
// load.
func (v *version) warm(ctx context.Context, md repository.ModelDir) error {
	samples, err := warmup.Samples(v.cfg, md.FS)
	if err != nil {
		return withCode(InvalidArgument, err)
	}
	for _, s := range v.pool {
		for _, sm := range samples {
			for range sm.Count {
				r := &backend.Request{ID: "warmup " + sm.Name, Inputs: v.warmInputs(sm.Inputs), BatchSize: sm.BatchSize}
				healthy := v.execute(ctx, s, backend.NewBatch(v.sig.maxBatch > 0, r))
				err := r.Err()
				if err == nil {
					for _, out := range r.Outputs() {
						if _, cerr := v.sig.checkOutput(out, sm.BatchSize); cerr != nil {
							err = cerr
							break
						}
					}
				}
				if err != nil || !healthy {
					return withCode(Internal, fmt.Errorf("warm-up sample '%s' failed on instance %s: %w", sm.Name, s.spec.Name, err))
				}
			}
		}
	}
	return nil
}

// warmInputs gives the backend the config's reshape, as requests get it.
func (v *version) warmInputs(in []tensor.Tensor) []tensor.Tensor {
	for i := range in {
		if ts := v.sig.input(in[i].Name); ts != nil && ts.reshape != nil {
			in[i].Shape = v.sig.reshape(in[i].Shape, ts.dims, ts.reshape, !ts.shared)
		}
	}
	return in
}
