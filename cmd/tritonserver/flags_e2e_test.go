package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/triton-go/triton/grpcapi/inferencepb"
	"github.com/triton-go/triton/internal/testenv"
)

// exampleRepo is the example repository; its text_reverse model runs on
// the Go backend compiled into the binary, so it needs no native library.
const exampleRepo = "../../examples/model_repository"

// exampleBackends is the flag that gives the example repository's
// Python-based backends (examples/backends).
const exampleBackends = "--backend-directory=../../examples/backends"

// reverseOnly serves text_reverse alone.
var reverseOnly = []string{"--model-repository=" + exampleRepo, "--model-control-mode=explicit", "--load-model=text_reverse"}

// pki is a certificate authority and the certificates it signed, as PEM
// files in a folder.
type pki struct {
	dir  string
	pool *x509.CertPool
	ca   *x509.Certificate
	key  *ecdsa.PrivateKey
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	p := &pki{dir: t.TempDir(), pool: x509.NewCertPool(), ca: ca, key: key}
	p.pool.AddCert(ca)
	p.write(t, "ca.crt", "CERTIFICATE", der)
	return p
}

func (p *pki) write(t *testing.T, name, kind string, der []byte) string {
	t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// issue makes a certificate signed by the CA, for the server (valid for
// 127.0.0.1) or for a client, and writes it and its key as name.crt and
// name.key.
func (p *pki) issue(t *testing.T, name string, server bool) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.LoadX509KeyPair(p.write(t, name+".crt", "CERTIFICATE", der), p.write(t, name+".key", "PRIVATE KEY", keyDER))
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func (p *pki) path(name string) string { return filepath.Join(p.dir, name) }

// serverLive calls ServerLive over creds.
func serverLive(t *testing.T, addr string, creds credentials.TransportCredentials) error {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := inferencepb.NewGRPCInferenceServiceClient(conn).ServerLive(ctx, &inferencepb.ServerLiveRequest{})
	if err == nil && !r.GetLive() {
		t.Fatal("ServerLive: not live")
	}
	return err
}

// TestGRPCTLS serves gRPC over TLS and mutual TLS with certificates made
// here, and checks who gets in.
func TestGRPCTLS(t *testing.T) {
	ca := newPKI(t)
	ca.issue(t, "server", true)
	client := ca.issue(t, "client", false)
	rogueCA := newPKI(t)
	rogue := rogueCA.issue(t, "rogue", false)
	trusting := func(certs ...tls.Certificate) credentials.TransportCredentials {
		return credentials.NewTLS(&tls.Config{RootCAs: ca.pool, Certificates: certs})
	}

	t.Run("tls", func(t *testing.T) {
		s := startBinary(t, append(reverseOnly, "--grpc-use-ssl=true", "--grpc-server-cert", ca.path("server.crt"), "--grpc-server-key", ca.path("server.key"))...)
		if err := serverLive(t, s.grpc, trusting()); err != nil {
			t.Errorf("TLS client: %v", err)
		}
		if err := serverLive(t, s.grpc, insecure.NewCredentials()); status.Code(err) != codes.Unavailable {
			t.Errorf("plaintext client: %v, want Unavailable", err)
		}
		if err := serverLive(t, s.grpc, credentials.NewTLS(&tls.Config{RootCAs: rogueCA.pool})); status.Code(err) != codes.Unavailable {
			t.Errorf("client that does not trust the server's CA: %v, want Unavailable", err)
		}
	})
	t.Run("mutual", func(t *testing.T) {
		s := startBinary(t, append(reverseOnly, "--grpc-use-ssl-mutual", "true", "--grpc-server-cert", ca.path("server.crt"),
			"--grpc-server-key", ca.path("server.key"), "--grpc-root-cert", ca.path("ca.crt"))...)
		if err := serverLive(t, s.grpc, trusting(client)); err != nil {
			t.Errorf("client with a certificate: %v", err)
		}
		if err := serverLive(t, s.grpc, trusting()); status.Code(err) != codes.Unavailable {
			t.Errorf("client without a certificate: %v, want Unavailable", err)
		}
		if err := serverLive(t, s.grpc, trusting(rogue)); status.Code(err) != codes.Unavailable {
			t.Errorf("client with a certificate of another CA: %v, want Unavailable", err)
		}
	})
}

// TestGRPCMaxConnectionAge: the server closes a connection older than
// --grpc-max-connection-age (with GOAWAY), so the client's connection
// leaves READY; without the flag it would stay READY.
func TestGRPCMaxConnectionAge(t *testing.T) {
	s := startBinary(t, append(reverseOnly, "--grpc-max-connection-age=300", "--grpc-max-connection-age-grace=100")...)
	conn, err := grpc.NewClient(s.grpc, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := inferencepb.NewGRPCInferenceServiceClient(conn).ServerLive(ctx, &inferencepb.ServerLiveRequest{}); err != nil {
		t.Fatal(err)
	}
	for conn.GetState() != connectivity.Ready {
		if !conn.WaitForStateChange(ctx, conn.GetState()) {
			t.Fatal("never ready")
		}
	}
	if !conn.WaitForStateChange(ctx, connectivity.Ready) {
		t.Fatal("the connection outlived --grpc-max-connection-age=300 by 30 s")
	}
}

// TestLogFlags: --log-file receives the log; --log-info=false leaves info
// out; each flag that has no effect is named once, however often given.
func TestLogFlags(t *testing.T) {
	logFile := filepath.Join(t.TempDir(), "triton.log")
	s := startBinary(t, append(reverseOnly, "--log-file", logFile, "--log-info=false", "--log-warning=true",
		"--backend-directory=/opt/tritonserver/backends", "--backend-directory", "/other", "--repoagent-directory=/opt/tritonserver/repoagents",
		"--pinned-memory-pool-byte-size=268435456", "--allow-sagemaker=true", "--sagemaker-port=8080")...)
	if code, _, body := s.do("GET", "/v2/logging", "", nil, nil); code != 200 || !strings.Contains(string(body), `"log_file":"`+logFile+`"`) {
		t.Errorf("GET /v2/logging: %d %s; want log_file %s", code, body, logFile)
	}
	// The warnings are written before the servers listen, and the file is
	// not buffered.
	data, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	log := string(data)
	for _, flag := range []string{"--backend-directory", "--repoagent-directory", "--pinned-memory-pool-byte-size", "--allow-sagemaker", "--sagemaker-port"} {
		if n := strings.Count(log, `"flag": "`+flag+`"`); n != 1 {
			t.Errorf("%s named %d times in the log, want 1:\n%s", flag, n, log)
		}
	}
	if strings.Contains(log, "listening") {
		t.Errorf("info lines with --log-info=false:\n%s", log)
	}
	if !strings.Contains(log, "\twarn\t") {
		t.Errorf("no warning level in the log:\n%s", log)
	}
}

func TestLogLevels(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "info"},
		{[]string{"--log-verbose=1"}, "debug"},
		{[]string{"--log-info=false"}, "warn"},
		{[]string{"--log-info=false", "--log-warning=false"}, "error"},
		{[]string{"--log-info=false", "--log-warning=false", "--log-error=false"}, "dpanic"},
	} {
		c, err := parseFlags(append([]string{"--model-repository=/m"}, tc.args...), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		l, level, err := newLogger(c)
		if err != nil {
			t.Fatal(err)
		}
		_ = l.Sync()
		if got := level.Level().String(); got != tc.want {
			t.Errorf("%v: level %s, want %s", tc.args, got, tc.want)
		}
	}
}

// TestReusePort: with SO_REUSEPORT two listeners share a port; without,
// the second is refused.
func TestReusePort(t *testing.T) {
	ctx := context.Background()
	a, err := listen(ctx, "127.0.0.1:0", true)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	addr := a.Addr().String()
	b, err := listen(ctx, addr, true)
	if err != nil {
		t.Fatalf("second listener with --reuse-*-port: %v", err)
	}
	b.Close()
	if c, err := listen(ctx, addr, false); err == nil {
		c.Close()
		t.Fatal("a listener without SO_REUSEPORT shared the port")
	}
}

// metricRef finds the metric names in a PromQL expression.
var metricRef = regexp.MustCompile(`\b(nv|tritongo)_[a-z0-9_]+\b`)

// monitoringQueries returns the metric names examples/monitoring's
// dashboard panels and alert rules query.
func monitoringQueries(t *testing.T) []string {
	t.Helper()
	var names []string
	seen := map[string]bool{}
	for _, f := range []string{"grafana-dashboard.json", "alerts.yml"} {
		data, err := os.ReadFile(filepath.Join("../../examples/monitoring", f))
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		if f == "grafana-dashboard.json" {
			var dash struct {
				Panels []struct{ Targets []struct{ Expr string } }
			}
			if err := json.Unmarshal(data, &dash); err != nil {
				t.Fatal(err)
			}
			text = ""
			for _, p := range dash.Panels {
				for _, tg := range p.Targets {
					text += tg.Expr + "\n"
				}
			}
		}
		for _, n := range metricRef.FindAllString(text, -1) {
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
	}
	if len(names) < 10 {
		t.Fatalf("only %d metrics in the monitoring examples: %v", len(names), names)
	}
	return names
}

// TestMonitoringFamilies starts the server with Triton's latency
// switches, sends a request, and finds on /metrics every family the
// shipped Grafana panels and alert rules query (the stage histograms are
// on by default). GPU families are only required where NVML sees a GPU.
func TestMonitoringFamilies(t *testing.T) {
	s := startBinary(t, append(reverseOnly, "--metrics-config", "summary_latencies=true", "--metrics-config=histogram_latencies=true")...)
	code, _, body := s.do("POST", "/v2/models/text_reverse/infer", "application/json",
		[]byte(`{"inputs":[{"name":"TEXT","shape":[1],"datatype":"BYTES","data":["abc"]}]}`), nil)
	if code != 200 {
		t.Fatalf("infer: %d %s", code, body)
	}
	resp, err := http.Get(s.metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	scraped, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	present := map[string]bool{}
	for line := range strings.Lines(string(scraped)) {
		if name := metricRef.FindString(line); name != "" && strings.HasPrefix(line, name) {
			present[name] = true
		}
	}
	gpu := present["nv_gpu_utilization"]
	for _, name := range monitoringQueries(t) {
		if !gpu && (strings.HasPrefix(name, "nv_gpu_") || name == "nv_energy_consumption") {
			continue
		}
		if !present[name] {
			t.Errorf("the monitoring examples query %s, absent from /metrics", name)
		}
	}
	// The queue-time alert's series, for the model just used.
	if !regexp.MustCompile(`tritongo_request_stage_seconds_bucket\{[^}]*model="text_reverse"[^}]*stage="queue"`).Match(scraped) {
		t.Errorf("no queue-stage histogram for text_reverse:\n%s", scraped)
	}
}

// freePorts returns n ports free a moment ago.
func freePorts(t *testing.T, n int) []string {
	t.Helper()
	var ports []string
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		ports = append(ports, strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	}
	return ports
}

// TestKubernetesArgs runs the server with the arguments a Kubernetes
// manifest for tritonserver typically passes, values after spaces as
// well as after =, and checks it serves the whole example repository.
func TestKubernetesArgs(t *testing.T) {
	testenv.NeedLibrary(t)
	p := freePorts(t, 3)
	// args: ["tritonserver", "--model-repository=/models", ...] in a
	// container spec, with the ports the Service names.
	s := startCommand(t, "--model-repository="+exampleRepo, exampleBackends, "--strict-model-config=false", "--log-verbose=1",
		"--grpc-port", p[1], "--http-port", p[0], "--metrics-port", p[2], "--log-file", filepath.Join(t.TempDir(), "log"))
	if s.http != "http://127.0.0.1:"+p[0] || s.grpc != "127.0.0.1:"+p[1] || s.metrics != "http://127.0.0.1:"+p[2] {
		t.Fatalf("listening on %s, %s, %s; want ports %v", s.http, s.grpc, s.metrics, p)
	}
	for _, path := range []string{"/v2/health/live", "/v2/health/ready", "/v2/models/add_sub/ready", "/v2/models/text_reverse/ready", "/v2/models/add_sub_twice/ready"} {
		if code, _, body := s.do("GET", path, "", nil, nil); code != 200 {
			t.Errorf("%s: %d %s", path, code, body)
		}
	}
	if err := serverLive(t, s.grpc, insecure.NewCredentials()); err != nil {
		t.Errorf("gRPC: %v", err)
	}
}

// TestEveryFlagAtOnce runs the server with a manifest-style argument list
// that gives every tritonserver flag (but --help), and checks that it
// starts, answers over HTTP and mutual-TLS gRPC with the --id, and logs
// one warning for each flag that has no effect here.
func TestEveryFlagAtOnce(t *testing.T) {
	ca := newPKI(t)
	ca.issue(t, "server", true)
	client := ca.issue(t, "client", false)
	dir := t.TempDir()
	logFile := filepath.Join(dir, "triton.log")
	values := map[string]string{ // values the sample table cannot hold
		"model-store": exampleRepo, "model-repository": exampleRepo, "load-model": "text_reverse",
		"log-file": logFile, "log-info": "true", "log-verbose": "0",
		"http-address": "127.0.0.1", "grpc-address": "127.0.0.1", "metrics-address": "127.0.0.1",
		"http-port": "0", "grpc-port": "0", "metrics-port": "0",
		"grpc-use-ssl": "true", "grpc-use-ssl-mutual": "true",
		"grpc-server-cert": ca.path("server.crt"), "grpc-server-key": ca.path("server.key"), "grpc-root-cert": ca.path("ca.crt"),
		"grpc-max-connection-age": "0", "grpc-max-connection-age-grace": "0",
		"trace-file": filepath.Join(dir, "trace.json"), "trace-config": "triton,file=" + filepath.Join(dir, "trace.json"),
		"metrics-config": "histogram_latencies=true",
	}
	var args []string
	for i, f := range tritonFlags {
		v, ok := values[f.name]
		if !ok {
			v = f.value
		}
		switch {
		case f.name == "help" || f.name == "response-cache-byte-size": // --cache-config is given; both is an error
		case f.value == "":
			args = append(args, "--"+f.name)
		case i%2 == 0:
			args = append(args, "--"+f.name+"="+v)
		default:
			args = append(args, "--"+f.name, v)
		}
	}
	s := startCommand(t, args...)

	code, _, body := s.do("GET", "/v2", "", nil, nil)
	var md struct{ Name string }
	if code != 200 || json.Unmarshal(body, &md) != nil || md.Name != "my-triton" {
		t.Errorf("server metadata: %d %s, want the name my-triton", code, body)
	}
	code, _, body = s.do("POST", "/v2/models/text_reverse/infer", "application/json",
		[]byte(`{"inputs":[{"name":"TEXT","shape":[1],"datatype":"BYTES","data":["abc"]}]}`), nil)
	if code != 200 || !strings.Contains(string(body), `"cba"`) {
		t.Errorf("infer: %d %s", code, body)
	}
	// --http-max-input-size=1048576 (the sample value) bounds the body.
	big := []byte(`{"inputs":[{"name":"TEXT","shape":[1],"datatype":"BYTES","data":["` + strings.Repeat("a", 2<<20) + `"]}]}`)
	if code, _, body := s.do("POST", "/v2/models/text_reverse/infer", "application/json", big, nil); code != 400 || !strings.Contains(string(body), "--http-max-input-size") {
		t.Errorf("2 MiB body: %d %.200s, want 400 naming --http-max-input-size", code, body)
	}
	if code, _, _ := s.do("POST", "/v2/repository/index", "", nil, nil); code != 403 {
		t.Errorf("restricted repository index: %d, want 403", code)
	}

	conn, err := grpc.NewClient(s.grpc, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: ca.pool, Certificates: []tls.Certificate{client}})))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	gmd, err := inferencepb.NewGRPCInferenceServiceClient(conn).ServerMetadata(ctx, &inferencepb.ServerMetadataRequest{})
	if err != nil || gmd.GetName() != "my-triton" {
		t.Errorf("gRPC server metadata: %v, %v", gmd, err)
	}

	data, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range tritonFlags {
		n := strings.Count(string(data), `"flag": "--`+f.name+`"`)
		if f.warns && n != 1 || !f.warns && n != 0 {
			t.Errorf("--%s named %d times in the log (warns: %v)", f.name, n, f.warns)
		}
	}
}
