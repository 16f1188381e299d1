package client

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/sysshm"
	"github.com/triton-go/triton/tensor"
)

// Repository is the model repository extension: explicit model control.
// *HTTP, *GRPC and the Conn of [Local] implement it; reach it from a Conn
// with a type assertion:
//
//	if r, ok := conn.(client.Repository); ok { err = r.Load(ctx, "m", nil) }
type Repository interface {
	// Load loads or reloads a model, with the overrides of opts (nil:
	// none). It returns once the load has finished. Servers refuse it
	// with Unavailable outside explicit model control.
	Load(ctx context.Context, model string, opts *triton.LoadOptions) error
	// Unload unloads a model (opts nil: without its dependents) and
	// returns once no version of it serves.
	Unload(ctx context.Context, model string, opts *triton.UnloadOptions) error
	// Index lists the models of the repository and the state of their
	// versions.
	Index(ctx context.Context) ([]triton.ModelState, error)
}

// SystemSharedMemory is the system shared-memory extension: regions of
// POSIX shared memory registered with the server by name, which requests
// then name instead of carrying tensor data (see [Region]). *HTTP, *GRPC
// and the Conn of [Local] implement it.
type SystemSharedMemory interface {
	// RegisterSystemSharedMemory registers size bytes at offset of the
	// POSIX shared-memory object key ("/name", as shm_open names it)
	// under name. Servers refuse it with Unsupported unless client
	// shared memory is enabled (tritonserver --allow-client-shm=true).
	RegisterSystemSharedMemory(ctx context.Context, name, key string, offset, size uint64) error
	// UnregisterSystemSharedMemory unregisters the region name, or every
	// region for name "".
	UnregisterSystemSharedMemory(ctx context.Context, name string) error
	// SystemSharedMemoryStatus lists the region name, or every region
	// for name "", sorted by name.
	SystemSharedMemoryStatus(ctx context.Context, name string) ([]sysshm.Region, error)
}

// Region places a tensor in a registered system shared-memory region
// instead of the request or response: Triton's shared_memory_region,
// shared_memory_offset and shared_memory_byte_size tensor parameters. Set
// it on a request with [InputInRegion] and [OutputInRegion].
type Region struct {
	// Name is the name the region was registered under.
	Name string
	// Offset is where the tensor starts, from the start of the region.
	Offset uint64
	// ByteSize is the size of the tensor's bytes (for an input, exactly
	// its data; for an output, room for it).
	ByteSize uint64
}

// Keys of the request parameters that carry regions. The values are
// Region, a type no server accepts as a parameter, so a request that
// reaches a server without passing through this package fails instead of
// losing its regions.
const (
	inputRegionKey  = "client.input_region/"
	outputRegionKey = "client.output_region/"
)

// InputInRegion makes the input named input of req read its data from r,
// a range of a region registered with the server, instead of the
// request. The input must be in req.Inputs with its name, datatype and
// shape, and no Data. The setting is a request parameter of a type of
// this package's, so call it after setting req.Parameters; only the
// clients of this package understand it ([*triton.Server] refuses the
// request with InvalidArgument).
func InputInRegion(req *triton.InferRequest, input string, r Region) {
	setRegion(req, inputRegionKey+input, r)
}

// OutputInRegion makes the server write the output named output of req
// into r, a range of a region registered with the server, instead of the
// response: the response then lists the output (name, datatype, shape)
// with no Data, and the bytes are in the region once the response has
// arrived. It adds output to req.Outputs when missing (a request with
// Outputs returns only those outputs). Call it after setting
// req.Parameters, as [InputInRegion].
func OutputInRegion(req *triton.InferRequest, output string, r Region) {
	if len(req.Outputs) == 0 || !slices.Contains(req.Outputs, output) {
		req.Outputs = append(req.Outputs, output)
	}
	setRegion(req, outputRegionKey+output, r)
}

func setRegion(req *triton.InferRequest, key string, r Region) {
	if req.Parameters == nil {
		req.Parameters = map[string]any{}
	}
	req.Parameters[key] = r
}

// placement is where a request's tensors go: the regions of its inputs
// and outputs, and its other parameters.
type placement struct {
	inputs, outputs map[string]Region
	params          map[string]any // the request's parameters without the regions
}

// regions reads the regions of req's parameters. ok is false when req has
// none (the common case, which costs one pass over the parameters).
func regions(req *triton.InferRequest) (p placement, ok bool, err error) {
	for k := range req.Parameters {
		if strings.HasPrefix(k, inputRegionKey) || strings.HasPrefix(k, outputRegionKey) {
			ok = true
			break
		}
	}
	if !ok {
		return placement{params: req.Parameters}, false, nil
	}
	a := aboutRequest(req)
	for k, v := range req.Parameters {
		var (
			name string
			dst  *map[string]Region
		)
		if n, found := strings.CutPrefix(k, inputRegionKey); found {
			name, dst = n, &p.inputs
		} else if n, found := strings.CutPrefix(k, outputRegionKey); found {
			name, dst = n, &p.outputs
		} else {
			if p.params == nil {
				p.params = make(map[string]any, len(req.Parameters))
			}
			p.params[k] = v
			continue
		}
		r, isRegion := v.(Region)
		if !isRegion {
			return p, true, localError(triton.InvalidArgument, a, fmt.Errorf("parameter '%s' is a %T, not a client.Region", k, v))
		}
		if *dst == nil {
			*dst = map[string]Region{}
		}
		(*dst)[name] = r
	}
	for name := range p.inputs {
		i := slices.IndexFunc(req.Inputs, func(t tensor.Tensor) bool { return t.Name == name })
		if i < 0 {
			return p, true, localError(triton.InvalidArgument, a, fmt.Errorf("input '%s' has a shared-memory region but is not among the request's inputs", name))
		}
		if len(req.Inputs[i].Data) > 0 {
			return p, true, localError(triton.InvalidArgument, a, fmt.Errorf("input '%s' has both data and a shared-memory region", name))
		}
	}
	for name := range p.outputs {
		if !slices.Contains(req.Outputs, name) {
			return p, true, localError(triton.InvalidArgument, a, fmt.Errorf("output '%s' has a shared-memory region but is not among the request's outputs", name))
		}
	}
	return p, true, nil
}
