package perfreport

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Write draws r's figures into dir (created if needed), each as a PNG
// and an SVG file, and writes report.html and report.json:
//
//	throughput.png, .svg        inferences/s against concurrency (or request rate)
//	latency.png, .svg           p50, average and p99 latency against the same
//	latency-vs-batch.png, .svg  latency against batch size, when the steps have several
//	time-split.png, .svg        a stacked bar per step: queue, compute input, infer, output, client, the rest
//	report.html                 settings, the table of steps, the figures as inline SVG; self-contained
//	report.json                 r, for [Read] and [Add]
//
// Files of those names are replaced; a latency-vs-batch figure left by
// an earlier report of several batch sizes is removed when r has one. r
// must have a step. Everything is drawn before the first file is
// written.
func Write(dir string, r Report) error {
	if len(r.Steps) == 0 {
		return errors.New("perfreport: the report has no steps")
	}
	figs := r.figures()
	files := map[string][]byte{}
	svgs := make([][]byte, len(figs))
	for i := range figs {
		f := &figs[i]
		png, err := f.png()
		if err != nil {
			return fmt.Errorf("perfreport: drawing %s: %w", f.name, err)
		}
		svg, err := f.svg()
		if err != nil {
			return fmt.Errorf("perfreport: drawing %s: %w", f.name, err)
		}
		files[f.name+".png"], files[f.name+".svg"], svgs[i] = png, svg, svg
	}
	page, err := r.html(figs, svgs)
	if err != nil {
		return fmt.Errorf("perfreport: report.html: %w", err)
	}
	files["report.html"] = page
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("perfreport: %s: %w", dataFile, err)
	}
	files[dataFile] = append(data, '\n')

	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("perfreport: %w", err)
	}
	// report.json last: a folder whose data file is new has new figures.
	for _, name := range append(Files(r), dataFile) {
		if err := writeFile(filepath.Join(dir, name), files[name]); err != nil {
			return err
		}
	}
	if _, ok := r.batchFigure(); !ok {
		for _, ext := range []string{".png", ".svg"} {
			err := os.Remove(filepath.Join(dir, "latency-vs-batch"+ext))
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("perfreport: %w", err)
			}
		}
	}
	return nil
}

// Files are the names Write gives r's figures and page, in the page's
// order (report.json aside).
func Files(r Report) []string {
	var names []string
	for _, f := range r.figures() {
		names = append(names, f.name+".png", f.name+".svg")
	}
	return append(names, "report.html")
}

// writeFile replaces path's content through a temporary file, so that a
// reader never sees half a figure.
func writeFile(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("perfreport: %w", err)
	}
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("perfreport: %w", err)
	}
	return nil
}
