package backend

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
)

var registry struct {
	mu sync.RWMutex
	// mu protects the following.
	backends map[string]registered
}

type registered struct {
	b     Backend
	where string // file:line of the Register call
}

// Register makes a backend available under name, the string used by the
// `backend:` field of config.pbtxt (for example "onnxruntime"). It is meant
// to be called from an init function of the backend's package, so that a
// blank import enables the backend.
//
// Register panics if b is nil, name is empty, or name is already registered;
// the panic names the file and line of both registrations. A server can
// override or extend the process-wide table with the root package's
// WithBackend option, which is what tests should use.
func Register(name string, b Backend) {
	where := "unknown"
	if _, file, line, ok := runtime.Caller(1); ok {
		where = fmt.Sprintf("%s:%d", file, line)
	}
	if name == "" {
		panic("backend: Register with an empty name at " + where)
	}
	if b == nil {
		panic(fmt.Sprintf("backend: Register of backend %q with a nil Backend at %s", name, where))
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if prev, dup := registry.backends[name]; dup {
		panic(fmt.Sprintf("backend: backend %q registered twice: at %s and at %s", name, prev.where, where))
	}
	if registry.backends == nil {
		registry.backends = make(map[string]registered)
	}
	registry.backends[name] = registered{b: b, where: where}
}

// Lookup returns the backend registered under name.
func Lookup(name string) (Backend, bool) {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	r, ok := registry.backends[name]
	return r.b, ok
}

// Backends returns the names of the registered backends, sorted.
func Backends() []string {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	names := make([]string, 0, len(registry.backends))
	for name := range registry.backends {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
