// Package malloctrim gives memory that native libraries freed back to the
// system. glibc's allocator keeps freed memory in its arenas (one per
// thread that allocated, up to eight per core), so after a model's native
// runtime (ONNX Runtime, libtorch) frees its weights the process's
// resident memory often stays where it was: Triton's users meet this as
// "unloading a model does not free memory" (its server#3320) and work
// around it with LD_PRELOAD of tcmalloc or jemalloc. The server calls
// [Trim] after a model version closes.
package malloctrim
