package main

import (
	"context"
	"net"
)

// listen opens a TCP listener on addr; with reusePort (--reuse-http-port,
// --reuse-grpc-port) the socket gets SO_REUSEPORT, so that several
// servers that all set it share the port and the kernel spreads
// connections among them.
func listen(ctx context.Context, addr string, reusePort bool) (net.Listener, error) {
	var lc net.ListenConfig
	if reusePort {
		lc.Control = reusePortControl
	}
	return lc.Listen(ctx, "tcp", addr)
}
