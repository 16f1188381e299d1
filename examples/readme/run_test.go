package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/triton-go/triton/internal/testenv"
)

// TestMakeRunHint runs scripts/run.sh, the second half of `make run` (after
// deps), as make does but on free ports: it says what it builds, then the
// server prints a curl line, and that line, run as printed, answers with
// the model's output: the model it names is served by
// examples/model_repository and the body is one it accepts.
func TestMakeRunHint(t *testing.T) {
	testenv.NeedLibrary(t)
	root := testenv.RepoRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(root, "scripts", "run.sh"), "--http-port=0", "--grpc-port=0", "--metrics-port=0")
	cmd.Env = append(cmd.Environ(), "TRITONSERVER_BIN="+filepath.Join(t.TempDir(), "tritonserver"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	stop := sync.OnceFunc(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-exited // cmd.Wait has returned: stderr is complete and ours to read
	})
	defer stop()
	lines := bufio.NewScanner(stdout)
	var hint string
	for lines.Scan() {
		if lines.Text() == "try:" && lines.Scan() {
			hint = strings.TrimSpace(lines.Text())
			break
		}
	}
	go func() {
		defer close(exited)
		_, _ = io.Copy(io.Discard, stdout)
		_ = cmd.Wait()
	}()
	if hint == "" {
		stop()
		t.Fatalf("no curl hint on stdout; stderr:\n%s", stderr.String())
	}
	defer func() {
		stop()
		for _, p := range []string{"run: go build ./cmd/tritonserver: ", "run: built ", " MB, ", "run: serving examples/model_repository: "} {
			if !strings.Contains(stderr.String(), p) {
				t.Errorf("run.sh did not say %q:\n%s", p, stderr.String())
			}
		}
	}()

	// The hint's request, as curl makes it (-d: a POST with that body).
	m := regexp.MustCompile(`^curl -s (localhost:\d+)(/v2/models/(\w+)/infer) -d '([^']*)'$`).FindStringSubmatch(hint)
	if m == nil {
		t.Fatalf("the hint is not the curl line this test knows: %q", hint)
	}
	const want = `"outputs":[{"name":"REVERSED","datatype":"BYTES","shape":[2],"data":["olleh","notirt"]}]`
	resp, err := http.Post("http://"+m[1]+m[2], "application/x-www-form-urlencoded", strings.NewReader(m[4]))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
		t.Errorf("%s: %d %s", hint, resp.StatusCode, body)
	}
	// And the line itself, through the shell, where curl is installed.
	if _, err := exec.LookPath("curl"); err == nil {
		out, err := exec.CommandContext(ctx, "sh", "-c", hint).CombinedOutput()
		if err != nil || !strings.Contains(string(out), want) {
			t.Errorf("sh -c %q: %v: %s", hint, err, out)
		}
	}
}
