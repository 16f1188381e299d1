// Package sysshm is Triton's system shared-memory registry (the
// system_shared_memory extension, protocol §1.11): clients create a POSIX
// shared-memory object, register a byte range of it under a region name, and
// then pass tensors by reference (shared_memory_region, _offset, _byte_size
// parameters) instead of in the request body. An application makes one
// [Registry] per server and hands it to each adapter it runs (for HTTP,
// httpapi.WithSharedMemory), so that every protocol sees the same regions.
// It imports nothing of this module.
//
// # Entry points
//
//   - [NewRegistry] once per server; [Registry.Close] at shutdown.
//   - [Registry.Register], [Registry.Unregister], [Registry.UnregisterAll]
//     and [Registry.Status] back the register, unregister and status calls;
//     [Region] is one entry of a status answer.
//   - [Registry.Use] resolves a tensor's region, offset and byte size to the
//     bytes, for an input to read or an output to write, and returns a
//     release function to call once the request is done with them. There is
//     deliberately no variant without a release: see [Registry] for why.
//   - [Copy] copies into or out of such bytes and survives a client that
//     truncated its object (which would otherwise crash the process).
//
// # Security
//
// A key must be a POSIX shared-memory name ("/name": one leading slash, no
// other, no "..", no NUL, at most [MaxKeyLen] bytes, not containing
// [ReservedPrefix]). It resolves to /dev/shm/name only, opened with
// O_NOFOLLOW and required to be a regular file, so a client cannot map an
// arbitrary file of the server (a symbolic link in /dev/shm is refused
// wherever it points). The registered range is checked against the object's
// size at registration and every [Registry.Use] against the registered
// range. Whether clients may register memory at all (Triton's
// --allow-client-shm, off by default) is the adapters' decision.
//
// # Concurrency and ownership
//
// All methods are safe for concurrent use. Memory from [Registry.Use] aliases
// the client's shared memory and is valid until its release function is
// called, even across an Unregister or Close of its region: those remove the
// name at once and leave the unmap to the last release. The [Region] slices
// [Registry.Status] returns are copies owned by the caller.
//
// # Errors
//
// Errors wrap [ErrNotFound], [ErrAlreadyExists] or [ErrInvalid] (map them to
// Triton's NOT_FOUND, ALREADY_EXISTS and INVALID_ARG), or only an OS error
// when opening or mapping a correctly named object fails (Triton's
// INTERNAL). Messages follow Triton's wording.
//
// # Platforms
//
// Linux only; elsewhere Register fails with an error wrapping
// [errors.ErrUnsupported] and the registry stays empty.
//
// # Usage
//
//	reg := sysshm.NewRegistry()
//	defer reg.Close()
//	// POST /v2/systemsharedmemory/region/in/register {"key":"/in","byte_size":64}
//	if err := reg.Register("in", "/in", 0, 64); err != nil { ... }
//	// an input tensor with shared_memory_region "in", _offset 16, _byte_size 32
//	data, release, err := reg.Use("in", 16, 32)
//	if err != nil { ... }
//	defer release()
//	... read data, or write an output into it ...
package sysshm
