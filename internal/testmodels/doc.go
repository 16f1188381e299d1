// Package testmodels holds the small Go backends and repository helpers
// that the tests of several packages (the root, httpapi, grpcapi) serve
// models with: an identity, Triton's "simple" add/sub, a parameter echo, a
// backend that blocks until its request's context ends, Triton's decoupled
// repeat_int32 model ([Repeat]), and the table of datatypes with their config and wire names.
//
//	srv, err := triton.New(
//		triton.WithRepository(testmodels.MapFS(files)),
//		triton.WithBackend("mirror", testmodels.Mirror))
package testmodels
