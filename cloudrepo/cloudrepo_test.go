package cloudrepo_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"go.uber.org/goleak"

	"github.com/triton-go/triton/cloudrepo"
	"github.com/triton-go/triton/internal/s3test"
	"github.com/triton-go/triton/repository"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const bucket = "models"

// isolate empties every variable that could bring the host's cloud set-up
// into a test, and points the AWS SDK's shared files at nothing.
func isolate(t *testing.T) {
	t.Helper()
	for _, k := range []string{
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
		"AWS_DEFAULT_REGION", "AWS_REGION", cloudrepo.CredentialPathEnv, "TRITON_AWS_MOUNT_DIRECTORY",
	} {
		t.Setenv(k, "")
	}
	none := filepath.Join(t.TempDir(), "none")
	t.Setenv("AWS_CONFIG_FILE", none)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", none)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// fixture is a versitygw holding a two-model repository under
// models/repo, uploaded from local, with the server's keys in the
// environment.
type fixture struct {
	srv   *s3test.Server
	local string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	isolate(t)
	f := &fixture{srv: s3test.Start(t), local: t.TempDir()}
	f.srv.CreateBucket(t, bucket)
	f.write(t, "simple/config.pbtxt", []byte("name: \"simple\"\nbackend: \"onnxruntime\"\n"))
	f.write(t, "simple/1/model.onnx", randomBytes(1, 3000))
	f.write(t, "simple/2/model.onnx", randomBytes(2, 5000))
	f.write(t, "other/config.pbtxt", []byte("name: \"other\"\nbackend: \"onnxruntime\"\n"))
	f.write(t, "other/labels.txt", []byte("cat\ndog\n"))
	f.write(t, "other/1/model.onnx", randomBytes(3, 20000))
	f.srv.PutDir(t, bucket, "repo", f.local)
	t.Setenv("AWS_ACCESS_KEY_ID", f.srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", f.srv.SecretKey)
	return f
}

// write puts data at rel in the local tree (not in the bucket).
func (f *fixture) write(t *testing.T, rel string, data []byte) {
	t.Helper()
	p := filepath.Join(f.local, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// change writes data at rel both locally and in the bucket.
func (f *fixture) change(t *testing.T, rel string, data []byte) {
	t.Helper()
	f.write(t, rel, data)
	f.srv.PutFile(t, bucket, "repo/"+rel, data)
}

func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func open(t *testing.T, url string, opts cloudrepo.Options) *cloudrepo.Repository {
	t.Helper()
	r, err := cloudrepo.Open(context.Background(), url, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Error(err)
		}
	})
	return r
}

func mustSync(t *testing.T, r *cloudrepo.Repository, models ...string) {
	t.Helper()
	if err := r.Sync(context.Background(), models...); err != nil {
		t.Fatal(err)
	}
}

// tree reads every model folder under root, following the models' links:
// path -> contents ("/" for a folder).
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		fsys := os.DirFS(filepath.Join(root, e.Name()))
		err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			key := e.Name() + "/" + p
			if d.IsDir() {
				out[strings.TrimSuffix(key, "/.")+"/"] = "/"
				return nil
			}
			data, err := fs.ReadFile(fsys, p)
			out[key] = string(data)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func assertSameTree(t *testing.T, want, got string) {
	t.Helper()
	w, g := tree(t, want), tree(t, got)
	if maps.Equal(w, g) {
		return
	}
	for _, k := range slices.Sorted(maps.Keys(w)) {
		if gv, ok := g[k]; !ok || gv != w[k] {
			t.Errorf("%s: missing or different in the mirror", k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(g)) {
		if _, ok := w[k]; !ok {
			t.Errorf("%s: in the mirror only", k)
		}
	}
}

// link returns where the model's entry in Dir points.
func link(t *testing.T, r *cloudrepo.Repository, model string) string {
	t.Helper()
	target, err := os.Readlink(filepath.Join(r.Dir(), model))
	if err != nil {
		t.Fatal(err)
	}
	return target
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// TestSyncEnvCredentials mirrors a repository with the keys from the AWS_*
// variables: the local tree equals the uploaded one byte for byte, files
// carry the objects' times, and repository.Scan sees the models and
// versions through the links.
func TestSyncEnvCredentials(t *testing.T) {
	f := newFixture(t)
	r := open(t, f.srv.URL(bucket, "repo"), cloudrepo.Options{})
	if got, want := r.String(), "s3://"+f.srv.Addr+"/models/repo"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got := r.Models(); !slices.Equal(got, []string{"other", "simple"}) {
		t.Errorf("Models() after Open, before any Sync = %q; want what Open listed", got)
	}
	if copies, err := filepath.Glob(filepath.Join(r.Dir(), "[^.]*")); err != nil || len(copies) != 0 {
		t.Errorf("Open copied something: %v %v", copies, err)
	}
	mustSync(t, r)
	assertSameTree(t, f.local, r.Dir())
	if got := r.Models(); !slices.Equal(got, []string{"other", "simple"}) {
		t.Errorf("Models() = %q", got)
	}
	st := r.Stats()
	if st.Syncs != 1 || st.Downloads != 6 || st.Snapshots != 2 || st.Failures != 0 {
		t.Errorf("stats after the first sync: %+v", st)
	}
	var size int64
	for _, data := range tree(t, f.local) {
		if data != "/" {
			size += int64(len(data))
		}
	}
	if st.DownloadedBytes != size {
		t.Errorf("DownloadedBytes = %d, want %d", st.DownloadedBytes, size)
	}

	models, err := repository.Scan([]repository.Root{repository.DirRoot(r.Dir())}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, md := range models {
		got = append(got, fmt.Sprintf("%s %v", md.Name, md.Versions))
	}
	if want := []string{"other [1]", "simple [1 2]"}; !slices.Equal(got, want) {
		t.Errorf("Scan found %q, want %q", got, want)
	}

	// Each file's time is the object's LastModified from the listing.
	list, err := f.srv.Client().ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{
		Bucket: aws.String(bucket), Prefix: aws.String("repo/simple/1/"),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range list.Contents {
		key := aws.ToString(o.Key)
		if strings.HasSuffix(key, "/") {
			continue
		}
		info, err := os.Stat(filepath.Join(r.Dir(), filepath.FromSlash(strings.TrimPrefix(key, "repo/"))))
		if err != nil {
			t.Fatal(err)
		}
		if !info.ModTime().Equal(aws.ToTime(o.LastModified)) {
			t.Errorf("%s: mtime %v, object %v", key, info.ModTime(), aws.ToTime(o.LastModified))
		}
	}
}

// TestSyncCredentialFile takes the keys from a TRITON_CLOUD_CREDENTIAL_PATH
// file, whose longest matching entry beats both the fallback entry and
// the (wrong) AWS_* variables; a file without a matching entry is Triton's
// error.
func TestSyncCredentialFile(t *testing.T) {
	f := newFixture(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "WRONGID")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "WRONGSECRET")
	url := f.srv.URL(bucket, "repo")
	file := filepath.Join(t.TempDir(), "creds.json")
	writeCreds := func(entries string) {
		if err := os.WriteFile(file, []byte(`{"s3": {`+entries+`}}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeCreds(fmt.Sprintf(`"": {"key_id": "WRONGID", "secret_key": "WRONGSECRET"},
		%q: {"key_id": %q, "secret_key": %q, "region": "us-east-1"}`,
		"s3://"+f.srv.Addr+"/models", f.srv.AccessKey, f.srv.SecretKey))
	t.Setenv(cloudrepo.CredentialPathEnv, file)
	r := open(t, url, cloudrepo.Options{})
	mustSync(t, r)
	assertSameTree(t, f.local, r.Dir())

	writeCreds(`"s3://elsewhere": {"key_id": "A", "secret_key": "B"}`)
	_, err := cloudrepo.Open(context.Background(), url, cloudrepo.Options{})
	if err == nil || !strings.Contains(err.Error(), "Cannot match credential for path  "+url) {
		t.Fatalf("Open with no matching entry: %v", err)
	}
}

// TestSyncIncremental changes the bucket between syncs: an unchanged
// repository downloads nothing; one changed object is the only download,
// the model's other files are hard links into the new snapshot, the
// replaced snapshot stays until the following swap; a new model appears,
// a deleted one loses its link.
func TestSyncIncremental(t *testing.T) {
	f := newFixture(t)
	r := open(t, f.srv.URL(bucket, "repo"), cloudrepo.Options{})
	mustSync(t, r)
	first := r.Stats()
	firstLink := link(t, r, "other")

	mustSync(t, r)
	st := r.Stats()
	if st.Downloads != first.Downloads || st.Snapshots != first.Snapshots || st.Reused != first.Reused+6 {
		t.Errorf("unchanged sync: stats %+v after %+v; want no download, no snapshot, 6 reused", st, first)
	}
	if link(t, r, "other") != firstLink {
		t.Error("unchanged sync swapped the link")
	}

	newModel := randomBytes(4, 30000)
	f.change(t, "other/1/model.onnx", newModel)
	mustSync(t, r)
	second := r.Stats()
	if d := second.Downloads - st.Downloads; d != 1 {
		t.Errorf("one changed object: %d downloads", d)
	}
	if b := second.DownloadedBytes - st.DownloadedBytes; b != int64(len(newModel)) {
		t.Errorf("one changed object: %d bytes downloaded, want %d", b, len(newModel))
	}
	if n := second.Reused - st.Reused; n != 5 {
		t.Errorf("reused %d files, want 5 (3 of simple, config and labels of other)", n)
	}
	secondLink := link(t, r, "other")
	if secondLink == firstLink {
		t.Fatal("the link still points at the first snapshot")
	}
	assertSameTree(t, f.local, r.Dir())
	oldSnap := filepath.Join(r.Dir(), firstLink)
	if !exists(oldSnap) {
		t.Fatal("the replaced snapshot was removed at once; it must stay until the next swap")
	}
	a, _ := os.Stat(filepath.Join(oldSnap, "labels.txt"))
	b, _ := os.Stat(filepath.Join(r.Dir(), secondLink, "labels.txt"))
	if !os.SameFile(a, b) {
		t.Error("an unchanged file was not hard-linked into the new snapshot")
	}

	f.change(t, "other/config.pbtxt", []byte("name: \"other\"\nbackend: \"onnxruntime\"\nmax_batch_size: 8\n"))
	mustSync(t, r)
	if exists(oldSnap) || exists(oldSnap+".json") {
		t.Error("the first snapshot survived the following swap")
	}
	if !exists(filepath.Join(r.Dir(), secondLink)) {
		t.Error("the snapshot just replaced was removed")
	}

	// A new model, a deleted model.
	f.change(t, "added/1/model.onnx", []byte("new"))
	for _, rel := range []string{"simple/config.pbtxt", "simple/1/model.onnx", "simple/2/model.onnx"} {
		f.srv.Delete(t, bucket, "repo/"+rel)
	}
	if err := os.RemoveAll(filepath.Join(f.local, "simple")); err != nil {
		t.Fatal(err)
	}
	simpleSnap := filepath.Join(r.Dir(), link(t, r, "simple"))
	mustSync(t, r)
	assertSameTree(t, f.local, r.Dir())
	if got := r.Models(); !slices.Equal(got, []string{"added", "other"}) {
		t.Errorf("Models() = %q", got)
	}
	if exists(filepath.Join(r.Dir(), "simple")) {
		t.Error("the deleted model's link is still there")
	}
	if r.Stats().Removed != 1 {
		t.Errorf("Removed = %d", r.Stats().Removed)
	}
	mustSync(t, r)
	if exists(simpleSnap) {
		t.Error("the deleted model's snapshot survived the next sync")
	}
}

// TestSyncConnectionCut cuts the connection in the middle of a changed
// file's download: Sync fails naming the URL and the cause, the model's
// link still points at the old complete snapshot, no partial file is
// anywhere; once healed, Sync succeeds.
func TestSyncConnectionCut(t *testing.T) {
	f := newFixture(t)
	p := f.srv.Proxy(t)
	url := p.URL(bucket, "repo")
	r := open(t, url, cloudrepo.Options{})
	mustSync(t, r)
	oldTree := tree(t, r.Dir())
	oldLink := link(t, r, "other")

	before := f.local + ".before"
	if err := os.CopyFS(before, os.DirFS(f.local)); err != nil {
		t.Fatal(err)
	}
	big := randomBytes(5, 2<<20)
	f.change(t, "other/1/model.onnx", big)

	p.CutAfter(512 << 10)
	err := r.Sync(context.Background())
	if err == nil {
		t.Fatal("Sync through a cut connection succeeded")
	}
	t.Logf("Sync error: %v", err)
	for _, want := range []string{url + ": model \"other\"", url + "/other/1/model.onnx"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %q: %v", want, err)
		}
	}
	if strings.Contains(err.Error(), f.srv.SecretKey) {
		t.Errorf("error shows the secret key: %v", err)
	}
	if p.Stats().Cuts == 0 {
		t.Error("the proxy cut nothing")
	}
	if link(t, r, "other") != oldLink {
		t.Error("a failed sync swapped the link")
	}
	if got := tree(t, r.Dir()); !maps.Equal(got, oldTree) {
		t.Error("the mirror changed after a failed sync")
	}
	assertSameTree(t, before, r.Dir())
	snaps, err := os.ReadDir(filepath.Join(r.Dir(), ".snapshots", "other"))
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != 2 { // the current snapshot and its manifest
		var names []string
		for _, e := range snaps {
			names = append(names, e.Name())
		}
		t.Errorf("snapshots of other after the failure: %q, want the current one only", names)
	}
	if r.Stats().Failures != 1 {
		t.Errorf("Failures = %d", r.Stats().Failures)
	}

	p.Heal()
	mustSync(t, r)
	assertSameTree(t, f.local, r.Dir())
	got, err := os.ReadFile(filepath.Join(r.Dir(), "other", "1", "model.onnx"))
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("after healing: %d bytes, %v", len(got), err)
	}
}

// TestSyncCancel cancels a Sync whose download hangs: it returns the
// context's error, and the previous copy stays.
func TestSyncCancel(t *testing.T) {
	f := newFixture(t)
	p := f.srv.Proxy(t)
	r := open(t, p.URL(bucket, "repo"), cloudrepo.Options{})
	mustSync(t, r)
	oldTree := tree(t, r.Dir())
	f.change(t, "other/1/model.onnx", randomBytes(6, 2<<20))

	stalled := p.StallAfter(512 << 10)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- r.Sync(ctx) }()
	<-stalled
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Sync: %v, want context.Canceled", err)
	}
	if got := tree(t, r.Dir()); !maps.Equal(got, oldTree) {
		t.Error("the mirror changed after a cancelled sync")
	}
	p.Heal()
	mustSync(t, r)
	assertSameTree(t, f.local, r.Dir())
}

// TestOpenErrors: each bad input is an error naming the URL, never a
// secret.
func TestOpenErrors(t *testing.T) {
	f := newFixture(t)
	f.srv.PutFile(t, bucket, "file.txt", []byte("not a folder"))
	tests := []struct {
		name    string
		url     string
		secret  string // replaces the right secret key
		wantErr string
		is      error
	}{
		{name: "missing bucket", url: f.srv.URL("no-such-bucket", "repo"), wantErr: `bucket "no-such-bucket" does not exist`},
		{name: "wrong secret", url: f.srv.URL(bucket, "repo"), secret: "WRONG-SECRET-9f8e7d", wantErr: "access denied, check the account credentials"},
		{name: "path names a file", url: f.srv.URL(bucket, "file.txt"), wantErr: "names a file, not a folder"},
		{name: "path names nothing", url: f.srv.URL(bucket, "nothing/here"), is: fs.ErrNotExist},
		{name: "upper-case bucket", url: "s3://" + f.srv.Addr + "/Models/repo", wantErr: "is not a bucket name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.secret != "" {
				t.Setenv("AWS_SECRET_ACCESS_KEY", tc.secret)
			}
			r, err := cloudrepo.Open(context.Background(), tc.url, cloudrepo.Options{})
			if err == nil {
				r.Close()
				t.Fatal("Open succeeded")
			}
			t.Logf("Open error: %v", err)
			if !strings.Contains(err.Error(), tc.url) {
				t.Errorf("error does not name the URL %s", tc.url)
			}
			if tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error does not say %q", tc.wantErr)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error is not %v", tc.is)
			}
			for _, s := range []string{f.srv.SecretKey, tc.secret} {
				if s != "" && strings.Contains(err.Error(), s) {
					t.Errorf("error shows the secret %q", s)
				}
			}
		})
	}
}

// TestSyncRefusesEscapingKey stores a key that the Go CDK reads back as
// "repo/evil/../../escape.txt" (its escape for "/" after ".." is stored
// as is by the server, the way a raw key with ".." would come back from
// any S3): the model's sync fails naming the key, nothing is written
// outside Dir, the other models are synced.
func TestSyncRefusesEscapingKey(t *testing.T) {
	f := newFixture(t)
	f.srv.PutFile(t, bucket, "repo/evil/..__0x2f__..__0x2f__escape.txt", []byte("gotcha"))
	f.srv.PutFile(t, bucket, "repo/evil/config.pbtxt", []byte("name: \"evil\""))
	parent := t.TempDir()
	cache := filepath.Join(parent, "cache")
	r := open(t, f.srv.URL(bucket, "repo"), cloudrepo.Options{CacheDir: cache})
	err := r.Sync(context.Background())
	if err == nil {
		t.Fatal("Sync accepted a key escaping the model folder")
	}
	t.Logf("Sync error: %v", err)
	for _, want := range []string{f.srv.URL(bucket, "repo"), `model "evil"`, `"repo/evil/../../escape.txt"`, "escape the model folder"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q", want)
		}
	}
	if exists(filepath.Join(parent, "escape.txt")) || exists(filepath.Join(cache, "escape.txt")) || exists(filepath.Join(cache, "evil")) {
		t.Error("the escaping key left a file or a link")
	}
	if got := tree(t, r.Dir()); len(got) == 0 || got["other/labels.txt"] != "cat\ndog\n" {
		t.Errorf("the other models were not synced: %d entries", len(got))
	}
	if !slices.Contains(r.Models(), "evil") {
		t.Errorf("Models() = %q, want the refused model listed", r.Models())
	}
}

// TestSyncNamed syncs one model by name; an unknown name is no error and
// leaves no entry, a hidden one is refused, and Sync after Close is
// ErrClosed. Without a CacheDir, the copies live in a new folder under
// TRITON_AWS_MOUNT_DIRECTORY that Close removes.
func TestSyncNamed(t *testing.T) {
	f := newFixture(t)
	mount := t.TempDir()
	t.Setenv("TRITON_AWS_MOUNT_DIRECTORY", mount)
	r, err := cloudrepo.Open(context.Background(), f.srv.URL(bucket, "repo"), cloudrepo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := r.Dir()
	if filepath.Dir(dir) != mount {
		t.Errorf("Dir() = %s, want a new folder in TRITON_AWS_MOUNT_DIRECTORY %s", dir, mount)
	}
	mustSync(t, r, "simple")
	if !exists(filepath.Join(dir, "simple")) || exists(filepath.Join(dir, "other")) {
		t.Error("Sync(simple) did not sync exactly simple")
	}
	if got := r.Models(); !slices.Equal(got, []string{"other", "simple"}) {
		t.Errorf("Models() = %q, want every listed model", got)
	}
	if err := r.Sync(context.Background(), "absent"); err != nil || exists(filepath.Join(dir, "absent")) {
		t.Errorf("Sync(absent) = %v; want no error and no entry (the server reports the model missing)", err)
	}
	if err := r.Sync(context.Background(), ".snapshots"); err == nil {
		t.Error("Sync(.snapshots) accepted a hidden name")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if exists(dir) || !exists(mount) {
		t.Error("Close kept the folder Open made, or removed the mount folder")
	}
	if err := r.Sync(context.Background()); !errors.Is(err, cloudrepo.ErrClosed) {
		t.Errorf("Sync after Close = %v", err)
	}
}

// TestConcurrentSync runs Syncs of everything and of one model at once
// while objects change: no error, no race, and the mirror ends equal to
// the bucket.
func TestConcurrentSync(t *testing.T) {
	f := newFixture(t)
	r := open(t, f.srv.URL(bucket, "repo"), cloudrepo.Options{})
	for round := range 3 {
		f.change(t, "other/1/model.onnx", randomBytes(uint64(10+round), 40000))
		f.change(t, "simple/2/model.onnx", randomBytes(uint64(20+round), 7000))
		var wg sync.WaitGroup
		errs := make([]error, 6)
		for i := range errs {
			wg.Go(func() {
				if i%2 == 0 {
					errs[i] = r.Sync(context.Background())
				} else {
					errs[i] = r.Sync(context.Background(), "other")
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		assertSameTree(t, f.local, r.Dir())
	}
}

// TestReopenCacheDir reopens a kept cache folder after a simulated crash:
// leftovers are removed and unchanged models are not downloaded again.
func TestReopenCacheDir(t *testing.T) {
	f := newFixture(t)
	cache := t.TempDir()
	url := f.srv.URL(bucket, "repo")
	r1, err := cloudrepo.Open(context.Background(), url, cloudrepo.Options{CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	mustSync(t, r1)
	otherLink := link(t, r1, "other")
	if err := r1.Close(); err != nil {
		t.Fatal(err)
	}
	// What a crash mid-sync leaves: a partial snapshot, a temporary link.
	partial := filepath.Join(cache, ".snapshots", "other", "99")
	if err := os.MkdirAll(filepath.Join(partial, "1"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(partial, "1", "model.onnx"), []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(".snapshots", "other", "99"), filepath.Join(cache, ".tmp-link-crash")); err != nil {
		t.Fatal(err)
	}

	r2 := open(t, url, cloudrepo.Options{CacheDir: cache})
	if exists(partial) || exists(filepath.Join(cache, ".tmp-link-crash")) {
		t.Error("Open left a crash's leftovers")
	}
	mustSync(t, r2)
	if st := r2.Stats(); st.Downloads != 0 || st.Reused != 6 || st.Snapshots != 0 {
		t.Errorf("sync after reopening: %+v, want nothing downloaded", st)
	}
	if link(t, r2, "other") != otherLink {
		t.Error("the link changed")
	}
	assertSameTree(t, f.local, r2.Dir())

	// A snapshot file changed behind our back is not trusted.
	if err := os.WriteFile(filepath.Join(cache, otherLink, "labels.txt"), []byte("tampered"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r2.Close(); err != nil {
		t.Fatal(err)
	}
	r3 := open(t, url, cloudrepo.Options{CacheDir: cache})
	mustSync(t, r3)
	assertSameTree(t, f.local, r3.Dir())
	if st := r3.Stats(); st.Downloads == 0 {
		t.Errorf("a tampered snapshot was trusted: %+v", st)
	}
}
