package lint

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/triton-go/triton"

// allowed lists, for each leaf package, the packages of this module it may
// import. Packages not listed here (the root, adapters, commands, examples)
// may import any leaf.
var allowed = map[string][]string{
	"tensor":        {},
	"modelconfig":   {},
	"modelmetrics":  {},
	"backend":       {"tensor", "modelconfig", "modelmetrics"},
	"repository":    {"modelconfig"},
	"batcher":       {"tensor", "backend"},
	"ensemble":      {"tensor", "backend", "modelconfig"},
	"ratelimit":     {},
	"warmup":        {"tensor", "modelconfig"},
	"responsecache": {"tensor"},
	"sysshm":        {},
	"settings":      {},
	"cloudrepo":     {},
}

// rootForbidden are imports the root package must never have: wire
// protocols belong to the adapters, object storage to cloudrepo.
var rootForbidden = []string{"net/http", "google.golang.org/grpc", "gocloud.dev"}

// testOnly are modules only tests may import (deploy's chart and KServe
// tests, the Dockerfile test): no package of the library or its commands
// may depend on them. internal/helmtest, a test helper itself, is the one
// non-test package that may import them, and only _test.go files may
// import it.
var testOnly = []string{"k8s.io/", "sigs.k8s.io/", "github.com/prometheus-operator/", "github.com/moby/buildkit/", module + "/internal/helmtest"}

var bannedNames = []string{"util", "utils", "common", "helpers", "types", "base", "core", "misc", "models"}

// packages maps each package folder (relative, "" for the root) to the
// imports of its non-test files.
func packages(t *testing.T) map[string][]string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	pkgs := map[string][]string{}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); p != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		rel = filepath.ToSlash(rel)
		if rel == "." {
			rel = ""
		}
		for _, imp := range f.Imports {
			ip, _ := strconv.Unquote(imp.Path.Value)
			pkgs[rel] = append(pkgs[rel], ip)
		}
		if _, ok := pkgs[rel]; !ok {
			pkgs[rel] = nil
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 5 {
		t.Fatalf("found only %d packages; is the walk rooted right?", len(pkgs))
	}
	return pkgs
}

func TestImportDirection(t *testing.T) {
	for dir, imports := range packages(t) {
		leaf := dir
		if strings.HasPrefix(dir, "backend/") {
			leaf = "backend" // backend implementations follow backend's rules, plus themselves
		}
		ok, isLeaf := allowed[leaf]
		if !isLeaf {
			continue
		}
		for _, ip := range imports {
			if ip != module && !strings.HasPrefix(ip, module+"/") {
				continue
			}
			rel := strings.TrimPrefix(strings.TrimPrefix(ip, module), "/")
			if rel == "" {
				t.Errorf("%s imports the root package %s (see DESIGN.md: leaves never import the root)", dir, module)
				continue
			}
			if strings.HasPrefix(rel, "internal/") || strings.HasPrefix(rel, "cgo/") || strings.HasPrefix(rel, dir+"/") ||
				(dir != leaf && rel == leaf) || slices.Contains(ok, rel) {
				continue
			}
			t.Errorf("%s imports %s; it may import only %v", dir, ip, ok)
		}
	}
}

func TestRootImports(t *testing.T) {
	for _, ip := range packages(t)[""] {
		for _, bad := range rootForbidden {
			if ip == bad || strings.HasPrefix(ip, bad+"/") {
				t.Errorf("the root package imports %s; wire protocols belong in httpapi/grpcapi, object storage in cloudrepo", ip)
			}
		}
	}
}

func TestPackageNames(t *testing.T) {
	for dir := range packages(t) {
		if slices.Contains(bannedNames, path.Base(dir)) {
			t.Errorf("package folder %q has a banned name (STYLE.md 2.11)", dir)
		}
	}
}

func TestEveryPackageHasDoc(t *testing.T) {
	root, _ := filepath.Abs("../..")
	for dir := range packages(t) {
		if strings.HasPrefix(dir, "examples/") || strings.HasPrefix(dir, "cmd/") {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, dir, "doc.go")); err != nil {
			t.Errorf("package %q has no doc.go", dir)
		}
	}
}

func TestTestOnlyImports(t *testing.T) {
	for dir, imports := range packages(t) {
		if dir == "internal/helmtest" {
			continue
		}
		for _, ip := range imports {
			for _, p := range testOnly {
				if strings.HasPrefix(ip, p) {
					t.Errorf("%s imports %s in a non-test file; only tests may (it would enter the library's import graph)", dir, ip)
				}
			}
		}
	}
}
