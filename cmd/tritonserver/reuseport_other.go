//go:build !(linux || darwin || dragonfly || freebsd || netbsd || openbsd)

package main

import (
	"errors"
	"syscall"
)

// reusePortControl refuses: this platform has no SO_REUSEPORT.
func reusePortControl(network, address string, c syscall.RawConn) error {
	return errors.New("--reuse-http-port and --reuse-grpc-port need SO_REUSEPORT, which this platform lacks")
}
