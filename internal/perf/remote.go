package perf

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"

	"github.com/triton-go/triton/client"
)

// remote.go turns perf_analyzer's client options (-H, the --ssl-* files,
// --grpc-compression-algorithm, the tensor formats) into [client.Option]s
// for [client.NewHTTP] and [client.NewGRPC].

// remoteSettings are the client options as given.
type remoteSettings struct {
	headers     [][2]string
	compression string // --grpc-compression-algorithm: "", none, gzip or deflate
	jsonTensors bool

	grpcSSL                      bool
	grpcRoot, grpcKey, grpcChain string
	https                        bool // some --ssl-https-* option was given
	verifyPeer, verifyHost       int
	caFile, certFile, keyFile    string
	certType, keyType            string // PEM or DER
}

// ClientOptions returns the client options for cfg: its headers, TLS for
// gRPC (--ssl-grpc-use-ssl) or HTTPS (any --ssl-https-* option), gRPC
// compression, JSON tensors, and a keep-alive pool as large as the
// highest concurrency.
func ClientOptions(cfg *Config) ([]client.Option, error) {
	r := &cfg.remote
	var opts []client.Option
	for _, h := range r.headers {
		opts = append(opts, client.WithHeader(h[0], h[1]))
	}
	if r.jsonTensors && cfg.Protocol == HTTP {
		opts = append(opts, client.WithJSONTensors())
	}
	switch r.compression {
	case "gzip":
		opts = append(opts, client.WithCompression(client.Gzip, client.Gzip))
	case "deflate":
		opts = append(opts, client.WithCompression(client.Deflate, client.Deflate))
	}
	if n := max(cfg.Concurrency.Start, cfg.Concurrency.End); n > client.DefaultMaxIdleConnsPerHost {
		opts = append(opts, client.WithMaxIdleConnsPerHost(int(n)))
	}
	var tc *tls.Config
	var err error
	switch {
	case cfg.Protocol == GRPC && r.grpcSSL:
		tc, err = grpcTLS(r)
	case cfg.Protocol == HTTP && r.https:
		tc, err = httpsTLS(r)
	}
	if err != nil {
		return nil, err
	}
	if tc != nil {
		opts = append(opts, client.WithTLS(tc))
	}
	return opts, nil
}

// grpcTLS is gRPC's SslCredentialsOptions: root certificates (the
// system's when not given), and a client key and certificate chain.
func grpcTLS(r *remoteSettings) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if r.grpcRoot != "" {
		pool, err := certPool(r.grpcRoot, "PEM")
		if err != nil {
			return nil, err
		}
		tc.RootCAs = pool
	}
	if r.grpcKey != "" || r.grpcChain != "" {
		cert, err := keyPair(r.grpcChain, "PEM", r.grpcKey, "PEM")
		if err != nil {
			return nil, err
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// httpsTLS is libcurl's reading of the --ssl-https-* options:
// verify-peer 0 accepts any certificate; verify-host 0 checks the chain
// but not the host name (1 is treated as 2, as current libcurl does).
func httpsTLS(r *remoteSettings) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if r.caFile != "" {
		pool, err := certPool(r.caFile, "PEM")
		if err != nil {
			return nil, err
		}
		tc.RootCAs = pool
	}
	if r.certFile != "" || r.keyFile != "" {
		cert, err := keyPair(r.certFile, r.certType, r.keyFile, r.keyType)
		if err != nil {
			return nil, err
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	switch {
	case r.verifyPeer == 0:
		tc.InsecureSkipVerify = true
	case r.verifyHost == 0:
		// Verify the chain, not the name.
		tc.InsecureSkipVerify = true
		roots := tc.RootCAs
		tc.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the server sent no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter})
			return err
		}
	}
	return tc, nil
}

func certPool(path, typ string) (*x509.CertPool, error) {
	der, err := readCerts(path, typ)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	for _, d := range der {
		c, err := x509.ParseCertificate(d)
		if err != nil {
			return nil, fmt.Errorf("certificate file '%s': %w", path, err)
		}
		pool.AddCert(c)
	}
	return pool, nil
}

// readCerts reads the certificates of a PEM or DER file.
func readCerts(path, typ string) ([][]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("failed to read certificate file '%s': %w", path, err)
	}
	if typ == "DER" {
		return [][]byte{b}, nil
	}
	var der [][]byte
	for {
		var blk *pem.Block
		blk, b = pem.Decode(b)
		if blk == nil {
			break
		}
		if blk.Type == "CERTIFICATE" {
			der = append(der, blk.Bytes)
		}
	}
	if len(der) == 0 {
		return nil, fmt.Errorf("certificate file '%s' holds no PEM certificate", path)
	}
	return der, nil
}

// keyPair reads a certificate (chain) and its private key, each PEM or
// DER.
func keyPair(certPath, certType, keyPath, keyType string) (tls.Certificate, error) {
	if certPath == "" || keyPath == "" {
		return tls.Certificate{}, errors.New("a client certificate needs both the certificate and the private key files")
	}
	der, err := readCerts(certPath, certType)
	if err != nil {
		return tls.Certificate{}, err
	}
	kb, err := os.ReadFile(keyPath)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("failed to read private key file '%s': %w", keyPath, err)
	}
	if keyType == "PEM" {
		blk, _ := pem.Decode(kb)
		if blk == nil {
			return tls.Certificate{}, fmt.Errorf("private key file '%s' holds no PEM block", keyPath)
		}
		kb = blk.Bytes
	}
	var key any
	if key, err = x509.ParsePKCS8PrivateKey(kb); err != nil {
		if key, err = x509.ParsePKCS1PrivateKey(kb); err != nil {
			if key, err = x509.ParseECPrivateKey(kb); err != nil {
				return tls.Certificate{}, fmt.Errorf("private key file '%s': not a PKCS#8, PKCS#1 or EC private key", keyPath)
			}
		}
	}
	return tls.Certificate{Certificate: der, PrivateKey: key}, nil
}
