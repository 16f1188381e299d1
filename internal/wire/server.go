package wire

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/settings"
	"github.com/triton-go/triton/sysshm"
)

// ErrSHMDisabled answers shared-memory calls when the adapter has no
// registry, with the message of Triton started without --allow-client-shm.
var ErrSHMDisabled = errorf(triton.Unsupported, "Client shared memory is disabled. Start the server with '--allow-client-shm=true' to enable.")

// SHMError gives an error of package sysshm its Triton code; the message,
// already Triton's, is kept.
func SHMError(err error) error {
	code := triton.Internal // the OS failing on a correctly named object
	switch {
	case errors.Is(err, sysshm.ErrNotFound):
		code = triton.NotFound
	case errors.Is(err, sysshm.ErrAlreadyExists):
		code = triton.AlreadyExists
	case errors.Is(err, sysshm.ErrInvalid):
		code = triton.InvalidArgument
	case errors.Is(err, errors.ErrUnsupported):
		code = triton.Unsupported
	}
	return &triton.Error{Code: code, Err: err}
}

// ReadSHM copies size bytes at offset out of a registered region (with
// sysshm.Copy): a backend reading the client's memory directly would crash
// the process if the client shrank the object meanwhile. r nil is
// [ErrSHMDisabled].
func ReadSHM(r *sysshm.Registry, region string, offset, size uint64) ([]byte, error) {
	if r == nil {
		return nil, ErrSHMDisabled
	}
	view, release, err := r.Use(region, offset, size)
	if err != nil {
		return nil, SHMError(err)
	}
	defer release()
	data := make([]byte, len(view))
	if _, err := sysshm.Copy(data, view); err != nil {
		return nil, SHMError(err)
	}
	return data, nil
}

// SettingsError gives an error of package settings its Triton code; the
// message, already Triton's, is kept.
func SettingsError(err error) error {
	code := triton.Internal
	switch {
	case errors.Is(err, settings.ErrInvalid):
		code = triton.InvalidArgument
	case errors.Is(err, settings.ErrUnavailable):
		code = triton.Unavailable
	case errors.Is(err, errors.ErrUnsupported):
		code = triton.Unsupported
	}
	return &triton.Error{Code: code, Err: err}
}

// extensionOrder is the order in which Triton lists protocol extensions
// (core server.cc).
var extensionOrder = []string{
	"classification", "sequence", "model_repository", "model_repository(unload_dependents)",
	"schedule_policy", "model_configuration", "system_shared_memory", "cuda_shared_memory",
	"binary_tensor_data", "parameters", "statistics", "trace", "logging",
}

// adapterExtensions are the extensions both adapters implement. "trace" is
// not among them: it is listed when the server reports it (a server with
// a tracer, which produces traces), not for the settings alone.
var adapterExtensions = []string{
	"classification", "model_repository", "model_repository(unload_dependents)", "schedule_policy",
	"model_configuration", "cuda_shared_memory", "binary_tensor_data", "parameters", "statistics", "logging",
}

// Extensions is the extension list of the server metadata, the same over
// both protocols: what the adapters implement (system_shared_memory only
// with a registry) or the server reports (core), in Triton's order, then
// what the server adds that Triton does not list.
func Extensions(core []string, sharedMemory bool) []string {
	has := func(e string) bool {
		if e == "system_shared_memory" {
			return sharedMemory
		}
		return slices.Contains(adapterExtensions, e) || slices.Contains(core, e)
	}
	var out []string
	for _, e := range extensionOrder {
		if has(e) {
			out = append(out, e)
		}
	}
	for _, e := range core {
		if !slices.Contains(extensionOrder, e) {
			out = append(out, e)
		}
	}
	return out
}

// Category is a class of endpoints or RPCs that a restriction
// (--http-restricted-api, --grpc-restricted-protocol) covers.
type Category uint8

// The categories, as Triton names them.
const (
	Health Category = iota
	Metadata
	Inference
	SharedMemory
	ModelConfig
	ModelRepository
	Statistics
	Trace
	Logging
	NumCategories
)

// CategoryNames are the categories' names, by Category.
var CategoryNames = [NumCategories]string{
	Health:          "health",
	Metadata:        "metadata",
	Inference:       "inference",
	SharedMemory:    "shared-memory",
	ModelConfig:     "model-config",
	ModelRepository: "model-repository",
	Statistics:      "statistics",
	Trace:           "trace",
	Logging:         "logging",
}

// ParseCategories reads a comma-separated list of category names (as the
// restriction flags write them).
func ParseCategories(list string) ([]Category, error) {
	var cats []Category
	for name := range strings.SplitSeq(list, ",") {
		name = strings.TrimSpace(name)
		c, ok := ParseCategory(name)
		if !ok {
			return nil, fmt.Errorf("unknown category %q (want one of %s)", name, strings.Join(CategoryNames[:], ", "))
		}
		cats = append(cats, c)
	}
	return cats, nil
}

// ParseCategory returns the category named name.
func ParseCategory(name string) (Category, bool) {
	i := slices.Index(CategoryNames[:], name)
	return Category(i), i >= 0
}
