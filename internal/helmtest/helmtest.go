package helmtest

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/triton-go/triton/internal/testenv"
)

// Helm returns the path of the helm binary in .cache/bin, skipping tb (or
// failing it under CI=true) when it is missing.
func Helm(tb testing.TB) string {
	tb.Helper()
	p := filepath.Join(testenv.RepoRoot(tb), ".cache", "bin", "helm")
	testenv.Need(tb, p, "run make test-tools (scripts/test-tools.sh installs helm)")
	return p
}

// Run runs helm with args and returns its standard output. Helm's own
// configuration, cache and data folders are temporary ones, so that
// nothing on the machine changes what it does. A failure returns an error
// holding helm's standard error.
func Run(tb testing.TB, args ...string) (string, error) {
	tb.Helper()
	cmd := exec.Command(Helm(tb), args...)
	home := tb.TempDir()
	cmd.Env = append(cmd.Environ(),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_DATA_HOME="+filepath.Join(home, "data"),
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// Template renders chart (a folder) as release "test" in namespace
// "test" with the values files in order, failing tb if helm fails, and
// returns the manifests.
func Template(tb testing.TB, chart string, valuesFiles ...string) Docs {
	tb.Helper()
	out, err := Run(tb, templateArgs(chart, valuesFiles)...)
	if err != nil {
		tb.Fatal(err)
	}
	docs, err := Split([]byte(out))
	if err != nil {
		tb.Fatal(err)
	}
	return docs
}

// TemplateArgs is helm template's command line as [Template] runs it, for
// tests that add flags (--set) and expect a failure.
func TemplateArgs(chart string, valuesFiles []string, extra ...string) []string {
	return append(templateArgs(chart, valuesFiles), extra...)
}

func templateArgs(chart string, valuesFiles []string) []string {
	args := []string{"template", "test", chart, "--namespace", "test"}
	for _, f := range valuesFiles {
		args = append(args, "--values", f)
	}
	return args
}

// Doc is one manifest: where it came from (helm's "# Source:" comment,
// or the file), its type and name, and its YAML.
type Doc struct {
	Source     string
	APIVersion string
	Kind       string
	Name       string
	YAML       []byte
}

func (d Doc) String() string {
	return fmt.Sprintf("%s %s/%s (%s)", d.APIVersion, d.Kind, d.Name, d.Source)
}

// Docs are the manifests of one render or file, in order.
type Docs []Doc

// Kind returns the manifests of the kind.
func (ds Docs) Kind(kind string) Docs {
	var out Docs
	for _, d := range ds {
		if d.Kind == kind {
			out = append(out, d)
		}
	}
	return out
}

// Only returns the one manifest of the kind, failing tb when there is
// none or more than one.
func (ds Docs) Only(tb testing.TB, kind string) Doc {
	tb.Helper()
	found := ds.Kind(kind)
	if len(found) != 1 {
		tb.Fatalf("%d manifests of kind %s, want 1: %v", len(found), kind, ds)
	}
	return found[0]
}

var (
	separator = regexp.MustCompile(`(?m)^---[ \t]*$`)
	source    = regexp.MustCompile(`(?m)^# Source: (.*)$`)
)

// Split cuts a multi-document YAML stream into manifests, dropping empty
// documents, and reads each one's apiVersion, kind and name. A document
// that is not YAML, or has no apiVersion or kind, is an error.
func Split(data []byte) (Docs, error) {
	var docs Docs
	for _, part := range separator.Split(string(data), -1) {
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(part), &head); err != nil {
			return nil, fmt.Errorf("%s: %w", sourceOf(part), err)
		}
		if head.APIVersion == "" && head.Kind == "" && strings.TrimSpace(stripComments(part)) == "" {
			continue
		}
		if head.APIVersion == "" || head.Kind == "" {
			return nil, fmt.Errorf("%s: a manifest without apiVersion or kind", sourceOf(part))
		}
		docs = append(docs, Doc{Source: sourceOf(part), APIVersion: head.APIVersion, Kind: head.Kind, Name: head.Metadata.Name, YAML: []byte(part)})
	}
	return docs, nil
}

func sourceOf(part string) string {
	if m := source.FindStringSubmatch(part); m != nil {
		return m[1]
	}
	return "document"
}

func stripComments(s string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line)
		}
	}
	return b.String()
}

// Decode decodes d strictly into v, failing tb on any error:
// [DecodeStrict].
func Decode(tb testing.TB, d Doc, v any) {
	tb.Helper()
	if err := DecodeStrict(d.YAML, v); err != nil {
		tb.Fatalf("%v: %v", d, err)
	}
}

// DecodeStrict converts YAML to JSON (a duplicate key is an error) and
// decodes it into v as the API server's strict field validation does
// (sigs.k8s.io/json, the decoder of k8s.io/apimachinery's strict
// serializer): field names match case-sensitively, and an unknown or
// duplicate field is an error, as is a value of the wrong type.
func DecodeStrict(data []byte, v any) error {
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return err
	}
	strict, err := json.UnmarshalStrict(j, v)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}
