package repoagent_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/repoagent"
)

func digest(data string) string {
	sum := md5.Sum([]byte(data))
	return hex.EncodeToString(sum[:])
}

func model(files fstest.MapFS, agents ...*modelconfig.ModelRepositoryAgents_Agent) repoagent.Model {
	return repoagent.Model{Name: "m", FS: files, Config: &modelconfig.ModelConfig{
		ModelRepositoryAgents: &modelconfig.ModelRepositoryAgents{Agents: agents},
	}}
}

func checksum(params map[string]string) *modelconfig.ModelRepositoryAgents_Agent {
	return &modelconfig.ModelRepositoryAgents_Agent{Name: "checksum", Parameters: params}
}

// TestChecksum: the digests the configuration gives are checked against
// the files, with Triton's texts for what fails.
func TestChecksum(t *testing.T) {
	files := fstest.MapFS{
		"1/model.onnx": {Data: []byte("weights")},
		"labels.txt":   {Data: []byte("cat\ndog\n")},
		"1":            {Mode: os.ModeDir},
	}
	good := map[string]string{"MD5:1/model.onnx": digest("weights"), "md5:labels.txt": strings.ToUpper(digest("cat\ndog\n"))}
	if err := repoagent.Run(context.Background(), model(files, checksum(good)), repoagent.Builtin()); err != nil {
		t.Fatalf("matching digests: %v", err)
	}
	for _, c := range []struct {
		name   string
		params map[string]string
		want   string
		is     error
	}{
		{"mismatch", map[string]string{"MD5:1/model.onnx": digest("other")},
			"Mismatched MD5 hash for file 1/model.onnx, expect: " + digest("other") + ", got: " + digest("weights"), repoagent.ErrMismatch},
		{"missing file", map[string]string{"MD5:2/model.onnx": digest("x")}, "failed to open text file for read 2/model.onnx", os.ErrNotExist},
		{"folder", map[string]string{"MD5:1": digest("x")}, "failed to open text file for read 1: a folder, not a regular file", nil},
		{"outside", map[string]string{"MD5:../other/model.onnx": digest("x")}, "not a path inside the model folder", nil},
		{"no algorithm", map[string]string{"1/model.onnx": digest("x")}, "failed to parse key: 1/model.onnx", nil},
		{"other algorithm", map[string]string{"SHA256:1/model.onnx": digest("x")}, "Unsupported checksum algorithm: SHA256", errors.ErrUnsupported},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := repoagent.Run(context.Background(), model(files, checksum(c.params)), repoagent.Builtin())
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "repository agent 'checksum'") {
				t.Fatalf("error %v, want one with %q", err, c.want)
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("error %v does not wrap %v", err, c.is)
			}
		})
	}
}

// TestChecksumNamedPipe: a named pipe in place of a model file is refused
// without opening it (an open would wait for a writer for ever).
func TestChecksumNamedPipe(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "model.onnx"), 0o600); err != nil {
		t.Skip("no named pipes here:", err)
	}
	m := model(nil, checksum(map[string]string{"MD5:model.onnx": digest("x")}))
	m.FS = os.DirFS(dir)
	m.Stat = func(file string) (os.FileInfo, error) { return os.Stat(filepath.Join(dir, file)) }
	err := repoagent.Run(context.Background(), m, repoagent.Builtin())
	if err == nil || !strings.Contains(err.Error(), "a named pipe, not a regular file") {
		t.Fatalf("error %v", err)
	}
}

// TestRun: agents run in the configuration's order with their own
// parameters; an unknown one fails with the names the server has.
func TestRun(t *testing.T) {
	var ran []string
	agents := repoagent.Builtin()
	agents["audit"] = repoagent.Func(func(_ context.Context, m repoagent.Model, params map[string]string) error {
		ran = append(ran, m.Name+":"+params["who"])
		return nil
	})
	m := model(fstest.MapFS{"x": {Data: []byte("x")}},
		&modelconfig.ModelRepositoryAgents_Agent{Name: "audit", Parameters: map[string]string{"who": "first"}},
		checksum(map[string]string{"MD5:x": digest("x")}),
		&modelconfig.ModelRepositoryAgents_Agent{Name: "audit", Parameters: map[string]string{"who": "second"}})
	if err := repoagent.Run(context.Background(), m, agents); err != nil {
		t.Fatal(err)
	}
	if strings.Join(ran, ",") != "m:first,m:second" {
		t.Errorf("ran %v", ran)
	}
	m = model(nil, &modelconfig.ModelRepositoryAgents_Agent{Name: "encryption"})
	err := repoagent.Run(context.Background(), m, agents)
	if !errors.Is(err, repoagent.ErrUnknownAgent) || !strings.Contains(err.Error(), "repository agent 'encryption' of model 'm' is not one this server has (audit, checksum;") {
		t.Errorf("unknown agent: %v", err)
	}
}

// cancelFS serves one file, of size bytes, whose first read cancels the
// load's context, as a shutdown would midway through a large model file.
type cancelFS struct {
	cancel context.CancelFunc
	size   int
	reads  *int
}

func (c cancelFS) Open(name string) (fs.File, error) {
	return &cancelFile{c: c, left: c.size}, nil
}

type cancelFile struct {
	c    cancelFS
	left int
}

func (f *cancelFile) Stat() (fs.FileInfo, error) {
	return fstest.MapFS{"f": {Data: make([]byte, f.c.size)}}.Stat("f")
}

func (f *cancelFile) Read(p []byte) (int, error) {
	*f.c.reads++
	f.c.cancel()
	if f.left == 0 {
		return 0, io.EOF
	}
	n := min(len(p), f.left)
	f.left -= n
	return n, nil
}

func (f *cancelFile) Close() error { return nil }

// TestChecksumCancelled: hashing stops once the load's context ends, not
// at the end of the file.
func TestChecksumCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reads := 0
	m := model(nil, checksum(map[string]string{"MD5:model.onnx": digest("x")}))
	m.FS = cancelFS{cancel: cancel, size: 64 << 20, reads: &reads}
	err := repoagent.Run(ctx, m, repoagent.Builtin())
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
	if reads != 1 {
		t.Errorf("%d reads of a 64 MiB file after the context ended at the first, want 1", reads)
	}
}
