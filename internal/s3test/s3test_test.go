package s3test_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"go.uber.org/goleak"

	"github.com/triton-go/triton/internal/s3test"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// client returns an S3 client for srv's keys reaching endpoint, and closes
// its idle connections at the end of the test.
func client(t *testing.T, srv *s3test.Server, endpoint string) *s3.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return s3.New(s3.Options{
		Region:                     s3test.Region,
		BaseEndpoint:               aws.String(endpoint),
		UsePathStyle:               true,
		Credentials:                credentials.NewStaticCredentialsProvider(srv.AccessKey, srv.SecretKey, ""),
		HTTPClient:                 &http.Client{Transport: tr},
		RetryMaxAttempts:           1,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
}

func get(ctx context.Context, c *s3.Client, bucket, key string) ([]byte, error) {
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return nil, err
	}
	defer out.Body.Close()
	return io.ReadAll(out.Body)
}

// TestServerRoundTrip uploads a folder and a file, reads them back, lists
// them and deletes one: the server is a working S3 endpoint.
func TestServerRoundTrip(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "bkt")
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "m", "1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "m", "1", "w.bin"), []byte("weights"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv.PutDir(t, "bkt", "repo", dir)
	srv.PutFile(t, "bkt", "repo/m/config.pbtxt", []byte(`name: "m"`))

	c := client(t, srv, srv.Endpoint)
	ctx := context.Background()
	got, err := get(ctx, c, "bkt", "repo/m/1/w.bin")
	if err != nil || string(got) != "weights" {
		t.Fatalf("get = %q, %v; want weights", got, err)
	}
	list, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("bkt"), Prefix: aws.String("repo/")})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range list.Contents {
		if k := aws.ToString(o.Key); k[len(k)-1] != '/' {
			keys = append(keys, k)
		}
	}
	if len(keys) != 2 || keys[0] != "repo/m/1/w.bin" || keys[1] != "repo/m/config.pbtxt" {
		t.Fatalf("listed %q", keys)
	}
	srv.Delete(t, "bkt", "repo/m/1/w.bin")
	if _, err := get(ctx, c, "bkt", "repo/m/1/w.bin"); err == nil {
		t.Fatal("deleted object still readable")
	}
	if got := srv.URL("bkt", "/repo/"); got != "s3://"+srv.Addr+"/bkt/repo" {
		t.Errorf("URL = %q", got)
	}
}

// TestProxyCut reads an object through the proxy, then with a cut below
// the object's size (the read fails with fewer bytes), then healed.
func TestProxyCut(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "bkt")
	big := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	srv.PutFile(t, "bkt", "big", big)
	p := srv.Proxy(t)
	c := client(t, srv, "http://"+p.Addr)
	ctx := context.Background()

	got, err := get(ctx, c, "bkt", "big")
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("through the proxy: %d bytes, %v", len(got), err)
	}
	before := p.Stats()
	if before.Conns == 0 || before.BytesDown < int64(len(big)) || before.BytesUp == 0 {
		t.Fatalf("stats after one read: %+v", before)
	}

	p.CutAfter(100 << 10)
	got, err = get(ctx, c, "bkt", "big")
	if err == nil {
		t.Fatalf("read through a cut connection succeeded with %d bytes", len(got))
	}
	if len(got) >= len(big) {
		t.Fatalf("read %d bytes through a cut at 100 KiB", len(got))
	}
	if cuts := p.Stats().Cuts; cuts == 0 {
		t.Fatal("no cut counted")
	}

	p.Heal()
	got, err = get(ctx, c, "bkt", "big")
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("after Heal: %d bytes, %v", len(got), err)
	}
	if p.URL("bkt", "r") != "s3://"+p.Addr+"/bkt/r" {
		t.Errorf("URL = %q", p.URL("bkt", "r"))
	}
}

// TestProxyStall holds a read at the stall point until its context is
// cancelled, then reads in full once healed.
func TestProxyStall(t *testing.T) {
	srv := s3test.Start(t)
	srv.CreateBucket(t, "bkt")
	big := bytes.Repeat([]byte("x"), 1<<20)
	srv.PutFile(t, "bkt", "big", big)
	p := srv.Proxy(t)
	c := client(t, srv, "http://"+p.Addr)

	stalled := p.StallAfter(64 << 10)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := get(ctx, c, "bkt", "big")
		errc <- err
	}()
	<-stalled
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("stalled read after cancel: %v, want context.Canceled", err)
	}
	p.Heal()
	got, err := get(context.Background(), c, "bkt", "big")
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("after Heal: %d bytes, %v", len(got), err)
	}
}
