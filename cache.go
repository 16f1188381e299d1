// cache.go is the response cache on the request path.

package triton

import (
	"context"
	"errors"

	"github.com/triton-go/triton/responsecache"
	"github.com/triton-go/triton/tensor"
)

// inferCached answers from the cache, or runs the request once for every
// concurrent identical request and caches a successful answer. The model
// runs with all its outputs, so that an answer serves any later request
// whatever outputs it asks for.
func (v *version) inferCached(ctx context.Context, req *InferRequest, batch int64, t *timing) (*InferResponse, error) {
	ran := false
	cached, res, err := v.cache.Do(ctx, v.name, v.number, req.Inputs, func() (responsecache.Response, error) {
		ran = true
		full := *req
		full.Outputs = nil
		rt := *t
		resp, err := v.run(ctx, &full, batch, &rt, nil)
		if err != nil {
			return responsecache.Response{}, err
		}
		return responsecache.Response{Outputs: resp.Outputs, Parameters: resp.Parameters}, nil
	})
	c := v.stats
	if ran {
		// A miss: the request ran and was counted as any other; add the
		// cache's lookup and insert.
		c.cacheMiss.Add(1)
		c.cacheMissNs.add(res.Duration())
		if err != nil {
			return nil, err // already an *Error, already counted
		}
	} else {
		if err != nil {
			code := classify(err, Internal)
			var e *Error
			if errors.As(err, &e) {
				code, err = e.Code, e.Err
			}
			return nil, v.fail(t, batch, v.errorf(req, code, err))
		}
		// A hit (or the shared answer of an identical request in flight):
		// no execution of its own.
		c.cacheHit.Add(1)
		c.cacheHitNs.add(res.Duration())
		t.cacheHit = true
		v.finish(t, batch, nil, 0)
	}
	outs := cached.Outputs
	resp := &InferResponse{Model: v.name, Version: v.number, ID: req.ID, Outputs: outs, Parameters: cached.Parameters}
	if len(req.Outputs) > 0 {
		resp.Outputs = resp.Outputs[:0:0]
		for _, name := range req.Outputs {
			if o, ok := find(outs, name); ok {
				resp.Outputs = append(resp.Outputs, o)
			}
		}
	}
	return resp, nil
}

func find(ts []tensor.Tensor, name string) (tensor.Tensor, bool) {
	for _, t := range ts {
		if t.Name == name {
			return t, true
		}
	}
	return tensor.Tensor{}, false
}
