//go:build cgo && linux

package xgbrun

/*
// The C of this package is xgbrun.c, declared in xgbrun.h; the XGBoost
// functions' types are in xgbrun_api.h. Any warning fails the build.
#cgo CFLAGS: -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes
#cgo LDFLAGS: -ldl -lm
// The calls below keep no Go pointer past the call and never call back
// into Go.
#cgo noescape xgbrun_load
#cgo nocallback xgbrun_load
#cgo noescape xgbrun_predict
#cgo nocallback xgbrun_predict
#cgo noescape xgbrun_save_ubj
#cgo nocallback xgbrun_save_ubj
#cgo nocallback xgbrun_free

#include <stdlib.h>

#include "xgbrun.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

// The oldest XGBoost the package accepts: the release whose C API and file
// formats it was written against (Debian 12's libxgboost0 is 1.7.4).
const minMajor, minMinor = 1, 7

var (
	openMu sync.Mutex
	// openMu protects the following.
	libHandle unsafe.Pointer // the bound library's dlopen handle; nil before
	libPath   string         // the path it was opened from

	// opened is set, once, after the table is filled.
	opened atomic.Bool
	// maxThreads is MaxThreads's answer, read once at Open.
	maxThreads atomic.Int32
)

// Open loads the XGBoost library at path (a file name alone goes through
// the dynamic linker's search, as dlopen does) and binds the package to
// it, for the life of the process. It fails with the dynamic linker's
// message when the file is missing or unloadable, when the library lacks
// a function of the C API the package calls, or when it is older than
// XGBoost 1.7.
//
// Once bound, a call with a path that loads the same library (another
// name of it, or the same path) returns nil, and one that loads a
// different library fails: models loaded by one copy of XGBoost must not
// meet another. A failed call changes nothing and can be retried. Open is
// safe for concurrent use.
func Open(path string) error {
	if path == "" {
		return errors.New("xgbrun: Open: empty path")
	}
	openMu.Lock()
	defer openMu.Unlock()
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var h unsafe.Pointer
	if m := C.xgbrun_open(cpath, minMajor, minMinor, &h); m != nil {
		return fmt.Errorf("xgbrun: Open(%q): %s", path, takeMsg(m))
	}
	switch {
	case libHandle == nil:
		libHandle, libPath = h, path
		maxThreads.Store(int32(C.xgbrun_max_threads()))
		opened.Store(true)
	case h == libHandle:
		C.xgbrun_close(h) // the extra reference this call took
	default:
		C.xgbrun_close(h)
		return fmt.Errorf("xgbrun: Open(%q): %w, %q", path, ErrOtherLibrary, libPath)
	}
	return nil
}

// Version returns the bound library's version, as "1.7.4", or "" before
// [Open] has succeeded.
func Version() string {
	if !opened.Load() {
		return ""
	}
	var major, minor, patch C.int
	C.xgbrun_version(&major, &minor, &patch)
	return fmt.Sprintf("%d.%d.%d", major, minor, patch)
}

// MaxThreads is the number of threads XGBoost runs a call on when asked
// for all: min(omp_get_num_procs(), omp_get_max_threads()), which
// OMP_NUM_THREADS lowers, as [Open] found them; 1 for an XGBoost built
// without OpenMP, or before Open has succeeded.
func MaxThreads() int {
	return max(int(maxThreads.Load()), 1)
}

// liveBoosters is the number of boosters loaded and not closed, for leak
// checks.
func liveBoosters() int { return int(C.xgbrun_live_boosters()) }

// takeMsg converts a message from the C side and frees it.
func takeMsg(m *C.char) string {
	if unsafe.Pointer(m) == unsafe.Pointer(&C.xgbrun_oom) {
		return "out of memory"
	}
	s := C.GoString(m)
	C.free(unsafe.Pointer(m))
	return s
}

// xgbErr turns a message of the C side into an error, freeing it: an
// *Error when it is "<function>: <XGBoost's message>".
func xgbErr(m *C.char) error {
	if m == nil {
		return nil
	}
	s := takeMsg(m)
	op, msg, ok := strings.Cut(s, ": ")
	if !ok || !strings.HasPrefix(op, "XG") {
		return errors.New("xgbrun: " + s)
	}
	return &Error{Op: op, Msg: cleanMsg(msg)}
}

// A Booster is one loaded model. Create it with [Load]; release it with
// [Booster.Close].
//
// Predict and Contributions are safe for concurrent use (XGBoost's
// in-place prediction and its DMatrix prediction keep their buffers per
// thread, and each call here copies its result out before it returns);
// Close waits for the calls in progress, and calls after it fail.
type Booster struct {
	info Info

	mu sync.RWMutex
	// mu protects the following: read-locked by calls, write-locked by Close.
	h unsafe.Pointer // XGBoost's BoosterHandle, C memory; nil once closed
}

// Load checks data as a model of format f (see [Format]), loads it into a
// new Booster with XGBoost (XGBoosterLoadModelFromBuffer), then checks the
// model XGBoost holds and describes it ([Booster.Info]): XGBoost saves it
// back as UBJSON, and the package reads that. Last, Load predicts one row
// of missing values, which finishes XGBoost's lazy configuration before any
// concurrent call and measures the output widths.
//
// data is read during the call only. Errors wrap [ErrFormat] for data the
// package refuses before or after XGBoost reads it, [errors.ErrUnsupported]
// for gblinear and multi-target models; XGBoost's own refusals are
// [*Error]s.
func Load(data []byte, f Format) (*Booster, error) {
	if !opened.Load() {
		return nil, ErrNotOpen
	}
	data, err := Check(data, f)
	if err != nil {
		return nil, err
	}
	var h unsafe.Pointer
	if err := xgbErr(C.xgbrun_load(unsafe.Pointer(unsafe.SliceData(data)), C.uint64_t(len(data)), &h)); err != nil {
		return nil, err
	}
	b := &Booster{h: h}
	if err := b.describe(); err != nil {
		b.Close()
		return nil, err
	}
	return b, nil
}

// describe fills b.info from XGBoost's UBJSON copy of the model and a
// prediction of one row.
func (b *Booster) describe() error {
	var p *C.char
	var n C.uint64_t
	if err := xgbErr(C.xgbrun_save_ubj(b.h, &p, &n)); err != nil {
		return err
	}
	if uint64(n) > math.MaxInt32 {
		C.free(unsafe.Pointer(p))
		return fmt.Errorf("xgbrun: XGBoost saved a model of %d bytes", uint64(n))
	}
	dump := C.GoBytes(unsafe.Pointer(p), C.int(n))
	C.free(unsafe.Pointer(p))
	doc, err := decodeUBJ(dump)
	if err != nil {
		return fmt.Errorf("xgbrun: reading XGBoost's copy of the model: %w", err)
	}
	info, err := inspect(doc)
	if err != nil {
		if errors.Is(err, errors.ErrUnsupported) {
			return err
		}
		return fmt.Errorf("%w: %w", ErrFormat, err)
	}
	b.info = info
	row := make([]float32, info.Features)
	for i := range row {
		row[i] = float32(math.NaN())
	}
	res := make([]float32, info.Groups)
	for _, w := range []struct {
		out   Output
		width *int
	}{{Values, &b.info.ValueWidth}, {Margins, &b.info.MarginWidth}} {
		var got C.uint64_t
		if err := xgbErr(C.xgbrun_predict(b.h, (*C.float)(&row[0]), 1, C.uint64_t(info.Features), C.int(w.out), b.viaDMatrix(), 1,
			(*C.float)(&res[0]), C.uint64_t(len(res)), 0, &got)); err != nil {
			return fmt.Errorf("xgbrun: predicting a row of missing values: %w", err)
		}
		*w.width = int(got)
	}
	if b.info.MarginWidth != b.info.Groups {
		return fmt.Errorf("xgbrun: XGBoost gives %d margins per row for a model of %d output groups", b.info.MarginWidth, b.info.Groups)
	}
	return nil
}

// viaDMatrix says whether b predicts through a DMatrix rather than in
// place: for dart, whose in-place prediction (Dart::InplacePredict) sums
// the trees' weighted outputs in another order than Booster.predict does
// (Dart::PredictBatchImpl), so that the last bits differ.
func (b *Booster) viaDMatrix() C.int {
	if b.info.Booster == "dart" {
		return 1
	}
	return 0
}

// Info describes the model. It is fixed at [Load].
func (b *Booster) Info() Info { return b.info }

// blockRows is the number of rows XGBoost's CPU predictor gives one thread
// at a time (kBlockOfRowsSize in src/predictor/cpu_predictor.cc): a call
// of n rows has ceil(n/64) blocks of work, so more threads than that only
// cost their start.
const blockRows = 64

// threadsFor is the OpenMP thread count of a call: threads (or, when it is
// 0 or less, [MaxThreads]), but no more than work.
func threadsFor(threads, work int) C.int {
	if threads <= 0 {
		threads = MaxThreads()
	}
	return C.int(max(min(threads, work), 1))
}

// rowsLen checks a call's row count and returns n×Features.
func (b *Booster) rowsLen(op string, rows []float32, n int) (int, error) {
	if n < 0 {
		return 0, fmt.Errorf("xgbrun: %s: %d rows", op, n)
	}
	f := b.info.Features
	if n > math.MaxInt32/f {
		return 0, fmt.Errorf("xgbrun: %s: %d rows of %d features is too many values", op, n, f)
	}
	if len(rows) < n*f {
		return 0, fmt.Errorf("xgbrun: %s: %d values for %d rows of %d features", op, len(rows), n, f)
	}
	return n * f, nil
}

// Predict computes n rows of Info().Features values each (rows[:n×Features],
// row after row; NaN is missing) into out[:n×width], where width is
// Info().ValueWidth for [Values] and Info().MarginWidth (Groups) for
// [Margins] and [SoftmaxMargins], bit for bit as Python's Booster.predict
// does: with XGBoost's in-place prediction (XGBoosterPredictFromDense, on
// the calling thread's proxy DMatrix), which gives the same bits for
// gbtree models, and for dart models from a DMatrix of the rows, as
// Booster.predict does. threads is the most OpenMP threads it runs on (0
// or less: [MaxThreads]); in place, XGBoost gives each thread blocks of 64
// rows, so it uses no more than ceil(n/64). rows and out are used during
// the call only.
func (b *Booster) Predict(rows []float32, n int, what Output, threads int, out []float32) error {
	_, err := b.rowsLen("Predict", rows, n)
	if err != nil {
		return err
	}
	width := b.info.MarginWidth
	switch what {
	case Values:
		width = b.info.ValueWidth
	case Margins, SoftmaxMargins:
	default:
		return fmt.Errorf("xgbrun: Predict: unknown output %d", what)
	}
	if len(out) < n*width {
		return fmt.Errorf("xgbrun: Predict: room for %d values, %d rows need %d", len(out), n, n*width)
	}
	if n == 0 {
		return nil
	}
	var softmax C.uint64_t
	if what == SoftmaxMargins {
		softmax = C.uint64_t(width)
	}
	var got C.uint64_t
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.h == nil {
		return ErrClosed
	}
	typ, work := C.int(1), (n+blockRows-1)/blockRows
	if what == Values {
		typ = 0
	}
	dm := b.viaDMatrix()
	if dm != 0 {
		work = n
	}
	err = xgbErr(C.xgbrun_predict(b.h, (*C.float)(&rows[0]), C.uint64_t(n), C.uint64_t(b.info.Features), typ, dm,
		threadsFor(threads, work), (*C.float)(&out[0]), C.uint64_t(n*width), softmax, &got))
	if err == nil && int(got) != n*width {
		err = fmt.Errorf("xgbrun: Predict: XGBoost returned %d values for %d rows, %d expected", int(got), n, n*width)
	}
	return err
}

// Contributions computes the SHAP values of n rows (as [Booster.Predict]
// reads them) into out[:n×Groups×(Features+1)]: per row and output group,
// one value per feature and the bias last, in the margin space, as
// Python's Booster.predict(pred_contribs=True) gives them (exact TreeSHAP,
// XGBoosterPredictFromDMatrix on a DMatrix made of the rows with NaN
// missing). threads bounds the OpenMP threads, as for Predict, which here
// share out the rows one by one. It fails for a model deeper than
// [MaxSHAPDepth].
func (b *Booster) Contributions(rows []float32, n int, threads int, out []float32) error {
	if _, err := b.rowsLen("Contributions", rows, n); err != nil {
		return err
	}
	if b.info.MaxDepth > MaxSHAPDepth {
		return fmt.Errorf("xgbrun: Contributions: the model's trees are %d deep; SHAP values are computed for trees up to %d deep: %w",
			b.info.MaxDepth, MaxSHAPDepth, errors.ErrUnsupported)
	}
	width := b.info.Groups * (b.info.Features + 1)
	if n > math.MaxInt32/width {
		return fmt.Errorf("xgbrun: Contributions: %d rows make too many values", n)
	}
	if len(out) < n*width {
		return fmt.Errorf("xgbrun: Contributions: room for %d values, %d rows need %d", len(out), n, n*width)
	}
	if n == 0 {
		return nil
	}
	var got C.uint64_t
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.h == nil {
		return ErrClosed
	}
	err := xgbErr(C.xgbrun_predict(b.h, (*C.float)(&rows[0]), C.uint64_t(n), C.uint64_t(b.info.Features), 2, 1,
		threadsFor(threads, n), (*C.float)(&out[0]), C.uint64_t(n*width), 0, &got))
	if err == nil && int(got) != n*width {
		err = fmt.Errorf("xgbrun: Contributions: XGBoost returned %d values for %d rows, %d expected", int(got), n, n*width)
	}
	return err
}

// Close frees the model, after the calls in progress. It is idempotent and
// always returns nil.
//
// XGBoost keeps a prediction buffer per booster and thread that called it;
// Close frees the calling thread's, the others' stay until their threads
// end (Go's threads seldom do).
func (b *Booster) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.h != nil {
		C.xgbrun_free(b.h)
		b.h = nil
	}
	return nil
}
