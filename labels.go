// labels.go reads and serves classification labels (label_filename).

package triton

import (
	"bytes"
	"fmt"
	"io/fs"
	"slices"

	"github.com/triton-go/triton/modelconfig"
)

// readLabels reads the label files a configuration's outputs name
// (label_filename, a path inside the model folder): one label per line,
// line i naming class i of a classification result. A missing or
// unreadable file fails the load, as in Triton.
func readLabels(modelFS fs.FS, cfg *modelconfig.ModelConfig) (map[string][]string, error) {
	var labels map[string][]string
	for _, out := range cfg.GetOutput() {
		name := out.GetLabelFilename()
		if name == "" {
			continue
		}
		if !fs.ValidPath(name) {
			return nil, fmt.Errorf("output '%s': label_filename '%s' must be a relative path inside the model folder", out.GetName(), name)
		}
		data, err := fs.ReadFile(modelFS, name)
		if err != nil {
			return nil, fmt.Errorf("output '%s': label_filename: %w", out.GetName(), err)
		}
		if labels == nil {
			labels = make(map[string][]string)
		}
		labels[out.GetName()] = splitLabels(data)
	}
	return labels, nil
}

// splitLabels splits a label file into lines as C++'s std::getline does
// (a final newline ends the last line rather than starting an empty one),
// and also drops a carriage return ending a line, so files written on
// Windows give the same labels.
func splitLabels(data []byte) []string {
	if len(data) == 0 {
		return nil
	}
	data = bytes.TrimSuffix(data, []byte("\n"))
	lines := bytes.Split(data, []byte("\n"))
	labels := make([]string, len(lines))
	for i, l := range lines {
		labels[i] = string(bytes.TrimSuffix(l, []byte("\r")))
	}
	return labels
}

// Labels returns the class labels of an output of a loaded model version,
// read from the output's label_filename when the version loaded: label i
// names class i. It returns nil when the output has no label file. Version
// 0 means the version a request without a version would use.
func (s *Server) Labels(model string, ver int64, output string) ([]string, error) {
	v, _, err := s.find(model, ver)
	if err != nil {
		return nil, err
	}
	if err := v.sig.CheckOutputs([]string{output}); err != nil {
		return nil, &Error{Code: InvalidArgument, Model: model, Version: v.number, Err: err}
	}
	return slices.Clone(v.labels[output]), nil
}
