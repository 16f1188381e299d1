package testmodels

import "github.com/triton-go/triton/internal/repeat"

// RepeatConfig is the configuration of a decoupled model served by
// [Repeat] under the backend name "repeat" (see [repeat.Config]).
const RepeatConfig = repeat.Config

// Repeat is the decoupled repeat_int32 backend of package repeat, with its
// counters for tests.
type Repeat = repeat.Backend
