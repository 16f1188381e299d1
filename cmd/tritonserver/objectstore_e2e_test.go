package main

import (
	"bytes"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/triton-go/triton/internal/s3test"
	"github.com/triton-go/triton/internal/testenv"
)

// addSubInfer is a JSON request for add_sub, whose OUTPUT0 is A+B.
const addSubInfer = `{"inputs":[{"name":"INPUT0","shape":[1,16],"datatype":"FP32","data":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16]},` +
	`{"name":"INPUT1","shape":[1,16],"datatype":"FP32","data":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}],"outputs":[{"name":"OUTPUT0"}]}`

// waitUntil asks cond at every tick until it holds, failing t after limit:
// the server's own answers are the event waited for.
func waitUntil(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(limit)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("%s: not within %v", what, limit)
		}
	}
}

// TestObjectStorageRepository serves a repository from a real S3 server
// (versitygw on loopback, through a proxy that can cut connections):
// models load from the bucket; a new version uploaded while the network
// drops mid-download is never loaded half copied, the old version keeps
// serving, and once the network is back the poller loads the new one.
func TestObjectStorageRepository(t *testing.T) {
	testenv.NeedLibrary(t)
	s3 := s3test.Start(t)
	s3.CreateBucket(t, "models")
	for _, m := range []string{"add_sub", "text_reverse"} {
		s3.PutDir(t, "models", "repo/"+m, filepath.Join(exampleRepo, m))
	}
	proxy := s3.Proxy(t)
	t.Setenv("AWS_ACCESS_KEY_ID", s3.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s3.SecretKey)
	cache := t.TempDir()
	t.Setenv("TRITON_AWS_MOUNT_DIRECTORY", cache)
	srv := startBinary(t, "--model-repository="+proxy.URL("models", "repo"), exampleBackends,
		"--model-control-mode=poll", "--repository-poll-secs=1")

	infer := func(path string) (int, string) {
		code, _, body := srv.do("POST", path, "application/json", []byte(addSubInfer), nil)
		return code, string(body)
	}
	if code, body := infer("/v2/models/add_sub/infer"); code != 200 || !strings.Contains(body, `"data":[2.0,3.0,4.0`) {
		t.Fatalf("add_sub from the bucket: %d %s", code, body)
	}
	code, _, body := srv.do("POST", "/v2/models/text_reverse/infer", "application/json",
		[]byte(`{"inputs":[{"name":"TEXT","shape":[1],"datatype":"BYTES","data":["bucket"]}]}`), nil)
	if code != 200 || !strings.Contains(string(body), `"tekcub"`) {
		t.Fatalf("text_reverse from the bucket: %d %s", code, body)
	}

	// Version 2, with a file big enough to be cut in its middle.
	model, err := os.ReadFile(filepath.Join(exampleRepo, "add_sub", "1", "model.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	padding := make([]byte, 4<<20)
	_, _ = rand.Read(padding)
	ready := func(version string) bool {
		code, _, _ := srv.do("GET", "/v2/models/add_sub/versions/"+version+"/ready", "", nil, nil)
		return code == 200
	}
	proxy.CutAfter(1 << 20)
	before := proxy.Stats().Cuts
	s3.PutFile(t, "models", "repo/add_sub/2/padding.bin", padding)
	s3.PutFile(t, "models", "repo/add_sub/2/model.onnx", model)
	waitUntil(t, 60*time.Second, "two polls cut mid-download", func() bool { return proxy.Stats().Cuts >= before+2 })
	if ready("2") {
		t.Fatal("version 2 is ready though its download was cut")
	}
	if code, body := infer("/v2/models/add_sub/versions/1/infer"); code != 200 {
		t.Fatalf("version 1 after the failed downloads: %d %s", code, body)
	}
	matches, _ := filepath.Glob(filepath.Join(cache, "*", "add_sub", "2", "padding.bin"))
	for _, m := range matches {
		if fi, err := os.Stat(m); err == nil && fi.Size() != int64(len(padding)) {
			t.Errorf("a partial file is visible in the repository copy: %s, %d bytes", m, fi.Size())
		}
	}

	proxy.Heal()
	waitUntil(t, 60*time.Second, "version 2 loaded once the network is back", func() bool { return ready("2") })
	if code, body := infer("/v2/models/add_sub/infer"); code != 200 || !strings.Contains(body, `"model_version":"2"`) {
		t.Fatalf("add_sub after the reload: %d %s", code, body)
	}
	srv.terminate(30 * time.Second)
	if entries, _ := os.ReadDir(cache); len(entries) != 0 {
		t.Errorf("the repository copy is left behind after exit: %d entries in %s", len(entries), cache)
	}
}

// TestObjectStorageErrors: a bucket that does not exist and wrong
// credentials stop the start with an error naming the URL and the cause,
// and never the secret.
func TestObjectStorageErrors(t *testing.T) {
	s3 := s3test.Start(t)
	s3.CreateBucket(t, "models")
	for _, tc := range []struct {
		name, url, key, secret, want string
	}{
		{"no bucket", s3.URL("missing", "repo"), s3.AccessKey, s3.SecretKey, "missing"},
		{"wrong secret", s3.URL("models", "repo"), s3.AccessKey, "not-the-secret-" + s3.SecretKey[:8], "models"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(buildBinary(t), "--model-repository="+tc.url, "--http-port=0", "--grpc-port=0", "--metrics-port=0")
			cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID="+tc.key, "AWS_SECRET_ACCESS_KEY="+tc.secret)
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			deadline := time.AfterFunc(60*time.Second, func() { _ = cmd.Process.Kill() })
			err := cmd.Run()
			deadline.Stop()
			if err == nil {
				t.Fatalf("started:\n%s", out.String())
			}
			text := out.String()
			if !strings.Contains(text, tc.url) || !strings.Contains(text, tc.want) {
				t.Errorf("the error does not name %s (%s):\n%s", tc.url, tc.want, text)
			}
			if strings.Contains(text, tc.secret) || strings.Contains(text, s3.SecretKey) {
				t.Errorf("the output shows the secret:\n%s", text)
			}
		})
	}
}
