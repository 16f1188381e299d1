package repository_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/triton-go/triton/repository"
)

// layout is a repository described by its paths; entries ending in "/"
// are folders, the rest files.
var layout = []string{
	"resnet/config.pbtxt",
	"resnet/labels.txt",
	"resnet/1/model.onnx",
	"resnet/3/model.onnx",
	"resnet/10/model.onnx",
	"resnet/0/model.onnx",                    // version 0 is impossible
	"resnet/01/model.onnx",                   // leading zero
	"resnet/-1/model.onnx",                   // sign
	"resnet/abc/model.onnx",                  // not a number
	"resnet/99999999999999999999/model.onnx", // overflows int64
	"resnet/2",                               // a file, not a folder
	"resnet/warmup/x.bin",
	"bert/config.pbtxt",
	"empty/",
	".git/HEAD",
	".hidden_model/1/model.onnx",
	"README.md",
}

func mapFS(paths ...string) fstest.MapFS {
	m := fstest.MapFS{}
	for _, p := range paths {
		if strings.HasSuffix(p, "/") {
			m[strings.TrimSuffix(p, "/")] = &fstest.MapFile{Mode: os.ModeDir | 0o755}
			continue
		}
		m[p] = &fstest.MapFile{Data: []byte("x")}
	}
	return m
}

func writeTree(t *testing.T, dir string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func names(models []repository.ModelDir) []string {
	var out []string
	for _, m := range models {
		out = append(out, m.Name)
	}
	return out
}

func TestScanLayout(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, layout...)
	tests := []struct {
		name string
		root repository.Root
		dir  string // expected ModelDir.Dir of resnet
	}{
		{"MapFS", repository.FSRoot(mapFS(layout...)), ""},
		{"DirRoot", repository.DirRoot(dir), filepath.Join(dir, "resnet")},
		{"DirOnly", repository.Root{Dir: dir}, filepath.Join(dir, "resnet")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			core, logs := observer.New(zapcore.DebugLevel)
			models, err := repository.Scan([]repository.Root{tt.root}, zap.New(core))
			if err != nil {
				t.Fatal(err)
			}
			if got, want := names(models), []string{"bert", "empty", "resnet"}; !slices.Equal(got, want) {
				t.Fatalf("models = %v, want %v", got, want)
			}
			resnet := models[2]
			if want := []int64{1, 3, 10}; !slices.Equal(resnet.Versions, want) {
				t.Errorf("resnet versions = %v, want %v", resnet.Versions, want)
			}
			if len(models[0].Versions) != 0 || len(models[1].Versions) != 0 {
				t.Errorf("bert/empty versions = %v/%v, want none", models[0].Versions, models[1].Versions)
			}
			if resnet.Dir != tt.dir {
				t.Errorf("Dir = %q, want %q", resnet.Dir, tt.dir)
			}
			// FS is rooted at the model folder.
			if data, err := resnet.FS.Open("labels.txt"); err != nil {
				t.Errorf("model FS: %v", err)
			} else {
				data.Close()
			}
			// Every ignored folder is named in a log line; the numeric
			// look-alikes at Info.
			for _, folder := range []string{"0", "01", "-1", "abc", "99999999999999999999", "warmup"} {
				entries := logs.FilterField(zap.String("folder", folder)).All()
				if len(entries) != 1 {
					t.Errorf("folder %q: %d log lines, want 1", folder, len(entries))
					continue
				}
				wantLevel := zapcore.InfoLevel
				if folder == "abc" || folder == "warmup" {
					wantLevel = zapcore.DebugLevel
				}
				if entries[0].Level != wantLevel {
					t.Errorf("folder %q logged at %v, want %v", folder, entries[0].Level, wantLevel)
				}
			}
			if n := logs.FilterField(zap.String("entry", ".hidden_model")).Len(); n != 1 {
				t.Errorf("hidden entry logged %d times, want 1", n)
			}
		})
	}
}

func TestScanSymlinkedModel(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, "store/real/1/model.onnx", "repo/")
	if err := os.Symlink(filepath.Join(dir, "store", "real"), filepath.Join(dir, "repo", "linked")); err != nil {
		t.Skip("symlinks not supported:", err)
	}
	if err := os.Symlink(filepath.Join(dir, "missing"), filepath.Join(dir, "repo", "dangling")); err != nil {
		t.Fatal(err)
	}
	models, err := repository.Scan([]repository.Root{repository.DirRoot(filepath.Join(dir, "repo"))}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(models); !slices.Equal(got, []string{"linked"}) {
		t.Fatalf("models = %v, want [linked]", got)
	}
	if !slices.Equal(models[0].Versions, []int64{1}) {
		t.Errorf("versions = %v, want [1]", models[0].Versions)
	}
}

func TestScanRoots(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	writeTree(t, dirA, "zeta/1/model.onnx", "alpha/2/model.plan")
	writeTree(t, dirB, "mid/1/model.onnx", "alpha/1/model.onnx")
	tests := []struct {
		name    string
		roots   []repository.Root
		want    []string
		wantErr []string // substrings of the error
	}{
		{
			name:  "two FS roots merged and sorted",
			roots: []repository.Root{repository.FSRoot(mapFS("zeta/1/m", "beta/")), repository.FSRoot(mapFS("alpha/1/m"))},
			want:  []string{"alpha", "beta", "zeta"},
		},
		{
			name:    "duplicate across FS roots",
			roots:   []repository.Root{repository.FSRoot(mapFS("a/1/m", "b/")), repository.FSRoot(mapFS("c/", "a/"))},
			wantErr: []string{`model "a"`, "repository root 0", "repository root 1"},
		},
		{
			name:    "duplicate across disk roots names both",
			roots:   []repository.Root{repository.DirRoot(dirA), repository.DirRoot(dirB)},
			wantErr: []string{`model "alpha"`, dirA, dirB},
		},
		{
			name:  "no roots",
			roots: nil,
			want:  nil,
		},
		{
			name:    "empty root",
			roots:   []repository.Root{{}},
			wantErr: []string{"neither FS nor Dir"},
		},
		{
			name:    "missing folder",
			roots:   []repository.Root{repository.DirRoot(filepath.Join(dirA, "nope"))},
			wantErr: []string{filepath.Join(dirA, "nope")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			models, err := repository.Scan(tt.roots, nil)
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("Scan succeeded with %v, want error", names(models))
				}
				for _, s := range tt.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not mention %q", err, s)
					}
				}
				if models != nil {
					t.Errorf("models = %v on error, want nil", names(models))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := names(models); !slices.Equal(got, tt.want) {
				t.Errorf("models = %v, want %v", got, tt.want)
			}
		})
	}
	t.Run("model keeps its root", func(t *testing.T) {
		a, b := repository.FSRoot(mapFS("x/")), repository.FSRoot(mapFS("y/"))
		models, err := repository.Scan([]repository.Root{a, b}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if models[1].Root.FS == nil || models[1].Name != "y" {
			t.Fatalf("unexpected models %+v", models)
		}
		if _, err := models[1].Root.FS.Open("y"); err != nil {
			t.Errorf("y's Root is not the second repository: %v", err)
		}
	})
}

// TestScanReadErrors injects failures into the file system and checks that
// they come back wrapped, with the path that failed.
func TestScanReadErrors(t *testing.T) {
	base := mapFS("good/1/model.onnx", "bad/1/model.onnx", "bad/config.pbtxt")
	tests := []struct {
		name  string
		fsys  errFS
		where string // substring naming the failed path
	}{
		{"root open", errFS{fsys: base, failOpen: map[string]error{".": errInjected}}, "repository root 0"},
		{"root readdir", errFS{fsys: base, failReadDir: map[string]error{".": errInjected}}, "repository root 0"},
		{"model open", errFS{fsys: base, failOpen: map[string]error{"bad": errInjected}}, "bad"},
		{"model readdir", errFS{fsys: base, failReadDir: map[string]error{"bad": errInjected}}, "read model folder bad"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := repository.Scan([]repository.Root{repository.FSRoot(tt.fsys)}, nil)
			if !errors.Is(err, errInjected) {
				t.Fatalf("err = %v, want the injected error", err)
			}
			if !strings.Contains(err.Error(), tt.where) {
				t.Errorf("error %q does not name %q", err, tt.where)
			}
		})
	}
	t.Run("config read", func(t *testing.T) {
		fsys := errFS{fsys: base, failOpen: map[string]error{"bad/config.pbtxt": errInjected}}
		models, err := repository.Scan([]repository.Root{repository.FSRoot(fsys)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, found, err := repository.ReadConfig(models[0])
		if !errors.Is(err, errInjected) || found {
			t.Fatalf("ReadConfig = found %v, %v; want the injected error", found, err)
		}
		if !strings.Contains(err.Error(), "bad/config.pbtxt") {
			t.Errorf("error %q does not name bad/config.pbtxt", err)
		}
	})
}
