package perf

import (
	"bytes"
	"context"
	"encoding/csv"
	"html"
	"image"
	_ "image/png"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/triton-go/triton"
	"github.com/triton-go/triton/client"
	"github.com/triton-go/triton/internal/perfreport"
)

// TestReportInProcess runs the tool with --report on the in-process
// server over a repository of the identity model: every file is there,
// the PNGs decode, and the page's table has the CSV's rows. The
// stability threshold is wide so that a busy machine cannot fail it.
func TestReportInProcess(t *testing.T) {
	repo := t.TempDir()
	writeFiles(t, repo, map[string]string{
		"noop/config.pbtxt": `backend: "identity"
max_batch_size: 8
input [ { name: "INPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]
output [ { name: "OUTPUT0" data_type: TYPE_FP32 dims: [ 16 ] } ]`,
		"noop/1/.keep": "",
	})
	tmp := t.TempDir()
	dir, csvPath := filepath.Join(tmp, "report"), filepath.Join(tmp, "out.csv")
	var stdout, stderr bytes.Buffer
	st := Main(context.Background(), []string{"-m", "noop", "-i", "inprocess", "--model-repository", repo,
		"-p", "100", "-s", "10000", "--concurrency-range", "1:2", "-f", csvPath, "--report", dir}, &stdout, &stderr, dialInProcess)
	if st != ExitSuccess {
		t.Fatalf("status %d\nstdout:\n%s\nstderr:\n%s", st, stdout.String(), stderr.String())
	}
	want := []string{"throughput.png", "throughput.svg", "latency.png", "latency.svg", "time-split.png", "time-split.svg", "report.html", "report.json"}
	for _, name := range want {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Error(err)
			continue
		}
		if filepath.Ext(name) == ".png" {
			if _, _, err := image.DecodeConfig(bytes.NewReader(b)); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
	}
	rep, err := perfreport.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Model != "noop" || len(rep.Steps) != 2 || !rep.ServerStats || rep.Steps[1].Concurrency != 2 {
		t.Errorf("report.json: %+v", rep)
	}
	checkPageHasCSV(t, dir, csvPath, 0)
}

// TestReportBatchSizes runs the fake server at -b 1 and -b 4 into one
// folder: the second run adds to the first, the figure of latency
// against batch size appears, and the page has both runs' CSV rows.
func TestReportBatchSizes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tmp := t.TempDir()
		dir := filepath.Join(tmp, "report")
		for _, b := range []string{"1", "4"} {
			f := newFake(t, simpleConfig)
			f.delay = func(int) time.Duration { return 700001 * time.Nanosecond }
			csvPath := filepath.Join(tmp, "b"+b+".csv")
			st, _, errs := run(f, context.Background(), "-m", "simple", "-p", "100", "-b", b, "--concurrency-range", "1:3", "-f", csvPath, "--report", dir)
			if st != ExitSuccess {
				t.Fatalf("-b %s: status %d, stderr %q", b, st, errs)
			}
			if note := "this run's steps added to the earlier runs there (batch sizes 1, 4)"; (b == "4") != strings.Contains(errs, note) {
				t.Errorf("-b %s: stderr %q", b, errs)
			}
		}
		for _, name := range []string{"latency-vs-batch.png", "latency-vs-batch.svg"} {
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				t.Error(err)
			}
		}
		rep, err := perfreport.Read(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Steps) != 6 {
			t.Errorf("%d steps, want 3 of each batch size", len(rep.Steps))
		}
		// The page's rows start with the batch size when there are
		// several.
		checkPageHasCSV(t, dir, filepath.Join(tmp, "b1.csv"), 1)
		checkPageHasCSV(t, dir, filepath.Join(tmp, "b4.csv"), 4)
	})
}

// checkPageHasCSV checks that every row of the CSV file is a row of the
// page's table (after its batch size column when batch is not 0),
// column for column.
func checkPageHasCSV(t *testing.T, dir, csvPath string, batch int) {
	t.Helper()
	f, err := os.Open(csvPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("%s: %v (%d rows)", csvPath, err, len(rows))
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	var table [][]string
	for _, tr := range regexp.MustCompile(`<tr>((?:<td class="n">[^<]*</td>)+)</tr>`).FindAllSubmatch(page, -1) {
		var row []string
		for _, td := range regexp.MustCompile(`<td class="n">([^<]*)</td>`).FindAllSubmatch(tr[1], -1) {
			row = append(row, html.UnescapeString(string(td[1])))
		}
		if batch != 0 {
			if row[0] != strconv.Itoa(batch) {
				continue
			}
			row = row[1:]
		}
		table = append(table, row)
	}
	for _, r := range rows[1:] {
		if !slices.ContainsFunc(table, func(row []string) bool { return len(row) >= len(r) && slices.Equal(row[:len(r)], r) }) {
			t.Errorf("CSV row %q is not in report.html's table:\n%q", r, table)
		}
	}
	var head []string
	for _, th := range regexp.MustCompile(`<th>([^<]*)</th>`).FindAllSubmatch(page, -1) {
		head = append(head, html.UnescapeString(string(th[1])))
	}
	if !strings.Contains(strings.Join(head, ","), strings.Join(rows[0], ",")) {
		t.Errorf("report.html's header %q lacks the CSV's %q", head, rows[0])
	}
}

// dialInProcess is cmd/perf_analyzer's in-process dialer without the cgo
// backends.
func dialInProcess(_ context.Context, cfg *Config) (client.Conn, error) {
	srv, err := triton.New(InProcessOptions(cfg)...)
	if err != nil {
		return nil, err
	}
	return serverConn{client.Local(srv), srv}, nil
}

// serverConn closes the in-process server with the connection.
type serverConn struct {
	client.Conn
	srv *triton.Server
}

func (c serverConn) Close() error {
	err := c.Conn.Close()
	if cerr := c.srv.Close(); err == nil {
		err = cerr
	}
	return err
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
