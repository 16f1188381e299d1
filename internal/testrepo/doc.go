// Package testrepo builds a model repository in a test's temporary folder
// and serves it, for the tests of the backends.
package testrepo
