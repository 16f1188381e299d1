package cloudrepo

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/sync/errgroup"

	"github.com/triton-go/triton/internal/s3test"
)

// benchBucket holds the benchmark's repositories, one prefix a shape.
const benchBucket = "bench"

// benchShape is a repository uploaded once for BenchmarkSync: models
// models, each with the files files (path relative to the model folder,
// and size). changed is the file one-changed replaces, with new bytes of
// the same size, in one model a round.
type benchShape struct {
	name    string
	models  int
	files   []benchFile
	changed string
}

type benchFile struct {
	path string
	size int
}

// benchShapes: a realistic repository (8 models of a config, two small
// files and a 4 MiB model.onnx: the bytes dominate) and one of many small
// files (8 models of 64 files of 1–8 KiB: the requests dominate).
func benchShapes() []benchShape {
	large := benchShape{name: "8x4MiB", models: 8, changed: "1/model.onnx", files: []benchFile{
		{"config.pbtxt", 180}, {"labels.txt", 1200}, {"1/model.onnx", 4 << 20}, {"1/README.md", 600},
	}}
	small := benchShape{name: "8x64small", models: 8, changed: "1/file-007.bin",
		files: []benchFile{{"config.pbtxt", 180}}}
	for i := range 63 {
		small.files = append(small.files, benchFile{fmt.Sprintf("1/file-%03d.bin", i), 1024 << (i % 4)})
	}
	return []benchShape{large, small}
}

func (sh benchShape) model(i int) string { return fmt.Sprintf("model%02d", i) }

// objects and bytes are the shape's totals.
func (sh benchShape) objects() int { return sh.models * len(sh.files) }

func (sh benchShape) bytes() int64 {
	var n int64
	for _, f := range sh.files {
		n += int64(f.size)
	}
	return n * int64(sh.models)
}

// BenchmarkSync measures Sync against a real S3 server (versitygw on
// loopback) in interleaved rounds, one per b.N, the forms' order rotating
// each round:
//
//   - full: the first Sync of a fresh Open into an empty cache folder
//     (Open itself is not timed);
//   - copy, the baseline: the same objects fetched with a plain
//     aws-sdk-go-v2 S3 client, ListObjectsV2 then GetObject into files,
//     with Sync's concurrency (modelsAtOnce models, filesAtOnce files of a
//     model at once) and nothing else: no MD5, times, snapshots or links;
//   - copy+md5: copy plus the check Sync makes on each download, the MD5
//     of the bytes against the listed ETag;
//   - unchanged: Sync of a synced repository in which nothing changed (it
//     must download nothing);
//   - one-changed: Sync after one model's changed file was replaced (it
//     must download exactly that file).
//
// It reports, per shape, the median and range across rounds of
// full÷copy and full÷copy+md5 in throughput terms (the copy's time ÷
// full's: ≥ 0.9 is the target against copy), and of unchanged÷full and
// one-changed÷full in time (the incremental win), with each form's median
// time and Go heap allocated (the whole process's). Each form runs under
// a pprof label, form=<name>, to split a -cpuprofile by form. Figures and
// their discussion: docs/performance.md, "Object-storage repositories".
//
//	go test -run '^$' -bench Sync -benchtime 9x ./cloudrepo/
//
// Like every benchmark it runs only with -bench; without the versitygw
// binary (make test-tools) it skips, as the package's tests do.
func BenchmarkSync(b *testing.B) {
	srv := s3test.Start(b)
	srv.CreateBucket(b, benchBucket)
	benchEnv(b, srv)
	for _, sh := range benchShapes() {
		for i := range sh.models {
			for j, f := range sh.files {
				data := benchBytes(uint64(i*1000+j), f.size)
				srv.PutFile(b, benchBucket, path.Join(sh.name, sh.model(i), f.path), data)
			}
		}
		b.Run(sh.name, func(b *testing.B) { benchSync(b, srv, sh) })
	}
}

// benchEnv gives Open the server's keys and nothing of the host's set-up.
func benchEnv(b *testing.B, srv *s3test.Server) {
	for _, k := range []string{
		"AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_REGION", "AWS_REGION",
		CredentialPathEnv, "TRITON_AWS_MOUNT_DIRECTORY",
	} {
		b.Setenv(k, "")
	}
	none := filepath.Join(b.TempDir(), "none")
	b.Setenv("AWS_CONFIG_FILE", none)
	b.Setenv("AWS_SHARED_CREDENTIALS_FILE", none)
	b.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	b.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	b.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
}

func benchSync(b *testing.B, srv *s3test.Server, sh benchShape) {
	ctx := context.Background()
	url := srv.URL(benchBucket, sh.name)
	scratch := b.TempDir()

	// The repository the incremental forms sync again and again: after
	// every form it matches the bucket.
	inc, err := Open(ctx, url, Options{CacheDir: filepath.Join(scratch, "incremental")})
	if err != nil {
		b.Fatal(err)
	}
	defer inc.Close()
	if err := inc.Sync(ctx); err != nil {
		b.Fatal(err)
	}

	// measure times f and records the bytes it allocated (the whole
	// process's, Go heap) in allocMB[name].
	allocMB := map[string][]float64{}
	measure := func(name string, f func() error) time.Duration {
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		start := time.Now()
		err := f()
		took := time.Since(start)
		runtime.ReadMemStats(&m1)
		if err != nil {
			b.Fatalf("%s: %v", name, err)
		}
		allocMB[name] = append(allocMB[name], float64(m1.TotalAlloc-m0.TotalAlloc)/1e6)
		return took
	}
	fresh := 0 // names the folders of full and copy
	changes := 0
	copyForm := func(checkMD5 bool) time.Duration {
		fresh++
		dir := filepath.Join(scratch, fmt.Sprint("copy-", fresh))
		client, tr := benchClient(srv)
		defer tr.CloseIdleConnections()
		name := map[bool]string{false: "copy", true: "copy+md5"}[checkMD5]
		var files int
		var size int64
		took := measure(name, func() (err error) {
			files, size, err = plainCopy(ctx, client, sh.name+"/", dir, checkMD5)
			return err
		})
		if files != sh.objects() || size != sh.bytes() {
			b.Fatalf("copy: %d files, %d bytes; want %d, %d", files, size, sh.objects(), sh.bytes())
		}
		if err := os.RemoveAll(dir); err != nil {
			b.Fatal(err)
		}
		return took
	}
	forms := []struct {
		name string
		run  func() time.Duration
	}{
		{"full", func() time.Duration {
			fresh++
			dir := filepath.Join(scratch, fmt.Sprint("full-", fresh))
			r, err := Open(ctx, url, Options{CacheDir: dir})
			if err != nil {
				b.Fatal(err)
			}
			took := measure("full", func() error { return r.Sync(ctx) })
			if s := r.Stats(); s.Downloads != int64(sh.objects()) || s.DownloadedBytes != sh.bytes() {
				b.Fatalf("full: %d files, %d bytes downloaded; want %d, %d", s.Downloads, s.DownloadedBytes, sh.objects(), sh.bytes())
			}
			if err := r.Close(); err != nil {
				b.Fatal(err)
			}
			if err := os.RemoveAll(dir); err != nil {
				b.Fatal(err)
			}
			return took
		}},
		{"copy", func() time.Duration { return copyForm(false) }},
		{"copy+md5", func() time.Duration { return copyForm(true) }},
		{"unchanged", func() time.Duration {
			before := inc.Stats()
			took := measure("unchanged", func() error { return inc.Sync(ctx) })
			if s := inc.Stats(); s.Downloads != before.Downloads || s.Snapshots != before.Snapshots {
				b.Fatalf("unchanged: %d downloads, %d snapshots; want none", s.Downloads-before.Downloads, s.Snapshots-before.Snapshots)
			}
			return took
		}},
		{"one-changed", func() time.Duration {
			changes++
			size := 0
			for _, f := range sh.files {
				if f.path == sh.changed {
					size = f.size
				}
			}
			model := sh.model(changes % sh.models)
			srv.PutFile(b, benchBucket, path.Join(sh.name, model, sh.changed), benchBytes(uint64(1e6+changes), size))
			before := inc.Stats()
			took := measure("one-changed", func() error { return inc.Sync(ctx) })
			if s := inc.Stats(); s.Downloads-before.Downloads != 1 || s.Snapshots-before.Snapshots != 1 {
				b.Fatalf("one-changed: %d downloads, %d snapshots; want 1, 1", s.Downloads-before.Downloads, s.Snapshots-before.Snapshots)
			}
			return took
		}},
	}

	ms := map[string][]float64{}
	ratio := map[string][]float64{}
	round := 0
	for b.Loop() {
		got := map[string]time.Duration{}
		for k := range forms {
			f := forms[(k+round)%len(forms)]
			// go tool pprof -tagfocus 'form=^full$' shows one form.
			pprof.Do(ctx, pprof.Labels("form", f.name), func(context.Context) { got[f.name] = f.run() })
			ms[f.name+"-ms"] = append(ms[f.name+"-ms"], float64(got[f.name].Microseconds())/1000)
		}
		ratio["full÷copy"] = append(ratio["full÷copy"], got["copy"].Seconds()/got["full"].Seconds())
		ratio["full÷copy+md5"] = append(ratio["full÷copy+md5"], got["copy+md5"].Seconds()/got["full"].Seconds())
		ratio["unchanged÷full"] = append(ratio["unchanged÷full"], got["unchanged"].Seconds()/got["full"].Seconds())
		ratio["one-changed÷full"] = append(ratio["one-changed÷full"], got["one-changed"].Seconds()/got["full"].Seconds())
		round++
	}
	for name, xs := range ms {
		b.ReportMetric(benchMedian(xs), name)
	}
	for name, xs := range allocMB {
		b.ReportMetric(benchMedian(xs), name+"-alloc-MB")
	}
	b.ReportMetric(float64(sh.bytes())/1e6/(benchMedian(ms["full-ms"])/1000), "full-MB/s")
	for name, xs := range ratio {
		b.ReportMetric(benchMedian(xs), name)
		b.ReportMetric(slices.Min(xs), name+"-min")
		b.ReportMetric(slices.Max(xs), name+"-max")
	}
	b.ReportMetric(0, "ns/op") // an op is a round; its time is meaningless
}

// benchClient is a plain S3 client for srv, configured as Open configures
// one for an s3://host:port URL (path-style, checksums only when
// required, the SDK's default transport settings), and its transport.
func benchClient(srv *s3test.Server) (*s3.Client, *http.Transport) {
	tr := awshttp.NewBuildableClient().GetTransport() // a new one, the SDK's defaults
	client := s3.New(s3.Options{
		Region:                     s3test.Region,
		BaseEndpoint:               aws.String(srv.Endpoint),
		UsePathStyle:               true,
		Credentials:                credentials.NewStaticCredentialsProvider(srv.AccessKey, srv.SecretKey, ""),
		HTTPClient:                 &http.Client{Transport: tr},
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
	return client, tr
}

// plainCopy is the least a mirror must do: list every object below prefix
// and write each to dir (dir/<model>/<path>), modelsAtOnce models and
// filesAtOnce files of a model at a time, as Sync does. With checkMD5 it
// also hashes each object's bytes as they are written and compares the
// MD5 with the listed ETag, as Sync's check does. It returns the files
// and bytes written.
func plainCopy(ctx context.Context, client *s3.Client, prefix, dir string, checkMD5 bool) (int, int64, error) {
	type object struct{ rel, etag string }
	byModel := map[string][]object{}
	var models []string
	p := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(benchBucket), Prefix: aws.String(prefix)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return 0, 0, err
		}
		for _, obj := range page.Contents {
			rel := strings.TrimPrefix(aws.ToString(obj.Key), prefix)
			model, _, _ := strings.Cut(rel, "/")
			if _, ok := byModel[model]; !ok {
				models = append(models, model)
			}
			byModel[model] = append(byModel[model], object{rel, strings.Trim(aws.ToString(obj.ETag), `"`)})
		}
	}
	var files, size atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(modelsAtOnce)
	for _, model := range models {
		g.Go(func() error {
			mg, mctx := errgroup.WithContext(gctx)
			mg.SetLimit(filesAtOnce)
			for _, obj := range byModel[model] {
				mg.Go(func() error {
					etag := ""
					if checkMD5 {
						etag = obj.etag
					}
					n, err := getObject(mctx, client, prefix+obj.rel, filepath.Join(dir, filepath.FromSlash(obj.rel)), etag)
					files.Add(1)
					size.Add(n)
					return err
				})
			}
			return mg.Wait()
		})
	}
	err := g.Wait()
	return int(files.Load()), size.Load(), err
}

// getObject writes the object key to dst; with an etag, it checks the
// bytes' MD5 against it.
func getObject(ctx context.Context, client *s3.Client, key, dst, etag string) (int64, error) {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return 0, err
	}
	out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(benchBucket), Key: aws.String(key)})
	if err != nil {
		return 0, err
	}
	defer out.Body.Close()
	f, err := os.Create(dst)
	if err != nil {
		return 0, err
	}
	var w io.Writer = f
	h := md5.New()
	if etag != "" {
		w = io.MultiWriter(f, h)
	}
	n, err := io.Copy(w, out.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if sum := hex.EncodeToString(h.Sum(nil)); err == nil && etag != "" && sum != etag {
		err = fmt.Errorf("%s: MD5 %s, ETag %s", key, sum, etag)
	}
	return n, err
}

// benchBytes returns n pseudo-random bytes (incompressible, like weights)
// from seed.
func benchBytes(seed uint64, n int) []byte {
	var key [32]byte
	for i := range 8 {
		key[i] = byte(seed >> (8 * i))
	}
	b := make([]byte, n)
	_, _ = rand.NewChaCha8(key).Read(b) // never fails
	return b
}

func benchMedian(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
