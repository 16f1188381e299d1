// Package findup finds a file by a path relative to the working directory
// or the nearest of its parents that has it: how the backends find the
// native libraries `make deps` keeps in a checkout's .cache, from a test
// in any package folder or a binary run from the checkout.
package findup
