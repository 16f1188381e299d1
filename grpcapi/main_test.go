package grpcapi_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/backend"
	"github.com/triton-go/triton/grpcapi"
	"github.com/triton-go/triton/grpcapi/healthpb"
	"github.com/triton-go/triton/grpcapi/inferencepb"
	"github.com/triton-go/triton/tensor"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// mirror answers every input "INPUTn" with the same tensor as "OUTPUTn".
var mirror = backend.Func(func(ctx context.Context, b *backend.Batch) error {
	for _, r := range b.Requests {
		for _, in := range r.Inputs {
			out := in
			out.Name = strings.Replace(in.Name, "INPUT", "OUTPUT", 1)
			r.SetOutput(out)
		}
	}
	return nil
})

// addSub computes OUTPUT0 = INPUT0 + INPUT1 and OUTPUT1 = INPUT0 - INPUT1
// (INT32, Triton's "simple" model).
var addSub = backend.Func(func(ctx context.Context, b *backend.Batch) error {
	for _, r := range b.Requests {
		in0, _ := r.Input("INPUT0")
		in1, _ := r.Input("INPUT1")
		x, err := tensor.View[int32](in0)
		if err != nil {
			return err
		}
		y, err := tensor.View[int32](in1)
		if err != nil {
			return err
		}
		sum, diff := make([]int32, len(x)), make([]int32, len(x))
		for i := range x {
			sum[i], diff[i] = x[i]+y[i], x[i]-y[i]
		}
		o0, _ := tensor.From("OUTPUT0", in0.Shape, sum)
		o1, _ := tensor.From("OUTPUT1", in0.Shape, diff)
		r.SetOutput(o0)
		r.SetOutput(o1)
	}
	return nil
})

// echoParams answers OUTPUT0 (BYTES [1]) with the request's parameters,
// sorted, as "k=v(type)" joined by ";".
var echoParams = backend.Func(func(ctx context.Context, b *backend.Batch) error {
	for _, r := range b.Requests {
		var parts []string
		for k, v := range r.Parameters {
			parts = append(parts, fmt.Sprintf("%s=%v(%T)", k, v, v))
		}
		slices.Sort(parts)
		out, err := tensor.FromStrings("OUTPUT0", tensor.Shape{1}, []string{strings.Join(parts, ";")})
		if err != nil {
			return err
		}
		r.SetOutput(out)
	}
	return nil
})

// blocker waits for its request's context to end and reports it.
type blocker struct {
	started chan struct{}
	ended   chan error
}

func newBlocker() *blocker {
	return &blocker{started: make(chan struct{}, 16), ended: make(chan error, 16)}
}

func (bl *blocker) backend() backend.Func {
	return func(ctx context.Context, b *backend.Batch) error {
		bl.started <- struct{}{}
		<-ctx.Done()
		bl.ended <- ctx.Err()
		return ctx.Err()
	}
}

// dtypes are the configuration names of the datatypes, and their protocol
// names.
var dtypes = []struct{ config, wire string }{
	{"TYPE_BOOL", "BOOL"}, {"TYPE_UINT8", "UINT8"}, {"TYPE_UINT16", "UINT16"}, {"TYPE_UINT32", "UINT32"},
	{"TYPE_UINT64", "UINT64"}, {"TYPE_INT8", "INT8"}, {"TYPE_INT16", "INT16"}, {"TYPE_INT32", "INT32"},
	{"TYPE_INT64", "INT64"}, {"TYPE_FP16", "FP16"}, {"TYPE_FP32", "FP32"}, {"TYPE_FP64", "FP64"},
	{"TYPE_STRING", "BYTES"}, {"TYPE_BF16", "BF16"},
}

const simpleConfig = `
name: "simple"
backend: "addsub"
max_batch_size: 8
input [
  { name: "INPUT0" data_type: TYPE_INT32 dims: [ 16 ] },
  { name: "INPUT1" data_type: TYPE_INT32 dims: [ 16 ] }
]
output [
  { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 16 ] },
  { name: "OUTPUT1" data_type: TYPE_INT32 dims: [ 16 ] }
]
`

// repo returns the standard test repository: simple (INT32 add/sub),
// params (echoes request parameters), decoupled, batched (FP32 [4],
// dynamic batching), block (waits for its ctx to end; backend "block"),
// and id_<wire> (batching) and nb_<wire> (not batching) identity models of
// every datatype, all with a version 1.
func repo() map[string]string {
	files := map[string]string{
		"simple/config.pbtxt": simpleConfig,
		"simple/1/model":      "",
		"params/config.pbtxt": `name: "params" backend: "params" max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_STRING dims: [ 1 ] } ]`,
		"params/1/model": "",
		"decoupled/config.pbtxt": `name: "decoupled" backend: "mirror" max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
model_transaction_policy { decoupled: true }`,
		"decoupled/1/model": "",
		"batched/config.pbtxt": `name: "batched" backend: "mirror" max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 4 ] } ]
dynamic_batching { }`,
		"batched/1/model": "",
		"block/config.pbtxt": `name: "block" backend: "block" max_batch_size: 0
input [ { name: "INPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_INT32 dims: [ 1 ] } ]`,
		"block/1/model": "",
	}
	for _, d := range dtypes {
		for _, m := range []struct {
			prefix string
			batch  int
		}{{"id_", 8}, {"nb_", 0}} {
			name := m.prefix + d.wire
			files[name+"/config.pbtxt"] = fmt.Sprintf(`name: %q backend: "mirror" max_batch_size: %d
input [ { name: "INPUT0" data_type: %s dims: [ -1 ] } ]
output [ { name: "OUTPUT0" data_type: %s dims: [ -1 ] } ]`, name, m.batch, d.config, d.config)
			files[name+"/1/model"] = ""
		}
	}
	return files
}

func mapFS(files map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{}
	for name, content := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(content)}
	}
	return fsys
}

// fixture is a triton.Server over the standard repository (or another),
// served by grpcapi over an in-memory connection.
type fixture struct {
	srv    *triton.Server
	block  *blocker
	client inferencepb.GRPCInferenceServiceClient
	health healthpb.HealthClient
	conn   *grpc.ClientConn
}

// setup configures a fixture.
type setup struct {
	files  map[string]string // nil: repo()
	server []triton.Option
	svc    []grpcapi.Option
}

// newFixture starts a fixture; everything closes when the test ends.
func newFixture(t testing.TB, s setup) *fixture {
	t.Helper()
	if s.files == nil {
		s.files = repo()
	}
	f := &fixture{block: newBlocker()}
	opts := append([]triton.Option{
		triton.WithRepository(mapFS(s.files)),
		triton.WithBackend("mirror", mirror),
		triton.WithBackend("addsub", addSub),
		triton.WithBackend("params", echoParams),
		triton.WithBackend("block", f.block.backend()),
	}, s.server...)
	srv, err := triton.New(opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	f.srv = srv
	lis := bufconn.Listen(1 << 20)
	g := grpc.NewServer(grpcapi.ServerOptions()...)
	grpcapi.New(srv, s.svc...).Register(g)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = g.Serve(lis)
	}()
	conn, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	f.conn = conn
	f.client = inferencepb.NewGRPCInferenceServiceClient(conn)
	f.health = healthpb.NewHealthClient(conn)
	t.Cleanup(func() {
		_ = conn.Close()
		g.Stop()
		<-served
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return f
}

// wantStatus fails unless err is a gRPC status with code whose message
// holds every part.
func wantStatus(t testing.TB, err error, code codes.Code, parts ...string) {
	t.Helper()
	st, ok := status.FromError(err)
	if !ok || err == nil {
		t.Fatalf("error %v is not a gRPC status (want %v)", err, code)
	}
	if st.Code() != code {
		t.Errorf("code %v, want %v (message %q)", st.Code(), code, st.Message())
	}
	for _, p := range parts {
		if !strings.Contains(st.Message(), p) {
			t.Errorf("message %q does not contain %q", st.Message(), p)
		}
	}
}
