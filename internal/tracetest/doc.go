// Package tracetest reads Triton trace files (mode triton of package
// trace) for the tests of the packages that write them: each trace id's
// model record and stamps, in file order.
package tracetest
