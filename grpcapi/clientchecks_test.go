package grpcapi_test

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/triton-go/triton/grpcapi/inferencepb"
)

// TestClientExampleChecks makes the requests of Triton's client examples
// (triton-inference-server/client, src/python/examples) that compare an
// error's code or text, and checks the answer as they do, or more
// strictly: the package documentation lists them.
func TestClientExampleChecks(t *testing.T) {
	ctx := context.Background()
	f := newExplicitFixture(t, "a")
	str := func(s string) *inferencepb.ModelRepositoryParameter {
		return &inferencepb.ModelRepositoryParameter{ParameterChoice: &inferencepb.ModelRepositoryParameter_StringParam{StringParam: s}}
	}
	load := func(model string, params map[string]*inferencepb.ModelRepositoryParameter) func() error {
		return func() error {
			_, err := f.client.RepositoryModelLoad(ctx, &inferencepb.RepositoryModelLoadRequest{ModelName: model, Parameters: params})
			return err
		}
	}
	for _, tc := range []struct {
		example string
		call    func() error
		code    codes.Code // codes.OK: any code
		check   func(msg string) bool
		want    string
	}{
		{"simple_grpc_model_control.py: malformed config override",
			load("a", map[string]*inferencepb.ModelRepositoryParameter{"config": str(`"parameters": {"config": {{"max_batch_size": "16"}}}`)}),
			codes.OK, func(m string) bool { return strings.Contains(m, "failed to load") }, `a message holding "failed to load"`},
		{"simple_grpc_model_control.py: file path element over NAME_MAX",
			load("a", map[string]*inferencepb.ModelRepositoryParameter{
				"config":                           str("{}"),
				"file:" + strings.Repeat("A", 256): {ParameterChoice: &inferencepb.ModelRepositoryParameter_BytesParam{BytesParam: []byte("a")}},
			}),
			// The example asks for INTERNAL and a message holding "failed
			// to poll from model repository"; this is Triton's whole message.
			codes.Internal, func(m string) bool { return m == "failed to load 'a', failed to poll from model repository" },
			`"failed to load 'a', failed to poll from model repository"`},
		{"simple_grpc_model_control.py: unknown model",
			load("wrong_model_name", nil),
			codes.OK, func(m string) bool { return strings.Contains(m, "failed to load") }, `a message holding "failed to load"`},
		{"simple_grpc_health_metadata.py: metadata of an unknown model",
			func() error {
				_, err := f.client.ModelMetadata(ctx, &inferencepb.ModelMetadataRequest{Name: "wrong_model_name"})
				return err
			},
			codes.OK, func(m string) bool { return strings.Contains(m, "Request for unknown model") }, `a message holding "Request for unknown model"`},
	} {
		t.Run(tc.example, func(t *testing.T) {
			err := tc.call()
			st, ok := status.FromError(err)
			if err == nil || !ok {
				t.Fatalf("got %v, want a status error", err)
			}
			if tc.code != codes.OK && st.Code() != tc.code {
				t.Errorf("code %v, want %v (message %q)", st.Code(), tc.code, st.Message())
			}
			if !tc.check(st.Message()) {
				t.Errorf("message %q, want %s", st.Message(), tc.want)
			}
		})
	}
	// The example then checks that the server is live, and what was
	// served is served still.
	if live, err := f.client.ServerLive(ctx, &inferencepb.ServerLiveRequest{}); err != nil || !live.GetLive() {
		t.Fatalf("server live after the refused loads: %v, %v", live, err)
	}
	wantWeights(t, f, "a", "A1")
}
