//go:build !(cgo && linux)

package xgbrun

import "errors"

// This build has no cgo, or is not for Linux: Open always fails, so that
// no Booster can be loaded; Check still works.

var errNoCgo = errors.New("xgbrun: XGBoost models need a cgo build (CGO_ENABLED=1) on Linux")

// Open always fails in this build.
func Open(path string) error { return errNoCgo }

// Version returns "": no library can be loaded in this build.
func Version() string { return "" }

// MaxThreads returns 1 in this build.
func MaxThreads() int { return 1 }

// A Booster is one loaded model; none can be loaded in this build.
type Booster struct{ info Info }

// Load always fails in this build.
func Load(data []byte, f Format) (*Booster, error) { return nil, errNoCgo }

// Info describes the model.
func (b *Booster) Info() Info { return b.info }

// Predict always fails in this build.
func (b *Booster) Predict(rows []float32, n int, what Output, threads int, out []float32) error {
	return errNoCgo
}

// Contributions always fails in this build.
func (b *Booster) Contributions(rows []float32, n int, threads int, out []float32) error {
	return errNoCgo
}

// Close does nothing in this build.
func (b *Booster) Close() error { return nil }
