//go:build !cgo

package main

import "github.com/triton-go/triton"

// cgoBackends is empty without cgo: the in-process server has the Go
// backends only.
func cgoBackends() []triton.Option { return nil }
