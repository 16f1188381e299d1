// Package responsecache is the in-process response cache a server uses for
// models that set response_cache { enable: true } in config.pbtxt (Triton's
// local cache, --cache-config local,size=N or --response-cache-byte-size=N):
// a response to a request seen before is answered without running the
// model.
//
// It follows Triton (protocol spec §6.9) where that is sound and fixes its
// weaknesses:
//
//   - The key covers the model name and version and, for every input
//     sorted by name, its name, data type, shape and data (Triton's code
//     hashes only names and data, so two requests that differ only in shape
//     share an answer). Requested outputs and request parameters are not
//     part of the key, as in Triton.
//   - A hit compares the stored key in full. The 128-bit XXH3 digest only
//     finds the candidates, so a hash collision can never return another
//     request's response (Triton trusts a 64-bit hash).
//   - Single flight: concurrent calls with the same key run the model once
//     and share the result; each waiter honours its own context.
//   - The capacity bounds the bytes of everything kept per entry (key,
//     output names, shapes and data, plus [EntryOverhead]); least recently
//     used entries are evicted first, and an entry larger than the whole
//     capacity is never stored.
//
// # Entry points
//
//   - [New] once per server, with the capacity in bytes.
//   - [Cache.Do] around each execution of a cache-enabled model: it returns
//     the cached outputs, or runs the given function once for all
//     concurrent callers with the same key and stores a successful result.
//     Its [Result] says whether the answer was a hit or shared and how long
//     the cache took, for the per-model cache_hit and cache_miss statistics.
//   - [Cache.Purge] when a model is unloaded or reloaded.
//   - [Cache.Stats] and [Cache.Len] for metrics and tests.
//
// Which requests may use the cache is the server's decision (Triton: models
// with the default or dynamic batching scheduler, not sequence or decoupled
// models; the repository package rejects those configurations). Only
// successful responses are stored.
//
// # Concurrency and ownership
//
// A [Cache] is safe for concurrent use and starts no goroutines: the first
// caller with a key (the leader) runs the function on its own goroutine and
// the others wait for it. One mutex guards the tables and the LRU list; it
// is never held while hashing, copying outputs or running the model, and
// keys are compared under it only when a miss races an identical request
// or meets a hash collision (see [Cache]).
//
// Inputs are borrowed for the duration of Do: the cache copies what its key
// needs when it stores an entry and never retains or modifies the caller's
// tensors. Outputs of a hit or a shared result are fresh copies the caller
// owns (one data buffer, each tensor 8-byte aligned for [tensor.View], and
// one shape slice); the leader gets the function's own outputs, which the
// cache copied before Do returned. Cached data therefore never changes,
// whatever callers do with their tensors.
//
// # Usage
//
//	cache := responsecache.New(1 << 30) // --response-cache-byte-size=1073741824
//	resp, res, err := cache.Do(ctx, "resnet", 1, req.Inputs, func() (responsecache.Response, error) {
//		return runModel(ctx, req) // the ordinary path: scheduler, instance, backend
//	})
//	if err == nil && res.Hit {
//		stats.cacheHit(res.Duration())
//	}
package responsecache
