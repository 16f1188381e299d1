package deploy_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moby/buildkit/frontend/dockerfile/parser"
)

// instruction is one Dockerfile instruction: its keyword, lowercase, and
// its arguments (for the JSON forms of ENTRYPOINT and CMD, the elements).
type instruction struct {
	keyword string
	args    []string
	json    bool
	line    int
}

// stage is the instructions from one FROM to the next.
type stage struct {
	name, from string
	body       []instruction
}

// parseStages parses the Dockerfile with BuildKit's parser, failing the
// test on an error or a warning, and splits it into stages.
func parseStages(t *testing.T, path string) []stage {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	res, err := parser.Parse(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for _, w := range res.Warnings {
		t.Errorf("%s: %s %s", path, w.Short, bytes.Join(w.Detail, []byte(" ")))
	}
	var stages []stage
	for _, n := range res.AST.Children {
		in := instruction{keyword: strings.ToLower(n.Value), json: n.Attributes["json"], line: n.StartLine}
		for a := n.Next; a != nil; a = a.Next {
			in.args = append(in.args, a.Value)
		}
		if in.keyword == "from" {
			s := stage{from: in.args[0]}
			if len(in.args) == 3 && strings.EqualFold(in.args[1], "as") {
				s.name = in.args[2]
			}
			stages = append(stages, s)
			continue
		}
		if len(stages) > 0 {
			stages[len(stages)-1].body = append(stages[len(stages)-1].body, in)
		}
	}
	return stages
}

// runs is the text of every RUN of s.
func (s stage) runs() string {
	var b strings.Builder
	for _, in := range s.body {
		if in.keyword == "run" {
			b.WriteString(strings.Join(in.args, " "))
			b.WriteString("\n")
		}
	}
	return b.String()
}

// last is the last instruction of s with the keyword, if any.
func (s stage) last(keyword string) (instruction, bool) {
	for i := len(s.body) - 1; i >= 0; i-- {
		if s.body[i].keyword == keyword {
			return s.body[i], true
		}
	}
	return instruction{}, false
}

// TestDockerfile checks deploy/Dockerfile as BuildKit reads it: the stages
// in order, with the default target (the last stage) the slim server; the
// build stages running the scripts that `make deps` runs; the server stage
// starting tritonserver as user 1000 with Triton's three ports; and the
// .dockerignore keeping the local caches out of the build context.
func TestDockerfile(t *testing.T) {
	stages := parseStages(t, "Dockerfile")
	var names []string
	byName := map[string]stage{}
	for _, s := range stages {
		names = append(names, s.name)
		byName[s.name] = s
	}
	if want := []string{"build", "torch-shim", "server", "full", ""}; !slices.Equal(names, want) {
		t.Fatalf("stages %q, want %q", names, want)
	}
	if last := stages[len(stages)-1]; last.from != "server" || len(last.body) != 0 {
		t.Errorf("the default target is FROM %s with %d instructions, want the server stage as it is", last.from, len(last.body))
	}
	if byName["torch-shim"].from != "build" || byName["full"].from != "server" {
		t.Errorf("torch-shim is FROM %s and full FROM %s, want build and server", byName["torch-shim"].from, byName["full"].from)
	}

	// The build stages run the scripts make runs (scripts/deps.sh).
	deps, err := os.ReadFile(filepath.Join("..", "scripts", "deps.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for stageName, script := range map[string]string{"build": "scripts/fetch-onnxruntime.sh", "torch-shim": "scripts/build-torch-shim.sh"} {
		if !strings.Contains(byName[stageName].runs(), script) {
			t.Errorf("stage %s does not run %s", stageName, script)
		}
		if !strings.Contains(string(deps), script) {
			t.Errorf("scripts/deps.sh no longer runs %s, which stage %s runs", script, stageName)
		}
		if fi, err := os.Stat(filepath.Join("..", script)); err != nil || fi.Mode()&0o111 == 0 {
			t.Errorf("%s: %v, mode %v: the image runs it, so it must exist and be executable", script, err, fi)
		}
	}
	if runs := byName["build"].runs(); !strings.Contains(runs, "go build") || !strings.Contains(runs, "./cmd/tritonserver") {
		t.Errorf("the build stage does not build ./cmd/tritonserver: %s", runs)
	}

	server := byName["server"]
	if u, ok := server.last("user"); !ok || len(u.args) != 1 || strings.SplitN(u.args[0], ":", 2)[0] != "1000" {
		t.Errorf("server stage USER %v, want 1000 (not root)", u.args)
	}
	if e, ok := server.last("entrypoint"); !ok || !e.json || !slices.Equal(e.args, []string{"tritonserver"}) {
		t.Errorf(`server stage ENTRYPOINT %v (JSON form %v), want ["tritonserver"]`, e.args, e.json)
	}
	if e, ok := server.last("expose"); !ok || !slices.Equal(e.args, []string{"8000", "8001", "8002"}) {
		t.Errorf("server stage EXPOSE %v, want Triton's 8000 8001 8002", e.args)
	}
	if u, ok := byName["full"].last("user"); !ok || u.args[0] == "root" || strings.HasPrefix(u.args[0], "0") {
		t.Errorf("the full stage ends as USER %v, want the unprivileged user again", u.args)
	}

	ignore, err := os.ReadFile(filepath.Join("..", ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(ignore))
	for _, want := range []string{".git", ".cache"} {
		if !slices.Contains(lines, want) {
			t.Errorf(".dockerignore does not keep %s out of the build context", want)
		}
	}
}
