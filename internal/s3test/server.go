package s3test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/triton-go/triton/internal/testenv"
)

// Region is the region the server is started with (versitygw's default).
const Region = "us-east-1"

// startTimeout bounds how long Start waits for the server to answer.
const startTimeout = 30 * time.Second

// Server is a running versitygw serving S3 over HTTP on loopback. Its
// fields are fixed once Start returns; its methods are safe for concurrent
// use.
type Server struct {
	// Addr is the host:port the server listens on (127.0.0.1:PORT).
	Addr string
	// Endpoint is the base URL for S3 clients: http://127.0.0.1:PORT.
	Endpoint string
	// AccessKey and SecretKey are the root account's keys, random for each
	// server, so that a test can check a secret never shows in an error.
	AccessKey, SecretKey string
	// Root is the folder the posix back end keeps buckets in: one
	// subfolder per bucket, one file per object.
	Root string

	client    *s3.Client
	transport *http.Transport
}

// Binary returns the path of the versitygw binary Start runs, after
// checking it is there (testenv.Need semantics: skip, or fail under
// CI=true).
func Binary(tb testing.TB) string {
	tb.Helper()
	bin := filepath.Join(testenv.RepoRoot(tb), ".cache", "bin", "versitygw")
	testenv.Need(tb, bin, "run scripts/test-tools.sh (make test does) to install versitygw")
	return bin
}

// Start starts versitygw on a free loopback port with random root keys and
// waits until it answers a ListBuckets call. The server is killed and
// reaped in tb.Cleanup. A server that cannot start fails tb with the
// server's output.
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin := Binary(tb)
	root := tb.TempDir()
	var lastErr error
	// A free port can be taken between our probe and the server's bind;
	// try a few.
	for range 3 {
		s, err := start(tb, bin, root)
		if err == nil {
			return s
		}
		lastErr = err
	}
	tb.Fatalf("s3test: versitygw did not start: %v", lastErr)
	return nil
}

// start makes one attempt; the process it starts is always reaped, in
// tb.Cleanup when it is up, before returning otherwise.
func start(tb testing.TB, bin, root string) (*Server, error) {
	addr, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &Server{
		Addr:      addr,
		Endpoint:  "http://" + addr,
		AccessKey: "AK" + randomHex(9),
		SecretKey: "SK" + randomHex(18),
		Root:      root,
	}
	logFile, err := os.CreateTemp(tb.TempDir(), "versitygw-*.log")
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child holds its own descriptor
	cmd := exec.Command(bin,
		"--port", addr,
		"--access", s.AccessKey,
		"--secret", s.SecretKey,
		"--region", Region,
		"--quiet",
		"posix", root)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// The keys go on the command line; make sure no inherited variable
	// (versitygw reads ROOT_ACCESS_KEY and friends) overrides them.
	cmd.Env = cleanEnv(os.Environ())
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		_ = cmd.Process.Kill()
		<-exited
	}

	s.transport = http.DefaultTransport.(*http.Transport).Clone()
	s.client = s3.New(s3.Options{
		Region:                     Region,
		BaseEndpoint:               aws.String(s.Endpoint),
		UsePathStyle:               true,
		Credentials:                credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
		HTTPClient:                 &http.Client{Transport: s.transport},
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})

	if err := s.waitReady(exited); err != nil {
		stop()
		s.transport.CloseIdleConnections()
		out, _ := os.ReadFile(logFile.Name())
		return nil, fmt.Errorf("%w; versitygw output:\n%s", err, out)
	}
	tb.Cleanup(func() {
		stop()
		s.transport.CloseIdleConnections()
	})
	return s, nil
}

// waitReady polls the server with ListBuckets until it answers, the
// process exits, or startTimeout passes.
func (s *Server) waitReady(exited chan error) error {
	deadline := time.Now().Add(startTimeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		// One attempt per tick: the SDK's own retries would back off
		// for seconds while the server starts.
		_, err := s.client.ListBuckets(ctx, &s3.ListBucketsInput{}, func(o *s3.Options) { o.RetryMaxAttempts = 1 })
		cancel()
		if err == nil {
			return nil
		}
		lastErr = err
		select {
		case err := <-exited:
			exited <- err // for stop
			return fmt.Errorf("versitygw exited: %v", err)
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer within %v: %w", startTimeout, lastErr)
		}
	}
}

// Client returns an S3 client for the server, signed with the root keys.
func (s *Server) Client() *s3.Client { return s.client }

// URL returns the Triton-style repository URL of prefix in bucket on this
// server: s3://127.0.0.1:PORT/bucket/prefix (s3://127.0.0.1:PORT/bucket
// when prefix is "").
func (s *Server) URL(bucket, prefix string) string {
	return repoURL(s.Addr, bucket, prefix)
}

func repoURL(addr, bucket, prefix string) string {
	u := "s3://" + addr + "/" + bucket
	if prefix != "" {
		u += "/" + strings.Trim(prefix, "/")
	}
	return u
}

// CreateBucket creates a bucket. S3 naming rules apply: 3 to 63
// characters, lower-case letters, digits, dots and hyphens.
func (s *Server) CreateBucket(tb testing.TB, bucket string) {
	tb.Helper()
	if _, err := s.client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		tb.Fatalf("s3test: create bucket %q: %v", bucket, err)
	}
}

// PutFile stores data under key in bucket (one single-part PUT, so the
// object's ETag is the MD5 of data).
func (s *Server) PutFile(tb testing.TB, bucket, key string, data []byte) {
	tb.Helper()
	_, err := s.client.PutObject(context.Background(), &s3.PutObjectInput{
		Bucket:        aws.String(bucket),
		Key:           aws.String(key),
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
	})
	if err != nil {
		tb.Fatalf("s3test: put %s/%s: %v", bucket, key, err)
	}
}

// PutDir uploads every regular file below the local folder dir to bucket,
// under prefix: dir/a/b.txt becomes prefix/a/b.txt ("a/b.txt" when prefix
// is ""). Empty folders are not uploaded.
func (s *Server) PutDir(tb testing.TB, bucket, prefix, dir string) {
	tb.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		s.PutFile(tb, bucket, path.Join(prefix, filepath.ToSlash(rel)), data)
		return nil
	})
	if err != nil {
		tb.Fatalf("s3test: upload %s: %v", dir, err)
	}
}

// Delete removes the object key from bucket; a missing key is not an
// error (S3 semantics).
func (s *Server) Delete(tb testing.TB, bucket, key string) {
	tb.Helper()
	_, err := s.client.DeleteObject(context.Background(), &s3.DeleteObjectInput{
		Bucket: aws.String(bucket),
		Key:    aws.String(key),
	})
	if err != nil {
		tb.Fatalf("s3test: delete %s/%s: %v", bucket, key, err)
	}
}

// freePort returns a loopback address with a port that was free a moment
// ago.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := l.Addr().String()
	return addr, l.Close()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand documents it)
	return strings.ToUpper(hex.EncodeToString(b))
}

// cleanEnv drops the variables versitygw would take its settings from.
func cleanEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "VGW_") || strings.HasPrefix(name, "ROOT_") || name == "LOGFILE" || name == "WEBHOOK" {
			continue
		}
		out = append(out, kv)
	}
	return out
}
