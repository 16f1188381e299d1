package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// endpoints is what an endpoints controller keeps for a Service: the
// servers that traffic may go to. A client takes the next one that
// answers ready on /v2/health/ready, and drops one that does not, as a
// controller drops a pod whose readiness probe fails.
type endpoints struct {
	mu      sync.Mutex
	servers []*rollingServer
	next    int
}

// rollingServer is a server of the rolling restart and the requests it
// answered.
type rollingServer struct {
	*binaryServer
	name   string
	served atomic.Int64
}

func (e *endpoints) add(s *rollingServer) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.servers = append(e.servers, s)
}

func (e *endpoints) remove(s *rollingServer) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, x := range e.servers {
		if x == s {
			e.servers = append(e.servers[:i], e.servers[i+1:]...)
			return
		}
	}
}

// pick returns the next server in turn that answers ready, dropping those
// that do not; nil when none is left.
func (e *endpoints) pick(c *http.Client) *rollingServer {
	for {
		e.mu.Lock()
		if len(e.servers) == 0 {
			e.mu.Unlock()
			return nil
		}
		s := e.servers[e.next%len(e.servers)]
		e.next++
		e.mu.Unlock()
		resp, err := c.Get(s.http + "/v2/health/ready")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		e.remove(s)
	}
}

// TestRollingRestart replaces two servers one after the other, each with
// SIGTERM and a new process, while four clients send requests through the
// servers that answer ready: with the drain window, not one request fails,
// and each old server exits 0.
func TestRollingRestart(t *testing.T) {
	start := func(name string) *rollingServer {
		return &rollingServer{name: name, binaryServer: startBinary(t, "--model-repository=../../examples/model_repository", exampleBackends,
			"--model-control-mode=explicit", "--load-model=text_reverse", "--exit-drain-secs=2")}
	}
	var (
		eps      endpoints
		failures atomic.Int64
		failed   = make(chan string, 16)
		stop     = make(chan struct{})
		clients  sync.WaitGroup
		progress = make(chan *rollingServer, 1024)
	)
	a, b := start("a"), start("b")
	eps.add(a)
	eps.add(b)
	client := &http.Client{Timeout: time.Minute}
	for g := range 4 {
		clients.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				s := eps.pick(client)
				if s == nil {
					failures.Add(1)
					failed <- "no server answers ready"
					return
				}
				word := fmt.Sprintf("c%dr%d", g, i)
				body := `{"inputs":[{"name":"TEXT","shape":[1],"datatype":"BYTES","data":["` + word + `"]}]}`
				resp, err := client.Post(s.http+"/v2/models/text_reverse/infer", "application/json", strings.NewReader(body))
				var answer []byte
				if err == nil {
					answer, err = io.ReadAll(resp.Body)
					resp.Body.Close()
					if err == nil && (resp.StatusCode != http.StatusOK || !bytes.Contains(answer, []byte(`"data":["`+reversed(word)+`"]`))) {
						err = fmt.Errorf("status %d: %s", resp.StatusCode, answer)
					}
				}
				if err != nil {
					failures.Add(1)
					select {
					case failed <- fmt.Sprintf("server %s, request %s: %v", s.name, word, err):
					default:
					}
					continue
				}
				s.served.Add(1)
				select {
				case progress <- s:
				default:
				}
			}
		})
	}
	// servedBy waits until s has answered n more requests.
	servedBy := func(s *rollingServer, n int64) {
		t.Helper()
		want := s.served.Load() + n
		for s.served.Load() < want {
			select {
			case <-progress:
			case msg := <-failed:
				t.Fatal(msg)
			}
		}
	}
	servedBy(a, 20)
	servedBy(b, 20)
	for _, old := range []*rollingServer{a, b} {
		old.terminate(time.Minute) // exits 0, after its drain and its requests
		eps.remove(old)            // gone from the endpoints in any case
		fresh := start(old.name + "2")
		eps.add(fresh)
		servedBy(fresh, 20)
	}
	close(stop)
	clients.Wait()
	if n := failures.Load(); n > 0 {
		t.Fatalf("%d requests failed, the first: %s", n, <-failed)
	}
	t.Logf("served: a %d, b %d, then the new ones", a.served.Load(), b.served.Load())
}

// TestTerminateDrains: after SIGTERM the binary answers not ready while
// it is live and still serves requests, for its drain window; then it
// exits 0. After SIGINT it skips the window: a 10-minute one does not
// hold its exit.
func TestTerminateDrains(t *testing.T) {
	args := []string{"--model-repository=../../examples/model_repository", exampleBackends, "--model-control-mode=explicit", "--load-model=text_reverse"}
	s := startBinary(t, append(args, "--exit-drain-secs=10")...)
	if code, _, _ := s.do("GET", "/v2/health/ready", "", nil, nil); code != 200 {
		t.Fatalf("ready before SIGTERM: %d", code)
	}
	s.signal(syscall.SIGTERM)
	for {
		code, _, _ := s.do("GET", "/v2/health/ready", "", nil, nil)
		if code != 200 {
			if code != 400 {
				t.Fatalf("not ready answered %d, want Triton's 400", code)
			}
			break
		}
	}
	if code, _, _ := s.do("GET", "/v2/health/live", "", nil, nil); code != 200 {
		t.Errorf("live while draining: %d", code)
	}
	code, _, body := s.do("POST", "/v2/models/text_reverse/infer", "application/json",
		[]byte(`{"inputs":[{"name":"TEXT","shape":[1],"datatype":"BYTES","data":["drain"]}]}`), nil)
	if code != 200 || !strings.Contains(string(body), `"data":["niard"]`) {
		t.Fatalf("infer while draining: %d %s", code, body)
	}
	s.waitExit(time.Minute)

	s = startBinary(t, append(args, "--exit-drain-secs=600")...)
	s.signal(syscall.SIGINT)
	s.waitExit(2 * time.Minute)
}

// reversed is s reversed byte for byte, as text_reverse answers.
func reversed(s string) string {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}
