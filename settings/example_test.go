package settings_test

import (
	"errors"
	"fmt"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/triton-go/triton/settings"
)

// One store serves every protocol: a change made over one is seen over the
// other, as in Triton.
func Example() {
	level := zap.NewAtomicLevelAt(zapcore.InfoLevel)
	store := settings.NewStore(&level) // give it to httpapi.WithSettings and grpcapi.WithSettings

	// POST /v2/logging {"log_verbose_level":1}
	verbose := uint32(1)
	if _, err := store.UpdateLog(settings.HTTP, settings.LogUpdate{VerboseLevel: &verbose}); err != nil {
		panic(err)
	}
	fmt.Println("level:", level.Level(), "verbose:", store.Log().VerboseLevel)

	// TraceSetting {model_name: "simple", settings: {trace_rate: ["10"]}}
	t, err := store.UpdateTrace(settings.GRPC, "simple", settings.TraceUpdate{settings.KeyTraceRate: {"10"}})
	if err != nil {
		panic(err)
	}
	fmt.Println("simple:", t.Level.Names(), t.Rate, t.Count)
	fmt.Println("global:", store.Trace("").Rate)

	// A refused update changes nothing; its message is Triton's.
	_, err = store.UpdateTrace(settings.GRPC, "", settings.TraceUpdate{settings.KeyTraceCount: {"-2"}})
	fmt.Println(err, errors.Is(err, settings.ErrInvalid))
	// Output:
	// level: debug verbose: 1
	// simple: [OFF] 10 -1
	// global: 1000
	// Unable to parse 'trace_count'. Expecting value >= -1, got: -2 true
}
