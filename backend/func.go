package backend

import "context"

// Func adapts an ordinary function into a [Backend], its [Model] and its
// [Instance], as http.HandlerFunc does for handlers: every model loaded
// through it runs f. The function is called for one batch at a time per
// instance, as Execute is.
type Func func(ctx context.Context, b *Batch) error

var (
	_ Backend  = Func(nil)
	_ Model    = Func(nil)
	_ Instance = Func(nil)
)

// Load returns f itself as the model.
func (f Func) Load(context.Context, *ModelSpec) (Model, error) { return f, nil }

// NewInstance returns f itself as the instance.
func (f Func) NewInstance(context.Context, InstanceSpec) (Instance, error) { return f, nil }

// Execute calls f.
func (f Func) Execute(ctx context.Context, b *Batch) error { return f(ctx, b) }

// Close does nothing.
func (f Func) Close() error { return nil }
