package repository_test

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/prototext"

	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/repository"
)

// errFS wraps an fs.FS and fails chosen operations, in the manner of
// pebble's errorfs: Open of a path in failOpen fails, and ReadDir on a
// folder in failReadDir fails after the folder was opened.
type errFS struct {
	fsys        fs.FS
	failOpen    map[string]error
	failReadDir map[string]error
}

func (e errFS) Open(name string) (fs.File, error) {
	if err, ok := e.failOpen[name]; ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	f, err := e.fsys.Open(name)
	if err != nil {
		return nil, err
	}
	if err, ok := e.failReadDir[name]; ok {
		return failingDir{f, name, err}, nil
	}
	return f, nil
}

type failingDir struct {
	fs.File
	name string
	err  error
}

func (d failingDir) ReadDir(int) ([]fs.DirEntry, error) {
	return nil, &fs.PathError{Op: "readdir", Path: d.name, Err: d.err}
}

var errInjected = errors.New("injected failure")

// mustParse parses a config for a test, failing it on error.
func mustParse(t *testing.T, text string) *modelconfig.ModelConfig {
	t.Helper()
	cfg, err := repository.ParseConfig("test.pbtxt", []byte(text))
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	return cfg
}

// text renders a config compactly for failure messages.
func text(m *modelconfig.ModelConfig) string {
	return prototext.MarshalOptions{}.Format(m)
}

// configErrors flattens the result of Validate into its *ConfigError values.
func configErrors(t *testing.T, err error) []*repository.ConfigError {
	t.Helper()
	if err == nil {
		return nil
	}
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	out := make([]*repository.ConfigError, 0, len(errs))
	for _, e := range errs {
		var ce *repository.ConfigError
		if !errors.As(e, &ce) {
			t.Fatalf("error %q is not a *ConfigError", e)
		}
		out = append(out, ce)
	}
	return out
}

func joinMessages(errs []*repository.ConfigError) string {
	var b strings.Builder
	for _, e := range errs {
		b.WriteString("\n\t")
		b.WriteString(e.Error())
	}
	return b.String()
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
