package grpcapi_test

import (
	"context"
	"fmt"
	"io/fs"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/grpcapi/inferencepb"
	"github.com/triton-go/triton/tensor"
)

// weightsBackend loads models that answer OUTPUT0 (BYTES [1]) with the
// content of their version folder's "weights.bin" ("none" without one).
type weightsBackend struct{}

func (weightsBackend) Load(_ context.Context, spec *backend.ModelSpec) (backend.Model, error) {
	weights := "none"
	if vfs, err := spec.VersionFS(); err == nil {
		if b, err := fs.ReadFile(vfs, "weights.bin"); err == nil {
			weights = string(b)
		}
	}
	return backend.Func(func(_ context.Context, b *backend.Batch) error {
		for _, r := range b.Requests {
			out, err := tensor.FromStrings("OUTPUT0", tensor.Shape{1}, []string{weights})
			if err != nil {
				return err
			}
			r.SetOutput(out)
		}
		return nil
	}), nil
}

const weightsConfig = `name: %q backend: "weights"
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_STRING dims: [ 1 ] } ]`

// newExplicitFixture serves models a (version 1), b (versions 1 and 2) and
// bad (an unknown backend) in explicit model control, loading startup
// models at start.
func newExplicitFixture(t *testing.T, startup ...string) *fixture {
	t.Helper()
	files := map[string]string{
		"a/config.pbtxt":   fmt.Sprintf(weightsConfig, "a"),
		"a/1/weights.bin":  "A1",
		"b/config.pbtxt":   fmt.Sprintf(weightsConfig, "b"),
		"b/1/weights.bin":  "B1",
		"b/2/weights.bin":  "B2",
		"bad/config.pbtxt": `name: "bad" backend: "nosuch" input [ { name: "X" data_type: TYPE_INT32 dims: [1] } ] output [ { name: "Y" data_type: TYPE_INT32 dims: [1] } ]`,
		"bad/1/model":      "",
	}
	return newFixture(t, setup{files: files, server: []triton.Option{
		triton.WithBackend("weights", weightsBackend{}),
		triton.WithModelControl(triton.ModelControl{Mode: triton.ControlExplicit}),
		triton.WithStartupModels(startup...),
	}})
}

// wantWeights checks what model serves, in process.
func wantWeights(t *testing.T, f *fixture, model, want string) {
	t.Helper()
	in, _ := tensor.From("INPUT0", tensor.Shape{1}, []int32{0})
	resp, err := f.srv.Infer(context.Background(), &triton.InferRequest{Model: model, Inputs: []tensor.Tensor{in}})
	if err != nil {
		t.Fatalf("infer %s: %v", model, err)
	}
	out, _ := resp.Output("OUTPUT0")
	if got, err := tensor.Strings(out); err != nil || len(got) != 1 || got[0] != want {
		t.Errorf("%s serves %q (%v), want %q", model, got, err, want)
	}
}

type indexRow struct{ name, version, state, reason string }

func repoIndex(t *testing.T, f *fixture, ready bool) []indexRow {
	t.Helper()
	resp, err := f.client.RepositoryIndex(context.Background(), &inferencepb.RepositoryIndexRequest{Ready: ready})
	if err != nil {
		t.Fatalf("RepositoryIndex: %v", err)
	}
	var rows []indexRow
	for _, m := range resp.GetModels() {
		rows = append(rows, indexRow{m.GetName(), m.GetVersion(), m.GetState(), m.GetReason()})
	}
	return rows
}

func TestRepositoryIndex(t *testing.T) {
	f := newExplicitFixture(t, "a")
	want := []indexRow{{"a", "1", "READY", ""}, {"b", "", "", ""}, {"bad", "", "", ""}}
	if got := repoIndex(t, f, false); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("index %v, want %v", got, want)
	}
	if got := repoIndex(t, f, true); fmt.Sprint(got) != fmt.Sprint(want[:1]) {
		t.Errorf("ready index %v", got)
	}
	_, err := f.client.RepositoryIndex(context.Background(), &inferencepb.RepositoryIndexRequest{RepositoryName: "models"})
	wantStatus(t, err, codes.Unimplemented, "'repository_name' specification is not supported")

	// Not explicit: every model READY, version 1.
	g := newFixture(t, setup{})
	rows := repoIndex(t, g, false)
	if len(rows) != len(repo())/2 || rows[0].state != "READY" || rows[0].version != "1" {
		t.Errorf("index of the standard repository: %v", rows)
	}
}

func TestRepositoryLoadUnload(t *testing.T) {
	ctx := context.Background()
	f := newExplicitFixture(t, "a")
	// Load b: the default policy serves the latest version, 2.
	if _, err := f.client.RepositoryModelLoad(ctx, &inferencepb.RepositoryModelLoadRequest{ModelName: "b"}); err != nil {
		t.Fatalf("load b: %v", err)
	}
	wantWeights(t, f, "b", "B2")
	if r, err := f.client.ModelReady(ctx, &inferencepb.ModelReadyRequest{Name: "b"}); err != nil || !r.GetReady() {
		t.Errorf("b ready: %v, %v", r, err)
	}

	// A failed load: an error, and the reason in the index.
	_, err := f.client.RepositoryModelLoad(ctx, &inferencepb.RepositoryModelLoadRequest{ModelName: "bad"})
	if err == nil {
		t.Fatal("loading bad succeeded")
	}
	for _, r := range repoIndex(t, f, false) {
		if r.name == "bad" && (r.state != "UNAVAILABLE" || r.reason == "") {
			t.Errorf("bad model row %v", r)
		}
	}

	// Unload (unload_dependents accepted): UNAVAILABLE "unloaded".
	_, err = f.client.RepositoryModelUnload(ctx, &inferencepb.RepositoryModelUnloadRequest{ModelName: "b", Parameters: map[string]*inferencepb.ModelRepositoryParameter{
		"unload_dependents": {ParameterChoice: &inferencepb.ModelRepositoryParameter_BoolParam{BoolParam: true}},
		"ignored":           {ParameterChoice: &inferencepb.ModelRepositoryParameter_Int64Param{Int64Param: 1}},
	}})
	if err != nil {
		t.Fatalf("unload b: %v", err)
	}
	if got := repoIndex(t, f, true); fmt.Sprint(got) != fmt.Sprint([]indexRow{{"a", "1", "READY", ""}}) {
		t.Errorf("ready index after unload: %v", got)
	}
	found := false
	for _, r := range repoIndex(t, f, false) {
		if r.name == "b" {
			found = true
			if r.state != "UNAVAILABLE" || r.reason != "unloaded" {
				t.Errorf("unloaded row %v", r)
			}
		}
	}
	if !found {
		t.Error("no row for b after unload")
	}
	if r, err := f.client.ModelReady(ctx, &inferencepb.ModelReadyRequest{Name: "b"}); err == nil && r.GetReady() {
		t.Errorf("b still ready after unload")
	}

	for _, tc := range []struct {
		name string
		req  *inferencepb.RepositoryModelUnloadRequest
		code codes.Code
		msg  string
	}{
		{"bad unload_dependents", &inferencepb.RepositoryModelUnloadRequest{ModelName: "a", Parameters: map[string]*inferencepb.ModelRepositoryParameter{
			"unload_dependents": {ParameterChoice: &inferencepb.ModelRepositoryParameter_StringParam{StringParam: "yes"}},
		}}, codes.InvalidArgument, "invalid value type for 'unload_dependents' parameter, expected bool_param."},
		{"repository name", &inferencepb.RepositoryModelUnloadRequest{RepositoryName: "r", ModelName: "a"}, codes.Unimplemented, "'repository_name' specification is not supported"},
		{"unknown model", &inferencepb.RepositoryModelUnloadRequest{ModelName: "zzz"}, codes.NotFound, "failed to unload 'zzz'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.client.RepositoryModelUnload(ctx, tc.req)
			wantStatus(t, err, tc.code, tc.msg)
		})
	}
	wantWeights(t, f, "a", "A1") // the refused unloads left a alone
}

func TestRepositoryLoadOverrides(t *testing.T) {
	ctx := context.Background()
	f := newExplicitFixture(t)
	str := func(s string) *inferencepb.ModelRepositoryParameter {
		return &inferencepb.ModelRepositoryParameter{ParameterChoice: &inferencepb.ModelRepositoryParameter_StringParam{StringParam: s}}
	}
	raw := func(b []byte) *inferencepb.ModelRepositoryParameter {
		return &inferencepb.ModelRepositoryParameter{ParameterChoice: &inferencepb.ModelRepositoryParameter_BytesParam{BytesParam: b}}
	}
	load := func(model string, params map[string]*inferencepb.ModelRepositoryParameter) error {
		_, err := f.client.RepositoryModelLoad(ctx, &inferencepb.RepositoryModelLoadRequest{ModelName: model, Parameters: params})
		return err
	}
	cfg := `{"name":"c","backend":"weights","input":[{"name":"INPUT0","data_type":"TYPE_INT32","dims":[1]}],"output":[{"name":"OUTPUT0","data_type":"TYPE_STRING","dims":[1]}]}`
	if err := load("c", map[string]*inferencepb.ModelRepositoryParameter{
		"config":              str(cfg),
		"file:1/weights.bin":  raw([]byte("from the wire")),
		"file:1/sub/more.bin": raw([]byte{0, 1, 2}),
	}); err != nil {
		t.Fatalf("load c: %v", err)
	}
	wantWeights(t, f, "c", "from the wire")

	// A config override alone reloads a repository model with it.
	if err := load("a", map[string]*inferencepb.ModelRepositoryParameter{"config": str(`{"name":"a","backend":"weights","version_policy":{"specific":{"versions":[1]}},"input":[{"name":"INPUT0","data_type":"TYPE_INT32","dims":[1]}],"output":[{"name":"OUTPUT0","data_type":"TYPE_STRING","dims":[1]}]}`)}); err != nil {
		t.Fatalf("load a with a config: %v", err)
	}
	wantWeights(t, f, "a", "A1")
	resp, err := f.client.ModelConfig(ctx, &inferencepb.ModelConfigRequest{Name: "a"})
	if err != nil || resp.GetConfig().GetVersionPolicy().GetSpecific() == nil {
		t.Errorf("a's config after the override: %v, %v", resp, err)
	}

	for _, tc := range []struct {
		name   string
		model  string
		params map[string]*inferencepb.ModelRepositoryParameter
		code   codes.Code
		msg    string
	}{
		{"unknown key", "a", map[string]*inferencepb.ModelRepositoryParameter{"bogus": str("x")}, codes.InvalidArgument, "unrecognized load parameter 'bogus'."},
		{"config not a string", "a", map[string]*inferencepb.ModelRepositoryParameter{"config": raw([]byte("{}"))}, codes.InvalidArgument, "invalid value type for load parameter 'config', expected string_param."},
		{"config unset", "a", map[string]*inferencepb.ModelRepositoryParameter{"config": {}}, codes.InvalidArgument, "invalid value type for load parameter 'config', expected string_param."},
		{"file not bytes", "c", map[string]*inferencepb.ModelRepositoryParameter{"config": str("{}"), "file:1/x": str("x")}, codes.InvalidArgument, "invalid value type for load parameter 'file:1/x', expected bytes_param."},
		{"file without config", "c", map[string]*inferencepb.ModelRepositoryParameter{"file:1/x": raw([]byte("x"))}, codes.InvalidArgument, "file overrides need a config override too"},
		{"file escaping the folder", "c", map[string]*inferencepb.ModelRepositoryParameter{"config": str("{}"), "file:../../etc/passwd": raw([]byte("x"))}, codes.Internal, "failed to load 'c', failed to poll from model repository"},
		{"absolute file", "c", map[string]*inferencepb.ModelRepositoryParameter{"config": str("{}"), "file:/etc/passwd": raw([]byte("x"))}, codes.InvalidArgument, "Could not determine backend for model 'c'"}, // inside the folder, as in Triton
		{"malformed config", "c", map[string]*inferencepb.ModelRepositoryParameter{"config": str("{")}, codes.InvalidArgument, "config override"},
		{"dot dot", "..", nil, codes.InvalidArgument, "failed to load '..'"},
		{"unknown model", "nosuch", nil, codes.NotFound, "failed to load 'nosuch'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wantStatus(t, load(tc.model, tc.params), tc.code, tc.msg)
		})
	}
	_, err = f.client.RepositoryModelLoad(ctx, &inferencepb.RepositoryModelLoadRequest{RepositoryName: "r", ModelName: "a"})
	wantStatus(t, err, codes.Unimplemented, "'repository_name' specification is not supported")
	wantWeights(t, f, "c", "from the wire") // failed loads left c alone
}

func TestRepositoryNotExplicit(t *testing.T) {
	f := newFixture(t, setup{})
	ctx := context.Background()
	_, err := f.client.RepositoryModelLoad(ctx, &inferencepb.RepositoryModelLoadRequest{ModelName: "simple"})
	wantStatus(t, err, codes.Unavailable, "explicit model load / unload is not allowed if polling is enabled")
	_, err = f.client.RepositoryModelUnload(ctx, &inferencepb.RepositoryModelUnloadRequest{ModelName: "simple"})
	wantStatus(t, err, codes.Unavailable, "explicit model load / unload is not allowed if polling is enabled")
}
