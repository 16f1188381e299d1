package pytorch

import (
	"errors"
	"fmt"

	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/cgo/torchrun"
)

var (
	_ backend.MemoryReporter = (*model)(nil)
	_ backend.MemoryReporter = (*instance)(nil)
)

// MemoryBytes reports the bytes of the parameters and buffers of the
// module the model holds: the one Load loaded until an instance takes it,
// or the one its instances share under ENABLE_WEIGHT_SHARING; 0 when it
// holds none. Each loaded module is counted once, by whichever of the
// model and its instances owns it. The size is measured at load, so the
// call reads a field; it fails only when the shim did not measure it (a
// shim built before the measure).
func (m *model) MemoryBytes() (int64, error) {
	m.mu.Lock()
	mod := m.first
	m.mu.Unlock()
	if mod == nil {
		return 0, nil
	}
	return stateBytes(mod)
}

// MemoryBytes reports the bytes of the parameters and buffers of the
// instance's own module, measured at load as the model's are; 0 for an
// instance sharing the model's module (ENABLE_WEIGHT_SHARING), which the
// model reports.
func (i *instance) MemoryBytes() (int64, error) {
	if i.shared {
		return 0, nil
	}
	return stateBytes(i.mod)
}

// stateBytes returns mod's measure, or why there is none.
func stateBytes(mod *torchrun.Module) (int64, error) {
	n, ok := mod.StateBytes()
	if !ok {
		return 0, fmt.Errorf("the PyTorch shim did not measure the module's parameters and buffers (one built before the measure does not; rebuild it with scripts/build-torch-shim.sh): %w", errors.ErrUnsupported)
	}
	return n, nil
}
