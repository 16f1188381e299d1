// file.go is mode triton's exporter: Triton's trace file.

package trace

import (
	"bufio"
	"context"
	"encoding/binary"
	"math"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/triton-go/triton/tensor"
)

// The trace file is one JSON array of flat records, as Triton writes it
// (spec: model record before the id's REQUEST_START, one timestamp per
// timestamp record, tensor records at level TENSORS), with every id of one
// request's tree written together. Unlike Triton, strings (model names,
// request ids, tensor names and data) are JSON-escaped, so the file is
// always valid JSON.
//
// The records are encoded and written by one goroutine: a request that
// ends its trace only queues the tree (blocking when fileQueue trees wait,
// so that a slow disk slows the traced requests instead of growing
// memory). The writer is not woken for each tree: that wake-up, on the
// request's own path, cost a sampled request 10 µs here, 1 % of a no-op
// model's throughput at rate 1000. The first tree queued while it sleeps
// arms a timer, and the writer writes whatever is queued streamDelay later
// (or at once when the queue is full, for a flush, or at Close).

// fileQueue is how many ended trees may wait for the writer.
const fileQueue = 256

// streamDelay bounds how long an ended trace waits to be written (Triton's
// file stream is buffered too; Flush and Close write at once).
const streamDelay = 50 * time.Millisecond

// base is the trace clock's zero: a stamp's ns is the monotonic time since
// it (Triton's are steady_clock's; only differences mean anything).
var base = time.Now()

// fileWriter writes the trace files of mode triton.
type fileWriter struct {
	log   *zap.Logger
	jobs  chan fileJob
	wake  chan struct{} // the writer writes what jobs holds (capacity 1)
	armed atomic.Bool   // timer will wake the writer
	timer *time.Timer
	done  chan struct{} // closed when the writer goroutine has ended

	mu     sync.RWMutex
	closed bool // mu protects closed; senders hold it read-locked

	files map[string]*traceFile // the writer goroutine's
	buf   []byte
}

// fileJob is one write: a tree streamed to the trace file, a group of
// trees to the next indexed file, or (recs nil) a flush that closes sync.
type fileJob struct {
	path    string
	one     *Record   // streamed
	recs    []*Record // indexed
	indexed bool
	sync    chan struct{}
}

// traceFile is the state of one trace_file path: the open plain file
// (log_frequency 0) and the next index.
type traceFile struct {
	f   *os.File
	w   *bufio.Writer
	idx int
	bad bool // the plain file could not be created: logged once
}

func newFileWriter(log *zap.Logger) *fileWriter {
	w := &fileWriter{log: log, jobs: make(chan fileJob, fileQueue), wake: make(chan struct{}, 1),
		done: make(chan struct{}), files: map[string]*traceFile{}}
	w.timer = time.AfterFunc(time.Hour, w.kick)
	w.timer.Stop()
	go w.run()
	return w
}

// kick wakes the writer (or leaves it a wake-up it will find).
func (w *fileWriter) kick() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// send queues a job; false once the writer is closed. An urgent job wakes
// the writer at once; another arms the timer, unless it is armed.
func (w *fileWriter) send(j fileJob, urgent bool) bool {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return false
	}
	select {
	case w.jobs <- j:
	default: // full: the writer must make room now
		w.kick()
		w.jobs <- j
	}
	if urgent {
		w.kick()
	} else if w.armed.CompareAndSwap(false, true) {
		w.timer.Reset(streamDelay)
	}
	return true
}

// stream appends one tree to the trace file at path.
func (w *fileWriter) stream(path string, r *Record) {
	if !w.send(fileJob{path: path, one: r}, false) {
		w.log.Debug("trace ended after the tracer closed: dropped", zap.Uint64("id", r.ID))
	}
}

// indexed writes trees to the next indexed file of path.
func (w *fileWriter) indexed(path string, recs []*Record) {
	if !w.send(fileJob{path: path, recs: recs, indexed: true}, true) {
		w.log.Debug("traces ended after the tracer closed: dropped", zap.Int("traces", len(recs)))
	}
}

// flush waits until every job queued before it is on disk.
func (w *fileWriter) flush(ctx context.Context) error {
	ch := make(chan struct{})
	if !w.send(fileJob{sync: ch}, true) {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// close stops the writer once it has written what was queued, and ends the
// plain files with "]".
func (w *fileWriter) close(ctx context.Context) error {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.jobs)
		w.timer.Stop()
		w.kick()
	}
	w.mu.Unlock()
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (w *fileWriter) run() {
	defer close(w.done)
	for open := true; open; {
		<-w.wake
		w.armed.Store(false) // a job queued from now on arms the timer again
		open = w.drain()
		w.flushAll() // what was written is on disk
	}
	for path, tf := range w.files {
		if tf.f == nil {
			continue
		}
		tf.w.WriteString("]")
		w.check(path, tf.w.Flush())
		w.check(path, tf.f.Close())
	}
}

// drain runs the queued jobs; false once jobs is closed and empty.
func (w *fileWriter) drain() bool {
	for {
		select {
		case j, ok := <-w.jobs:
			if !ok {
				return false
			}
			switch {
			case j.sync != nil:
				w.flushAll()
				close(j.sync)
			case j.indexed:
				w.writeIndexed(j.path, j.recs)
			default:
				w.writeStream(j.path, j.one)
			}
		default:
			return true
		}
	}
}

func (w *fileWriter) file(path string) *traceFile {
	tf := w.files[path]
	if tf == nil {
		tf = &traceFile{}
		w.files[path] = tf
	}
	return tf
}

func (w *fileWriter) flushAll() {
	for path, tf := range w.files {
		if tf.w != nil {
			w.check(path, tf.w.Flush())
		}
	}
}

func (w *fileWriter) check(path string, err error) {
	if err != nil {
		w.log.Error("failed creating trace file: "+err.Error(), zap.String("file", path))
	}
}

// writeStream appends a tree to the plain file: "[" before the first, ","
// between.
func (w *fileWriter) writeStream(path string, r *Record) {
	tf := w.file(path)
	if tf.bad {
		return
	}
	w.buf = appendTree(w.buf[:0], r, false)
	if len(w.buf) == 0 {
		return // nothing recorded: nothing to write
	}
	sep := ","
	if tf.f == nil {
		f, err := os.Create(path)
		if err != nil {
			tf.bad = true
			w.check(path, err)
			return
		}
		tf.f, tf.w, sep = f, bufio.NewWriterSize(f, 64<<10), "["
	}
	_, err := tf.w.WriteString(sep)
	if err == nil {
		_, err = tf.w.Write(w.buf)
	}
	w.check(path, err)
}

// writeIndexed writes trees as one complete array to <path>.<idx>.
func (w *fileWriter) writeIndexed(path string, recs []*Record) {
	tf := w.file(path)
	name := path + "." + strconv.Itoa(tf.idx)
	tf.idx++
	w.buf = append(w.buf[:0], '[')
	for _, r := range recs {
		w.buf = appendTree(w.buf, r, len(w.buf) > 1)
	}
	w.buf = append(w.buf, ']')
	w.check(path, os.WriteFile(name, w.buf, 0o644))
}

// appendTree appends the records of r and of its children, depth first,
// each preceded by a comma when comma or when records came before.
func appendTree(b []byte, r *Record, comma bool) []byte {
	n := len(b)
	b = appendRecord(b, r, comma)
	comma = comma || len(b) > n
	for _, c := range r.Children {
		m := len(b)
		b = appendTree(b, c, comma)
		comma = comma || len(b) > m
	}
	return b
}

// appendRecord appends one trace's records: its stamps in order, the model
// record before REQUEST_START, and its tensor records after the last stamp
// taken before them.
func appendRecord(b []byte, r *Record, comma bool) []byte {
	sep := func() {
		if comma {
			b = append(b, ',')
		}
		comma = true
	}
	ti := 0
	tensors := func(before time.Time, all bool) {
		for ; ti < len(r.Tensors) && (all || r.Tensors[ti].At.Before(before)); ti++ {
			sep()
			b = appendTensor(b, r.ID, r.Tensors[ti])
		}
	}
	for _, s := range r.Stamps {
		tensors(s.At, false)
		if s.Activity == RequestStart {
			sep()
			b = append(b, `{"id":`...)
			b = strconv.AppendUint(b, r.ID, 10)
			b = append(b, `,"model_name":`...)
			b = appendString(b, r.Model)
			b = append(b, `,"model_version":`...)
			b = strconv.AppendInt(b, r.Version, 10)
			if r.RequestID != "" {
				b = append(b, `,"request_id":`...)
				b = appendString(b, r.RequestID)
			}
			if r.Parent != 0 {
				b = append(b, `,"parent_id":`...)
				b = strconv.AppendUint(b, r.Parent, 10)
			}
			b = append(b, '}')
		}
		sep()
		b = append(b, `{"id":`...)
		b = strconv.AppendUint(b, r.ID, 10)
		b = append(b, `,"timestamps":[{"name":"`...)
		b = append(b, s.Activity.String()...)
		b = append(b, `","ns":`...)
		b = strconv.AppendInt(b, int64(s.At.Sub(base)), 10)
		b = append(b, `}]}`...)
	}
	tensors(time.Time{}, true)
	return b
}

// appendTensor appends a tensor record, its data rendered as Triton
// renders it (spec/trace.md §3.2), then JSON-escaped.
func appendTensor(b []byte, id uint64, tr TensorRecord) []byte {
	x := tr.Tensor
	b = append(b, `{"id":`...)
	b = strconv.AppendUint(b, id, 10)
	b = append(b, `,"activity":"`...)
	b = append(b, tr.Activity.String()...)
	b = append(b, `","tensor":{"name":`...)
	b = appendString(b, x.Name)
	b = append(b, `,"data":`...)
	b = appendString(b, string(tensorData(nil, x)))
	b = append(b, `,"shape":"`...)
	for i, d := range x.Shape {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, d, 10)
	}
	b = append(b, `","dtype":"`...)
	b = append(b, x.DataType.String()...)
	return append(b, `"}}`...)
}

// tensorData renders a tensor's elements as Triton does, joined by ",":
// BOOL as 0/1, UINT8 and INT8 as the raw characters (C++ char streaming),
// other integers in decimal, FP32/FP64 as C++ streams them (%g, 6
// digits), FP16/BF16 as nothing, BYTES as each element in double quotes
// (Triton truncates a malformed one, leaving broken JSON; here the data
// just stops there).
func tensorData(b []byte, x tensor.Tensor) []byte {
	d := x.Data
	size := x.DataType.Size()
	if x.DataType == tensor.Bytes {
		first := true
		for len(d) >= 4 {
			n := binary.LittleEndian.Uint32(d)
			if uint64(n) > uint64(len(d)-4) {
				break
			}
			if !first {
				b = append(b, ',')
			}
			first = false
			b = append(b, '"')
			b = append(b, d[4:4+n]...)
			b = append(b, '"')
			d = d[4+n:]
		}
		return b
	}
	if size == 0 || x.DataType == tensor.FP16 || x.DataType == tensor.BF16 {
		return b
	}
	le := binary.LittleEndian
	for i := 0; i+size <= len(d); i += size {
		if i > 0 {
			b = append(b, ',')
		}
		e := d[i : i+size]
		switch x.DataType {
		case tensor.Bool:
			if e[0] != 0 {
				b = append(b, '1')
			} else {
				b = append(b, '0')
			}
		case tensor.Uint8, tensor.Int8:
			b = append(b, e[0])
		case tensor.Uint16:
			b = strconv.AppendUint(b, uint64(le.Uint16(e)), 10)
		case tensor.Uint32:
			b = strconv.AppendUint(b, uint64(le.Uint32(e)), 10)
		case tensor.Uint64:
			b = strconv.AppendUint(b, le.Uint64(e), 10)
		case tensor.Int16:
			b = strconv.AppendInt(b, int64(int16(le.Uint16(e))), 10)
		case tensor.Int32:
			b = strconv.AppendInt(b, int64(int32(le.Uint32(e))), 10)
		case tensor.Int64:
			b = strconv.AppendInt(b, int64(le.Uint64(e)), 10)
		case tensor.FP32:
			b = appendFloat(b, float64(math.Float32frombits(le.Uint32(e))))
		case tensor.FP64:
			b = appendFloat(b, math.Float64frombits(le.Uint64(e)))
		}
	}
	return b
}

// appendFloat formats v as C++'s default stream formatting does.
func appendFloat(b []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(b, "nan"...)
	case math.IsInf(v, 1):
		return append(b, "inf"...)
	case math.IsInf(v, -1):
		return append(b, "-inf"...)
	}
	return strconv.AppendFloat(b, v, 'g', 6, 64)
}

// appendString appends s as a JSON string: quotes, backslashes and control
// characters escaped, bytes that are not UTF-8 as the code points of their
// values (Latin-1), everything else as is.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				b = utf8.AppendRune(b, rune(c))
			} else {
				b = append(b, s[i:i+n]...)
			}
			i += n
			continue
		}
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
		i++
	}
	return append(b, '"')
}
