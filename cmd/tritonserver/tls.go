package main

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"

	"github.com/triton-go/triton/grpcapi"
)

// grpcServerOptions are grpcapi's options plus the gRPC flags: TLS
// (--grpc-use-ssl, --grpc-use-ssl-mutual and the PEM files) and the
// keepalive and HTTP/2 ping policy. The keepalive options come after
// grpcapi's, so they replace its enforcement policy.
func grpcServerOptions(cfg config) ([]grpc.ServerOption, error) {
	params, policy := keepaliveOptions(cfg.grpcKeepalive)
	opts := append(grpcapi.ServerOptions(), grpc.KeepaliveParams(params), grpc.KeepaliveEnforcementPolicy(policy))
	if cfg.grpcTLS.use {
		tc, err := serverTLS(cfg.grpcTLS)
		if err != nil {
			return nil, err
		}
		opts = append(opts, grpc.Creds(credentials.NewTLS(tc)))
	}
	return opts, nil
}

// keepaliveOptions maps tritonserver's keepalive flags, which are gRPC
// core's channel arguments, to grpc-go's:
//
//	--grpc-keepalive-time                   ServerParameters.Time (ping an idle connection after; default 2 h)
//	--grpc-keepalive-timeout                ServerParameters.Timeout (close when the ping's ack is this late; 20 s)
//	--grpc-max-connection-age               ServerParameters.MaxConnectionAge (0: none)
//	--grpc-max-connection-age-grace         ServerParameters.MaxConnectionAgeGrace (0: none)
//	--grpc-http2-min-recv-ping-interval-without-data  EnforcementPolicy.MinTime (5 min)
//	--grpc-keepalive-permit-without-calls   EnforcementPolicy.PermitWithoutStream (false)
//
// With PermitWithoutStream false, grpc-go, like gRPC core, counts a
// client's ping on a connection without calls as bad unless two hours
// passed since the previous one. --grpc-http2-max-ping-strikes (grpc-go
// always allows two bad pings and closes the connection at the third, the
// default) and --grpc-http2-max-pings-without-data have no grpc-go
// equivalent; config.check warns when they differ from the defaults.
func keepaliveOptions(k keepaliveFlags) (keepalive.ServerParameters, keepalive.EnforcementPolicy) {
	ms := func(n int) time.Duration { return time.Duration(max(n, 0)) * time.Millisecond }
	params := keepalive.ServerParameters{
		Time:                  ms(k.timeMS),
		Timeout:               ms(k.timeoutMS),
		MaxConnectionAge:      ms(k.maxConnectionAgeMS),
		MaxConnectionAgeGrace: ms(k.ageGraceMS),
	}
	policy := keepalive.EnforcementPolicy{
		MinTime:             ms(k.minRecvPingIntervalWithoutDataMS),
		PermitWithoutStream: k.permitWithoutCalls,
	}
	return params, policy
}

// serverTLS reads the server's certificate and key and, for mutual TLS,
// the root certificates clients' certificates must chain to: a client
// without a valid certificate is refused during the handshake.
func serverTLS(f tlsFiles) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(f.cert, f.key)
	if err != nil {
		return nil, fmt.Errorf("--grpc-server-cert %s, --grpc-server-key %s: %w", f.cert, f.key, err)
	}
	tc := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if f.mutual {
		pem, err := os.ReadFile(f.rootCerts)
		if err != nil {
			return nil, fmt.Errorf("--grpc-root-cert: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--grpc-root-cert %s: no PEM certificate in the file", f.rootCerts)
		}
		tc.ClientCAs = pool
		tc.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return tc, nil
}
