//go:build rss

package httpapi_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/triton-go/triton/httpapi"
)

// The resident memory that bad and large request bodies cost the server
// (issue #17; figures in docs/reliability.md). Run by hand:
//
//	go test -tags rss -run '^TestRSS$' -count=1 -v ./httpapi/
//
// Each case runs in a child process of its own, so that one case's heap
// and the memory Go has not yet returned to the system do not count in
// the next. The child serves the handler with its defaults (64 MiB size
// limit) on a loopback port, sends 16 requests at once from its own
// client, whose bodies are generated as they are sent (a few megabytes
// in all), and reports its resident set before (after a GC and
// debug.FreeOSMemory), its peak during (VmHWM, reset before the requests)
// and its resident set once the last answer has arrived.
func TestRSS(t *testing.T) {
	if name := os.Getenv("HTTPAPI_RSS_CASE"); name != "" {
		rssChild(t, name)
		return
	}
	t.Logf("| case | answers | RSS before | peak RSS | RSS after | time |")
	t.Logf("|---|---|---|---|---|---|")
	for _, c := range rssCases {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRSS$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "HTTPAPI_RSS_CASE="+c.name)
		out, err := cmd.CombinedOutput()
		line := ""
		for l := range strings.Lines(string(out)) {
			if _, rest, ok := strings.Cut(l, "RSS| "); ok {
				line = strings.TrimSpace(rest)
			}
		}
		if err != nil || line == "" {
			t.Fatalf("%s: %v\n%s", c.name, err, out)
		}
		t.Logf("| %s | %s", c.name, line)
	}
}

// rssCases are the bodies, 16 of each sent at once.
var rssCases = []struct {
	name string
	body func() (rd io.Reader, size int64, enc string)
}{
	{"gzip bomb (1 GiB of zeros each, 1 MiB compressed)", func() (io.Reader, int64, string) {
		b := bombBytes()
		return bytes.NewReader(b), int64(len(b)), "gzip"
	}},
	{"chunked body of 1 GiB (refused at 64 MiB)", func() (io.Reader, int64, string) {
		return io.LimitReader(spaces{}, 1<<30), -1, ""
	}},
	{"60 MiB body with Content-Length (read, then refused by the JSON parser)", func() (io.Reader, int64, string) {
		return io.MultiReader(io.LimitReader(spaces{}, 60<<20-1), strings.NewReader("x")), 60 << 20, ""
	}},
	{"60 MiB chunked body (read, then refused by the JSON parser)", func() (io.Reader, int64, string) {
		return io.MultiReader(io.LimitReader(spaces{}, 60<<20-1), strings.NewReader("x")), -1, ""
	}},
}

// spaces reads as endless JSON whitespace.
type spaces struct{}

func (spaces) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

// bombBytes is 1 GiB of zeros, gzipped (about a megabyte).
var bombBytes = sync.OnceValue(func() []byte {
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	chunk := make([]byte, 1<<20)
	for range 1 << 10 {
		_, _ = zw.Write(chunk)
	}
	_ = zw.Close()
	return out.Bytes()
})

func rssChild(t *testing.T, name string) {
	var body func() (io.Reader, int64, string)
	for _, c := range rssCases {
		if c.name == name {
			body = c.body
		}
	}
	if body == nil {
		t.Fatalf("no case %q", name)
	}
	body() // build the shared bomb before measuring
	srv := newServer(t, repo())
	ts := httptest.NewServer(httpapi.NewHandler(srv))
	defer ts.Close()
	client := &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 16}}
	defer client.CloseIdleConnections()

	runtime.GC()
	debug.FreeOSMemory()
	before := procStatus(t, "VmRSS")
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Fatalf("resetting VmHWM: %v", err)
	}
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	answers := map[string]int{}
	for range 16 {
		wg.Go(func() {
			rd, size, enc := body()
			r, _ := http.NewRequest(http.MethodPost, ts.URL+inferPath("id_INT32"), rd)
			r.ContentLength = size
			if size < 0 {
				r.ContentLength = -1
			}
			if enc != "" {
				r.Header.Set("Content-Encoding", enc)
			}
			answer := ""
			resp, err := client.Do(r)
			if err != nil {
				answer = "connection error"
			} else {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				answer = strconv.Itoa(resp.StatusCode)
			}
			mu.Lock()
			answers[answer]++
			mu.Unlock()
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	peak, after := procStatus(t, "VmHWM"), procStatus(t, "VmRSS")
	var as []string
	for a, n := range answers {
		as = append(as, fmt.Sprintf("%d× %s", n, a))
	}
	fmt.Printf("RSS| %s | %s | %s (+%s) | %s | %.2f s |\n", strings.Join(as, ", "), mib(before), mib(peak), mib(peak-before), mib(after), elapsed.Seconds())
}

func mib(kb int64) string { return fmt.Sprintf("%.0f MiB", float64(kb)/1024) }

// procStatus reads a kB field of /proc/self/status.
func procStatus(t *testing.T, field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}
