package cloudrepo

import (
	"context"
	"crypto/md5"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"gocloud.dev/blob/memblob"
)

func TestSplitKey(t *testing.T) {
	tests := []struct {
		rel, model, path string
		wantErr          string
	}{
		{rel: "", model: ""},
		{rel: "/", model: ""},         // "repo//": the folder's own marker, doubled
		{rel: "README.md", model: ""}, // a file beside the models
		{rel: "m/", model: "m", path: ""},
		{rel: "m", model: ""},
		{rel: "m/config.pbtxt", model: "m", path: "config.pbtxt"},
		{rel: "m/1/", model: "m", path: "1/"},
		{rel: "m/1/model.onnx", model: "m", path: "1/model.onnx"},
		{rel: "m/1/.hidden", model: "m", path: "1/.hidden"},
		{rel: "m/1/...", model: "m", path: "1/..."},
		{rel: ".snapshots/x/1/f", model: ".snapshots", path: "x/1/f"}, // hidden: the caller skips it
		{rel: "m/../../etc/passwd", model: "m", wantErr: `".." path segment`},
		{rel: "m/1/..", model: "m", wantErr: `".." path segment`},
		{rel: "m/./x", model: "m", wantErr: `"." path segment`},
		{rel: "../x", model: "", wantErr: `".." path segment`},
		{rel: "/etc/passwd", model: "", wantErr: "empty path segment"},
		{rel: "m//etc/passwd", model: "m", wantErr: "empty path segment"},
		{rel: "m/a\x00b", model: "m", wantErr: "NUL"},
	}
	for _, tc := range tests {
		model, e, err := splitKey(tc.rel)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("splitKey(%q) error = %v, want one containing %q", tc.rel, err, tc.wantErr)
			}
			if model != tc.model {
				t.Errorf("splitKey(%q) model = %q, want %q", tc.rel, model, tc.model)
			}
			continue
		}
		if err != nil || model != tc.model || e.Path != tc.path {
			t.Errorf("splitKey(%q) = %q, %q, %v; want %q, %q", tc.rel, model, e.Path, err, tc.model, tc.path)
		}
	}
}

func TestFileFolderClash(t *testing.T) {
	ok := []entry{{Path: "1/"}, {Path: "1/model.onnx"}, {Path: "config.pbtxt"}}
	if err := fileFolderClash(ok); err != nil {
		t.Errorf("clean model: %v", err)
	}
	clash := []entry{{Path: "1"}, {Path: "1/model.onnx"}}
	if err := fileFolderClash(clash); err == nil || !strings.Contains(err.Error(), `"1" is both a file and a folder`) {
		t.Errorf("clash: %v", err)
	}
}

func TestSameObject(t *testing.T) {
	now := time.Now()
	a := entry{Path: "f", Size: 3, ModTime: now, MD5: []byte{1}}
	for _, tc := range []struct {
		b    entry
		want bool
	}{
		{a, true},
		{entry{Path: "f", Size: 3, ModTime: now.UTC(), MD5: []byte{1}}, true}, // same instant, other zone
		{entry{Path: "f", Size: 4, ModTime: now, MD5: []byte{1}}, false},
		{entry{Path: "f", Size: 3, ModTime: now.Add(time.Millisecond), MD5: []byte{1}}, false},
		{entry{Path: "f", Size: 3, ModTime: now, MD5: []byte{2}}, false},
		{entry{Path: "f", Size: 3, ModTime: now}, false},
		{entry{Path: "g", Size: 3, ModTime: now, MD5: []byte{1}}, false},
	} {
		if got := sameObject(a, tc.b); got != tc.want {
			t.Errorf("sameObject(%+v, %+v) = %v", a, tc.b, got)
		}
	}
	if !sameObject(entry{Path: "d/", ModTime: now}, entry{Path: "d/"}) {
		t.Error("folders differ by time")
	}
}

// TestDownloadChecks downloads from an in-memory bucket with listings that
// disagree with the object: a size or an MD5 that differs is an error
// naming the object's URL.
func TestDownloadChecks(t *testing.T) {
	ctx := context.Background()
	bucket := memblob.OpenBucket(nil)
	defer bucket.Close()
	data := []byte("model bytes")
	if err := bucket.WriteAll(ctx, "repo/m/1/model.onnx", data, nil); err != nil {
		t.Fatal(err)
	}
	r := &Repository{loc: mustParse(t, "gs://bkt/repo"), bucket: bucket, log: zap.NewNop()}
	sum := md5.Sum(data)
	mtime := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	tests := []struct {
		name    string
		e       entry
		wantErr string
	}{
		{name: "good", e: entry{Path: "1/model.onnx", Size: int64(len(data)), MD5: sum[:], ModTime: mtime}},
		{name: "no MD5 listed", e: entry{Path: "1/model.onnx", Size: int64(len(data))}},
		{name: "size", e: entry{Path: "1/model.onnx", Size: 99, MD5: sum[:]}, wantErr: "got 11 bytes, the listing says 99"},
		{name: "md5", e: entry{Path: "1/model.onnx", Size: int64(len(data)), MD5: []byte("0123456789abcdef")}, wantErr: "MD5"},
		{name: "missing", e: entry{Path: "1/gone.onnx", Size: 1}, wantErr: "gs://bkt/repo/m/1/gone.onnx"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "f")
			n, err := r.download(ctx, "m", tc.e, dst)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "gs://bkt/repo/m/1/") {
					t.Fatalf("error = %v, want one containing %q and the object's URL", err, tc.wantErr)
				}
				return
			}
			if err != nil || n != int64(len(data)) {
				t.Fatalf("download = %d, %v", n, err)
			}
			got, err := os.ReadFile(dst)
			if err != nil || string(got) != string(data) {
				t.Fatalf("file = %q, %v", got, err)
			}
			if !tc.e.ModTime.IsZero() {
				info, _ := os.Stat(dst)
				if !info.ModTime().Equal(mtime) {
					t.Errorf("mtime = %v, want the object's %v", info.ModTime(), mtime)
				}
			}
		})
	}
}

// TestOpenBucketOffline builds the GCS and Azure clients, which send
// nothing until used: the credential rules are applied without an
// emulator.
func TestOpenBucketOffline(t *testing.T) {
	ctx := context.Background()
	sa := filepath.Join(t.TempDir(), "sa.json")
	if err := os.WriteFile(sa, []byte(`{"type": "service_account", "client_email": "x@y.iam.gserviceaccount.com",
		"private_key_id": "1", "private_key": "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n",
		"token_uri": "https://oauth2.googleapis.com/token"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"type": "external_account"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		url     string
		cred    credential
		wantErr string
	}{
		{name: "gs service account", url: "gs://bkt/r", cred: credential{gcsFile: sa}},
		{name: "gs missing file", url: "gs://bkt/r", cred: credential{gcsFile: sa + ".missing"}, wantErr: "no such file"},
		{name: "gs unsupported type", url: "gs://bkt/r", cred: credential{gcsFile: bad}, wantErr: "neither an authorized user nor a service account"},
		{name: "as anonymous", url: "as://acct/c/r"},
		{name: "as key", url: "as://acct/c/r", cred: credential{azure: azureCredential{Key: "a2V5", AuthType: "key"}}},
		{name: "as key not base64", url: "as://acct/c/r", cred: credential{azure: azureCredential{Key: "NOT*BASE64*SECRET", AuthType: "key"}},
			wantErr: "Azure shared key"},
		{name: "as unknown type", url: "as://acct/c/r", cred: credential{azure: azureCredential{AuthType: "sas"}},
			wantErr: `Azure authentication type "sas" is not one of`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := &transports{}
			defer ts.closeIdle()
			b, err := openBucket(ctx, mustParse(t, tc.url), tc.cred, ts, zap.NewNop())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "SECRET") {
					t.Errorf("error shows the key: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b.Close()
		})
	}
}

// TestCloseDropsS3Connections: the AWS client builds its own copy of the
// transport it is given; its kept-alive connections are still known, and
// closed by closeIdle, so none outlives Close.
func TestCloseDropsS3Connections(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNotFound) // keeps the connection
	}))
	defer srv.Close()
	ctx := context.Background()
	ts := &transports{}
	loc := mustParse(t, "s3://"+strings.TrimPrefix(srv.URL, "http://")+"/bkt/repo")
	b, err := openS3(ctx, loc, s3Credential{KeyID: "k", Secret: "s"}, ts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Attributes(ctx, "repo/x"); err == nil {
		t.Fatal("a missing object has attributes")
	}
	ts.mu.Lock()
	n := len(ts.conns)
	ts.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d connections tracked after one request, want 1", n)
	}
	ts.closeIdle()
	ts.mu.Lock()
	n = len(ts.conns)
	ts.mu.Unlock()
	if n != 0 {
		t.Errorf("%d connections still open after closeIdle", n)
	}
	b.Close()
	srv.CloseClientConnections() // whatever the client side missed ends here, not in goleak's check
}
