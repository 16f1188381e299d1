package trace

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
)

// TestStreamWaitsForTheTimer: a streamed trace does not wake the writer
// (that wake-up would be on the request's path); the writer writes it
// when the timer the first queued trace armed fires, streamDelay later.
func TestStreamWaitsForTheTimer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.json")
	synctest.Test(t, func(t *testing.T) {
		w := newFileWriter(zap.NewNop())
		defer w.close(context.Background())
		record := func(id uint64) *Record {
			return &Record{ID: id, Model: "m", Version: 1, Stamps: []Stamp{{Activity: RequestStart, At: time.Now()}}}
		}
		w.stream(path, record(1))
		w.stream(path, record(2))
		synctest.Wait()
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("trace file written before the timer fired (stat: %v)", err)
		}
		time.Sleep(streamDelay)
		synctest.Wait()
		b, err := os.ReadFile(path)
		if err != nil || !strings.Contains(string(b), `{"id":1,"model_name":"m"`) || !strings.Contains(string(b), `{"id":2,"model_name":"m"`) {
			t.Fatalf("after %v: %q, %v; want both traces", streamDelay, b, err)
		}
		w.stream(path, record(3)) // the writer slept again: this one arms the timer anew
		time.Sleep(streamDelay)
		synctest.Wait()
		if b, _ := os.ReadFile(path); !strings.Contains(string(b), `{"id":3,`) {
			t.Errorf("the third trace was not written %v after it ended: %q", streamDelay, b)
		}
	})
}

// TestStreamFullQueue: more ended traces than the queue holds, faster than
// the timer: the writer is woken to make room, nothing blocks for good and
// nothing is lost; Flush writes at once.
func TestStreamFullQueue(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trace.json")
	synctest.Test(t, func(t *testing.T) {
		w := newFileWriter(zap.NewNop())
		const n = 3*fileQueue + 7
		for i := range n {
			w.stream(path, &Record{ID: uint64(i + 1), Model: "m", Stamps: []Stamp{{Activity: RequestStart, At: time.Now()}}})
		}
		if err := w.flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := w.close(context.Background()); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(string(b), `"model_name":"m"`); got != n || !strings.HasSuffix(string(b), "]") {
			t.Errorf("%d traces written, want %d, in a closed array", got, n)
		}
	})
}
