package python_test

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/tensor"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// envModel says where its interpreter lives and what the environment's own
// module holds.
const envModel = `import json, os, sys
import numpy as np
import triton_python_backend_utils as pb_utils
import envmod


class TritonPythonModel:
    def execute(self, requests):
        info = json.dumps({"prefix": sys.prefix, "value": envmod.VALUE, "virtual_env": os.environ.get("VIRTUAL_ENV")})
        return [pb_utils.InferenceResponse([pb_utils.Tensor("INFO", np.array([info.encode()], dtype=object))]) for _ in requests]
`

const envConfig = `backend: "python"
input [ { name: "X" data_type: TYPE_FP32 dims: [ 1 ] } ]
output [ { name: "INFO" data_type: TYPE_STRING dims: [ 1 ] } ]
parameters { key: "EXECUTION_ENV_PATH" value { string_value: "%s" } }
`

// packVenv makes a venv (Debian's python3, its numpy through the system's
// site-packages) with a module envmod of VALUE value, and packs it as
// conda-pack does into a gzipped tar file at dst, with the mtime given.
func packVenv(t *testing.T, dst string, value string, mtime time.Time) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "env")
	if out, err := exec.Command("/usr/bin/python3", "-m", "venv", "--without-pip", "--system-site-packages", dir).CombinedOutput(); err != nil {
		t.Fatalf("venv: %v\n%s", err, out)
	}
	site, _ := filepath.Glob(filepath.Join(dir, "lib", "python3*", "site-packages"))
	if len(site) != 1 {
		t.Fatalf("site-packages: %v", site)
	}
	if err := os.WriteFile(filepath.Join(site[0], "envmod.py"), []byte("VALUE = "+value+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var entries []tarEntry
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		link := ""
		if fi.Mode()&os.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		h.Name = "./" + filepath.ToSlash(rel) // as tar -C dir . names them
		var data []byte
		if fi.Mode().IsRegular() {
			if data, err = os.ReadFile(p); err != nil {
				return err
			}
		}
		entries = append(entries, tarEntry{h, data})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	writeTarGz(t, dst, entries)
	if err := os.Chtimes(dst, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

type tarEntry struct {
	h    *tar.Header
	data []byte
}

func writeTarGz(t *testing.T, dst string, entries []tarEntry) {
	t.Helper()
	f, err := os.Create(dst)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		if err := tw.WriteHeader(e.h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(e.data); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []io.Closer{tw, zw, f} {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// unpackedEnvs lists the environments unpacked in tmp.
func unpackedEnvs(t *testing.T, tmp string) []string {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(tmp, "python_env_*"))
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// TestPackedExecutionEnv: an EXECUTION_ENV_PATH naming a packed
// environment (a .tar.gz, as conda-pack makes) is unpacked once for the
// models that share it, its interpreter and packages run their stubs, a
// changed file is unpacked again for the model loaded after the change,
// and each unpacked folder goes with the last model using it.
func TestPackedExecutionEnv(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	r := newRepo(t)
	packed := filepath.Join(t.TempDir(), "env.tar.gz")
	first := time.Now().Add(-time.Hour).Truncate(time.Second)
	packVenv(t, packed, "1", first)
	for _, m := range []string{"a", "b"} {
		r.model(m, strings.Replace(envConfig, "%s", packed, 1), envModel)
	}
	core, logs := observer.New(zap.InfoLevel)
	srv := r.Serve(triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit}), triton.WithStartupModels("a", "b"),
		triton.WithLogger(zap.New(core)))
	unpacks := func() int { return logs.FilterMessageSnippet("Extracting Python execution env").Len() }
	ask := func(model string) (prefix string, value float64) {
		t.Helper()
		resp, err := infer(t, srv, model, must(tensor.From("X", tensor.Shape{1}, []float32{0})))
		if err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		var info map[string]any
		if err := json.Unmarshal([]byte(stringsOut(t, resp, "INFO")[0]), &info); err != nil {
			t.Fatal(err)
		}
		if info["virtual_env"] != info["prefix"] {
			t.Errorf("%s: VIRTUAL_ENV %v, prefix %v", model, info["virtual_env"], info["prefix"])
		}
		return info["prefix"].(string), info["value"].(float64)
	}
	pa, va := ask("a")
	pb, vb := ask("b")
	if !strings.HasPrefix(pa, filepath.Join(tmp, "python_env_")) || pa != pb || va != 1 || vb != 1 {
		t.Fatalf("a ran in %s (envmod %v), b in %s (%v); want one unpacked folder under %s, envmod 1", pa, va, pb, vb, tmp)
	}
	if got := unpackedEnvs(t, tmp); len(got) != 1 || unpacks() != 1 {
		t.Errorf("unpacked %v, %d times; want once", got, unpacks())
	}

	packVenv(t, packed, "2", first.Add(time.Minute))
	r.write("b/config.pbtxt", strings.Replace(envConfig, "%s", packed, 1)+"# changed: reloaded\n")
	if err := srv.Load(t.Context(), "b", nil); err != nil {
		t.Fatal(err)
	}
	pb2, vb2 := ask("b")
	if pb2 == pa || vb2 != 2 || unpacks() != 2 {
		t.Errorf("b after the file changed: %s, envmod %v, %d unpackings; want a new folder, envmod 2, 2", pb2, vb2, unpacks())
	}
	if pa2, va2 := ask("a"); pa2 != pa || va2 != 1 {
		t.Errorf("a after b's reload: %s, envmod %v; want its folder as it was", pa2, va2)
	}
	if _, err := os.Stat(pa); err != nil {
		t.Errorf("a's environment went while a uses it: %v", err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if got := unpackedEnvs(t, tmp); len(got) != 0 {
		t.Errorf("left after Close: %v", got)
	}
}

// TestPackedExecutionEnvRefused: archives that would write outside their
// folder, or are not archives, fail the load saying why, and leave
// nothing unpacked.
func TestPackedExecutionEnvRefused(t *testing.T) {
	needPython(t)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	outside := t.TempDir()
	file := func(name string) tarEntry {
		return tarEntry{&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: 2}, []byte("x\n")}
	}
	for _, c := range []struct {
		name    string
		entries []tarEntry
		raw     string
		want    string
	}{
		{"dot-dot", []tarEntry{file("bin/activate"), file("../escape")}, "", `entry "../escape" lies outside the environment`},
		{"through a link", []tarEntry{
			{&tar.Header{Name: "lib/out", Typeflag: tar.TypeSymlink, Linkname: outside, Mode: 0o777}, nil},
			file("lib/out/pwned"),
		}, "", `entry "lib/out/pwned"`},
		{"hard link out", []tarEntry{{&tar.Header{Name: "x", Typeflag: tar.TypeLink, Linkname: "../../etc/passwd"}, nil}}, "",
			`a hard link to "../../etc/passwd", outside the environment`},
		{"not an archive", nil, "plain text", "not a gzipped tar file"},
		{"no activate", []tarEntry{file("bin/python3")}, "", "/bin/activate does not exist"},
	} {
		t.Run(c.name, func(t *testing.T) {
			packed := filepath.Join(t.TempDir(), "env.tar.gz")
			if c.raw != "" {
				if err := os.WriteFile(packed, []byte(c.raw), 0o644); err != nil {
					t.Fatal(err)
				}
			} else {
				writeTarGz(t, packed, c.entries)
			}
			err := newRepo(t).model("m", strings.Replace(envConfig, "%s", packed, 1), envModel).Load()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want %q", err, c.want)
			}
			if got := unpackedEnvs(t, tmp); len(got) != 0 {
				t.Errorf("left unpacked: %v", got)
			}
			if _, err := os.Stat(filepath.Join(outside, "pwned")); err == nil {
				t.Error("wrote through a link outside the environment")
			}
		})
	}
	err := newRepo(t).model("m", strings.Replace(envConfig, "%s", "/nonexistent/env.tar.gz", 1), envModel).Load()
	if err == nil || !strings.Contains(err.Error(), "Failed to get the canonical path for /nonexistent/env.tar.gz.") {
		t.Errorf("missing file: %v", err)
	}
}

// TestCustomStubIgnored: a model folder's own triton_python_backend_stub
// (Triton's stub, built for another Python) cannot run here; the model
// loads with this backend's stub, and the log says the file is not used.
func TestCustomStubIgnored(t *testing.T) {
	r := newRepo(t)
	r.model("m", strings.Replace(envConfig, `parameters { key: "EXECUTION_ENV_PATH" value { string_value: "%s" } }`, "", 1),
		strings.Replace(envModel, "import envmod\n", "envmod = type('envmod', (), {'VALUE': 0})\n", 1))
	r.write("m/triton_python_backend_stub", "\x7fELF a binary built for another Python")
	core, logs := observer.New(zap.WarnLevel)
	srv := r.Serve(triton.WithLogger(zap.New(core)))
	if _, err := infer(t, srv, "m", must(tensor.From("X", tensor.Shape{1}, []float32{0}))); err != nil {
		t.Fatal(err)
	}
	if n := logs.FilterMessageSnippet("triton_python_backend_stub is not used").Len(); n == 0 {
		t.Errorf("no warning about the model's own stub in %v", logs.All())
	}
}
