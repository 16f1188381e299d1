package compare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/triton-go/triton/grpcapi"
	"github.com/triton-go/triton/grpcapi/inferencepb"
)

// loadgenBin finds a load generator: on PATH, or in .cache/bin where `make
// loadgen-tools` installs hey and ghz.
func loadgenBin(tb testing.TB, name string) string {
	tb.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	p, err := filepath.Abs(filepath.Join("..", "..", ".cache", "bin", name))
	if err == nil {
		if _, err = os.Stat(p); err == nil {
			return p
		}
	}
	tb.Fatalf("%s is not installed: run `make loadgen-tools` (hey and ghz with go install)", name)
	return ""
}

// loadgenRun runs a load generator's command line and returns its standard
// output; a generator that fails makes a run whose every request failed.
func loadgenRun(bin string, args ...string) ([]byte, error) {
	var stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %v: %w: %s", filepath.Base(bin), args, err, stderr.Bytes())
	}
	return out, nil
}

var (
	heyRPS    = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	heyP50    = regexp.MustCompile(`50% in ([0-9.]+) secs`)
	heyP99    = regexp.MustCompile(`99% in ([0-9.]+) secs`)
	heyStatus = regexp.MustCompile(`\[(\d+)\]\s+(\d+) responses`)
)

// parseHey reads hey's summary: requests a second, p50 and p99, and as
// errors every answer that is not a 200 and every line of its error
// distribution.
func parseHey(out []byte) (load, error) {
	var l load
	m := heyRPS.FindSubmatch(out)
	if m == nil {
		return l, fmt.Errorf("no Requests/sec in hey's output:\n%s", out)
	}
	l.rps, _ = strconv.ParseFloat(string(m[1]), 64)
	for _, q := range []struct {
		re *regexp.Regexp
		to *time.Duration
	}{{heyP50, &l.p50}, {heyP99, &l.p99}} {
		if m := q.re.FindSubmatch(out); m != nil {
			s, _ := strconv.ParseFloat(string(m[1]), 64)
			*q.to = time.Duration(s * float64(time.Second))
		}
	}
	ok := false
	for _, m := range heyStatus.FindAllSubmatch(out, -1) {
		n, _ := strconv.ParseInt(string(m[2]), 10, 64)
		if string(m[1]) == "200" {
			ok = n > 0
		} else {
			l.errs += n
		}
	}
	if i := bytes.Index(out, []byte("Error distribution:")); i >= 0 {
		l.errs += int64(bytes.Count(out[i:], []byte("\n")) - 1)
	}
	if !ok {
		return l, fmt.Errorf("hey saw no 200 answer:\n%s", out)
	}
	return l, nil
}

// parseGHZ reads ghz's JSON report (-O json): requests a second, p50 and
// p99, and as errors every call that did not end OK.
func parseGHZ(out []byte) (load, error) {
	var r struct {
		RPS       float64 `json:"rps"`
		Latencies []struct {
			Percentage int   `json:"percentage"`
			Latency    int64 `json:"latency"`
		} `json:"latencyDistribution"`
		Status map[string]int64 `json:"statusCodeDistribution"`
		Errors map[string]int64 `json:"errorDistribution"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return load{}, fmt.Errorf("ghz's report: %w", err)
	}
	l := load{rps: r.RPS}
	for _, q := range r.Latencies {
		switch q.Percentage {
		case 50:
			l.p50 = time.Duration(q.Latency)
		case 99:
			l.p99 = time.Duration(q.Latency)
		}
	}
	for code, n := range r.Status {
		if code != "OK" {
			l.errs += n
		}
	}
	for _, n := range r.Errors {
		l.errs += n
	}
	if r.Status["OK"] == 0 {
		return l, fmt.Errorf("ghz saw no OK call: %s", out)
	}
	return l, nil
}

// loadgenContender runs a load generator for each of its runs: args(c, d)
// is its command line and parse reads what it printed. A run that cannot be
// read counts as one failed request (paired then fails the benchmark) and
// is logged.
func loadgenContender(tb testing.TB, name, bin string, args func(c int, d time.Duration) []string, parse func([]byte) (load, error)) contender {
	return contender{name: name, run: func(c int, d time.Duration) load {
		out, err := loadgenRun(bin, args(c, d)...)
		var l load
		if err == nil {
			l, err = parse(out)
		}
		if err != nil {
			tb.Log(name, err)
			l.errs++
		}
		return l
	}}
}

// heyArgs is hey's command line for add_sub's request in form, from file,
// to url; hey sends Accept-Encoding: gzip unless told -disable-compression.
func heyArgs(form httpForm, file, url string, gzip bool) func(c int, d time.Duration) []string {
	_, header := form.request(0)
	return func(c int, d time.Duration) []string {
		args := []string{"-z", d.String(), "-c", strconv.Itoa(c), "-m", "POST", "-T", header.Get("Content-Type"), "-D", file}
		if h := header.Get("Inference-Header-Content-Length"); h != "" {
			args = append(args, "-H", "Inference-Header-Content-Length: "+h)
		}
		if !gzip {
			args = append(args, "-disable-compression")
		}
		return append(args, url)
	}
}

// ghzArgs is ghz's command line for ModelInfer with the serialized request
// in file, to addr, on one connection (ghz's default, and the harness's).
// Calls still running when the time is up are left out of the report, as
// the harness leaves nothing unfinished.
func ghzArgs(file, addr string) func(c int, d time.Duration) []string {
	return func(c int, d time.Duration) []string {
		return []string{"--insecure", "--proto", filepath.Join("..", "..", "grpcapi", "inferencepb", "grpc_service.proto"),
			"--import-paths", filepath.Join("..", "..", "modelconfig"),
			"--call", "inference.GRPCInferenceService/ModelInfer", "-B", file,
			"-c", strconv.Itoa(c), "-z", d.String(), "--duration-stop", "ignore", "-O", "json", addr}
	}
}

// BenchmarkLoadGenerators measures the comparisons of BenchmarkHTTPMinimal
// (JSON, with and without Accept-Encoding: gzip) and BenchmarkGRPCAddSub
// (onnx) with hey and ghz beside the harness, on the same servers, in the
// same interleaved rounds of 2 s per contender at 1, 16 and 64 concurrent
// requests, so that the harness's ratios can be checked against tools
// other people use. The ratios are ours ÷ minimal per load generator
// ("ours/c<c>-vs-minimal-ratio" for the harness,
// "<tool>/ours/c<c>-vs-<tool>/minimal-ratio"), in throughput and in CPU
// time per request (minimal ÷ ours): in the hey and ghz runs that is the
// servers' CPU alone (the generator is another process), in the harness's
// its client's too. paired's own "-ratio" metrics, all against the
// harness's minimal run, tell how hard each generator drives the same
// server. Needs hey and ghz (`make loadgen-tools`); about 75 s a round:
//
//	go test -run '^$' -bench LoadGenerators -benchtime 3x -timeout 30m ./internal/compare/
func BenchmarkLoadGenerators(b *testing.B) {
	hey, ghz := loadgenBin(b, "hey"), loadgenBin(b, "ghz")
	concurrency := []int{1, 16, 64}
	const slice = 2 * time.Second
	mh, oh := httpHandlers(b)
	minimalURL := serveHTTP(b, mh).URL + "/v2/models/add_sub/infer"
	oursURL := serveHTTP(b, oh).URL + "/v2/models/add_sub/infer"
	form := httpForms[0] // json
	body, _ := form.request(0)
	bodyFile := filepath.Join(b.TempDir(), "add_sub.json")
	if err := os.WriteFile(bodyFile, body, 0o644); err != nil {
		b.Fatal(err)
	}
	for _, enc := range []string{"identity", "gzip"} {
		b.Run("http/json/"+enc, func(b *testing.B) {
			c, gzip := httpClient(b, enc == "gzip"), enc == "gzip"
			var m grpcMeter
			paired(b, slice, concurrency,
				m.wrap(httpContender("minimal", c, minimalURL, form)),
				m.wrap(httpContender("ours", c, oursURL, form)),
				m.wrap(loadgenContender(b, "hey/minimal", hey, heyArgs(form, bodyFile, minimalURL, gzip), parseHey)),
				m.wrap(loadgenContender(b, "hey/ours", hey, heyArgs(form, bodyFile, oursURL, gzip), parseHey)))
			m.versus(b, "ours", "minimal")
			m.versus(b, "hey/ours", "hey/minimal")
		})
	}
	b.Run("grpc/onnx", func(b *testing.B) {
		srv := addSubServer(b, addSubConfig(2))
		minimalAddr := grpcListen(b, func(g *grpc.Server) {
			inferencepb.RegisterGRPCInferenceServiceServer(g, &grpcMinimal{answer: grpcMinimalAddSub(rawSession(b, 1))})
		}, grpcProtoCodecOptions()...)
		oursAddr := grpcListen(b, grpcapi.New(srv).Register, grpcapi.ServerOptions()...)
		req, err := proto.Marshal(grpcAddSubRequest("add_sub", 0))
		if err != nil {
			b.Fatal(err)
		}
		reqFile := filepath.Join(b.TempDir(), "add_sub.bin")
		if err := os.WriteFile(reqFile, req, 0o644); err != nil {
			b.Fatal(err)
		}
		var m grpcMeter
		paired(b, slice, concurrency,
			m.wrap(grpcAddSubContender("minimal", "add_sub", grpcDial(b, minimalAddr))),
			m.wrap(grpcAddSubContender("ours", "add_sub", grpcDial(b, oursAddr))),
			m.wrap(loadgenContender(b, "ghz/minimal", ghz, ghzArgs(reqFile, minimalAddr), parseGHZ)),
			m.wrap(loadgenContender(b, "ghz/ours", ghz, ghzArgs(reqFile, oursAddr), parseGHZ)))
		m.versus(b, "ours", "minimal")
		m.versus(b, "ghz/ours", "ghz/minimal")
	})
}
