package warmup

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/triton-go/triton/modelconfig"
	"github.com/triton-go/triton/tensor"
)

// folder is the folder of a model directory that holds the files named by
// input_data_file, as in Triton.
const folder = "warmup"

// Sample is one model_warmup entry of a model configuration, turned into
// tensors ready to run: a server runs it Count times through each instance
// of a model version, as one request of BatchSize rows, before the version
// takes traffic.
//
// The Inputs are freshly allocated by [Samples] and owned by the Sample;
// no two inputs, samples or calls share memory. A server hands them to
// backends as borrowed request inputs (see package tensor), so the same
// tensors can be run Count times and on every instance.
type Sample struct {
	// Name is the model_warmup entry's name, for logs and errors.
	Name string
	// BatchSize is the number of rows of the request: the entry's
	// batch_size, always 1 for models without batching
	// (max_batch_size 0).
	BatchSize int64
	// Count is how many times to run the sample, at least 1 (the entry's
	// count, with 0 meaning 1).
	Count int
	// Inputs are the request inputs, sorted by name. For a model with
	// batching (max_batch_size > 0) each shape is [BatchSize] + dims and
	// the data is the one-row data repeated BatchSize times; otherwise the
	// shape is the entry's dims.
	Inputs []tensor.Tensor
}

// ensemblePlatform is the platform of ensemble models.
const ensemblePlatform = "ensemble"

// maxInputBytes bounds the data of one warm-up input, batch included, so
// that a config with absurd dims fails the load with an error instead of
// exhausting memory. It is far beyond any real warm-up (and above the
// 2 GiB - 1 a gRPC request can carry); on 32-bit hosts it is MaxInt.
const maxInputBytes = min(4<<30, math.MaxInt)

// Samples builds the warm-up samples of cfg's model_warmup entries, in
// config order. It returns nil and no error when there are none; a nil cfg
// has none.
//
// modelDir is the model's folder, needed only when an entry uses
// input_data_file: the file is read from warmup/<input_data_file> in it.
// Names that are absolute, contain ".." or a backslash, or that
// fs.ValidPath rejects are errors, so nothing outside the model folder is
// named; an fs.FS that follows symbolic links (os.DirFS) can still reach
// outside through a link, which os.Root.FS prevents.
//
// random_data comes from a fixed-seed generator seeded from the sample and
// input names, so the same config gives the same data on every call and
// every run, and adding or reordering entries does not change the data of
// the others. The values are valid for their type: BOOL bytes are 0 or 1;
// FP16, BF16, FP32 and FP64 are finite values spread uniformly over
// [-1, 1); integers take any value; BYTES gets zero data (every element
// empty), as in Triton.
//
// Samples checks each entry the way a request would be checked, so that a
// warm-up fails with a clear error before any backend sees it:
//
//   - batch_size is at least 1, exactly 1 without batching and at most
//     max_batch_size with it;
//   - every non-optional config input is given, and every given input is a
//     config input, a sequence_batching control input or the input_name
//     of an implicit state (those two kinds are allowed, never required);
//   - data_type is valid and equal to the input's (for a control input,
//     the type its controls imply; for a state, the state's data_type);
//   - dims are concrete (no -1 or other negative values) and match the
//     input's dims, a -1 in the config matching any size (reshape is not
//     applied: the entry gives the config's dims); control inputs have
//     dims [1];
//   - each input has one data source, and a file holds exactly one row: the
//     element count times the element size (BOOL bytes 0 or 1), or for
//     BYTES exactly the element count of length-prefixed elements;
//   - no input's data, batch included, exceeds 4 GiB;
//   - an ensemble has no model_warmup, as in Triton.
//
// Errors name the sample and the input, for example
//
//	warmup: sample "s1": input "IN": file "warmup/in.bin" has 12 bytes, want 16 (one row: 4 FP32 elements)
//
// A missing file gives an error wrapping fs.ErrNotExist; malformed BYTES
// file data and BOOL file bytes other than 0 and 1 give errors wrapping
// tensor.ErrInvalid, and dims whose element count overflows one wrapping
// tensor.ErrOverflow.
//
// Samples is safe for concurrent use as long as nobody modifies cfg and
// modelDir is safe for concurrent use.
func Samples(cfg *modelconfig.ModelConfig, modelDir fs.FS) ([]Sample, error) {
	entries := cfg.GetModelWarmup()
	if len(entries) == 0 {
		return nil, nil
	}
	if cfg.GetPlatform() == ensemblePlatform || cfg.GetEnsembleScheduling() != nil {
		return nil, fmt.Errorf("warmup: model_warmup can not be specified for ensemble %s", strconv.Quote(cfg.GetName()))
	}
	if mbs := cfg.GetMaxBatchSize(); mbs < 0 {
		return nil, fmt.Errorf("warmup: max_batch_size must be non-negative, got %d", mbs)
	}
	m := newModel(cfg)
	out := make([]Sample, 0, len(entries))
	for i, w := range entries {
		s, err := m.sample(w, modelDir)
		if err != nil {
			return nil, fmt.Errorf("warmup: %s: %w", sampleLabel(i, w.GetName()), err)
		}
		out = append(out, s)
	}
	return out, nil
}

// sampleLabel names the i-th entry in errors: by its name, or by its index
// when it has none.
func sampleLabel(i int, name string) string {
	if name == "" {
		return fmt.Sprintf("sample #%d (unnamed)", i)
	}
	return "sample " + strconv.Quote(name)
}

// expected is what the model accepts for one input name.
type expected struct {
	kind     string          // "input", "control input" or "state input", for errors
	dataType tensor.DataType // Invalid: any type (a control without a type)
	dims     tensor.Shape    // pattern with -1 wildcards
	anyDims  bool            // no dims to check (a state without dims)
	required bool
}

// model is the part of a config that samples are checked against.
type model struct {
	batching bool
	maxBatch int64
	inputs   map[string]expected
	required []string // non-optional config inputs, in config order
}

func newModel(cfg *modelconfig.ModelConfig) *model {
	m := &model{
		batching: cfg.GetMaxBatchSize() > 0,
		maxBatch: int64(cfg.GetMaxBatchSize()),
		inputs:   map[string]expected{},
	}
	// A name listed under input is checked as a config input even when it
	// is also a state or control input, and a state input as a state input
	// even when it is also a control input.
	add := func(name string, e expected) {
		if _, dup := m.inputs[name]; !dup {
			m.inputs[name] = e
			if e.required {
				m.required = append(m.required, name)
			}
		}
	}
	for _, in := range cfg.GetInput() {
		add(in.GetName(), expected{kind: "input", dataType: toDataType(in.GetDataType()), dims: in.GetDims(), required: !in.GetOptional()})
	}
	seq := cfg.GetSequenceBatching()
	for _, st := range seq.GetState() {
		add(st.GetInputName(), expected{kind: "state input", dataType: toDataType(st.GetDataType()), dims: st.GetDims(), anyDims: len(st.GetDims()) == 0})
	}
	for _, ci := range seq.GetControlInput() {
		add(ci.GetName(), expected{kind: "control input", dataType: controlType(ci), dims: tensor.Shape{1}})
	}
	return m
}

// controlType returns the tensor type of a control input (Invalid when
// it has no control or its controls disagree).
func controlType(ci *modelconfig.ModelSequenceBatching_ControlInput) tensor.DataType {
	return toDataType(modelconfig.ControlDataType(ci))
}

// toDataType converts a config data type, giving Invalid for values
// outside the enum.
func toDataType(d modelconfig.DataType) tensor.DataType {
	if d < 0 || d > math.MaxUint8 {
		return tensor.Invalid
	}
	return tensor.DataType(d) // same numbering, see tensor.DataType
}

func (m *model) sample(w *modelconfig.ModelWarmup, modelDir fs.FS) (Sample, error) {
	bs := int64(w.GetBatchSize())
	switch {
	case bs == 0:
		return Sample{}, errors.New("batch_size must be >= 1, got 0")
	case !m.batching && bs != 1:
		return Sample{}, fmt.Errorf("batch_size must be 1 because the model does not support batching (max_batch_size 0), got %d", bs)
	case m.batching && bs > m.maxBatch:
		return Sample{}, fmt.Errorf("batch_size must be <= max_batch_size %d, got %d", m.maxBatch, bs)
	}
	given := w.GetInputs()
	names := slices.Sorted(maps.Keys(given))
	for _, name := range names {
		if _, ok := m.inputs[name]; !ok {
			return Sample{}, fmt.Errorf("input %s is not an input of the model (%s)", strconv.Quote(name), m.known())
		}
	}
	for _, name := range m.required {
		if _, ok := given[name]; !ok {
			return Sample{}, fmt.Errorf("required input %s is missing", strconv.Quote(name))
		}
	}
	s := Sample{
		Name:      w.GetName(),
		BatchSize: bs,
		Count:     max(int(w.GetCount()), 1),
		Inputs:    make([]tensor.Tensor, 0, len(names)),
	}
	for _, name := range names {
		t, err := m.input(w.GetName(), name, given[name], bs, modelDir)
		if err != nil {
			return Sample{}, fmt.Errorf("input %s: %w", strconv.Quote(name), err)
		}
		s.Inputs = append(s.Inputs, t)
	}
	return s, nil
}

// known lists the names a sample may give, for the unknown-input error.
func (m *model) known() string {
	names := slices.SortedFunc(maps.Keys(m.inputs), func(a, b string) int {
		return cmp.Or(cmp.Compare(m.inputs[a].kind, m.inputs[b].kind), cmp.Compare(a, b))
	})
	if len(names) == 0 {
		return "it has none"
	}
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return "expected one of " + strings.Join(q, ", ")
}

// input checks one input of a sample and builds its tensor.
func (m *model) input(sample, name string, in *modelconfig.ModelWarmup_Input, batch int64, modelDir fs.FS) (tensor.Tensor, error) {
	exp := m.inputs[name]
	dt := toDataType(in.GetDataType())
	if !dt.Valid() {
		return tensor.Tensor{}, fmt.Errorf("data_type %s is not a valid type", in.GetDataType())
	}
	if exp.dataType != tensor.Invalid && dt != exp.dataType {
		return tensor.Tensor{}, fmt.Errorf("data_type is %s, but the model's %s expects %s", dt.ConfigName(), exp.kind, exp.dataType.ConfigName())
	}
	dims := tensor.Shape(in.GetDims())
	for i, d := range dims {
		if d < 0 {
			return tensor.Tensor{}, fmt.Errorf("dims %v: dimension %d is %d; warm-up data needs a concrete shape (no -1)", dims.String(), i, d)
		}
	}
	if !exp.anyDims && !dims.Matches(exp.dims) {
		return tensor.Tensor{}, fmt.Errorf("dims %v do not match the model's %s dims %v", dims.String(), exp.kind, exp.dims.String())
	}
	n, err := dims.NumElements()
	if err != nil {
		return tensor.Tensor{}, fmt.Errorf("dims %v: %w", dims.String(), err)
	}
	shape := dims.Clone()
	if m.batching {
		shape = append(tensor.Shape{batch}, dims...)
		// The batch's element count must fit too; the byte size is checked
		// below on the real data length.
		if _, err := shape.NumElements(); err != nil {
			return tensor.Tensor{}, fmt.Errorf("shape %v: %w", shape.String(), err)
		}
	}
	var row []byte
	switch src := in.GetInputDataType().(type) {
	case *modelconfig.ModelWarmup_Input_ZeroData:
		row, err = zeroRow(dt, n)
	case *modelconfig.ModelWarmup_Input_RandomData:
		if dt == tensor.Bytes {
			row, err = zeroRow(dt, n)
		} else {
			row, err = randomRow(dt, n, seed(sample, name))
		}
	case *modelconfig.ModelWarmup_Input_InputDataFile:
		row, err = fileRow(modelDir, src.InputDataFile, dt, n)
	default:
		return tensor.Tensor{}, errors.New("must set one of zero_data, random_data or input_data_file")
	}
	if err != nil {
		return tensor.Tensor{}, err
	}
	data, err := repeat(row, batch)
	if err != nil {
		return tensor.Tensor{}, fmt.Errorf("shape %v: %w", shape.String(), err)
	}
	return tensor.Tensor{Name: name, DataType: dt, Shape: shape, Data: data}, nil
}

// repeat returns row repeated batch times in a new buffer, or row itself
// when batch is 1.
func repeat(row []byte, batch int64) ([]byte, error) {
	if batch == 1 {
		return row, nil
	}
	if len(row) > 0 && batch > maxInputBytes/int64(len(row)) {
		return nil, fmt.Errorf("%d rows of %d bytes exceed the %d-byte limit on warm-up data", batch, len(row), int64(maxInputBytes))
	}
	data := make([]byte, 0, int64(len(row))*batch)
	for range batch {
		data = append(data, row...)
	}
	return data, nil
}

// rowBytes returns the size of one row of n fixed-size elements of dt.
func rowBytes(dt tensor.DataType, n int64) (int, error) {
	size := int64(dt.Size())
	if dt == tensor.Bytes {
		size = 4 // an empty element: its length prefix alone
	}
	if n > maxInputBytes/size {
		return 0, fmt.Errorf("%d %v elements exceed the %d-byte limit on warm-up data", n, dt, int64(maxInputBytes))
	}
	return int(n * size), nil
}

// zeroRow returns one row of zero data: zero bytes, which for BYTES is n
// empty elements.
func zeroRow(dt tensor.DataType, n int64) ([]byte, error) {
	size, err := rowBytes(dt, n)
	if err != nil {
		return nil, err
	}
	return make([]byte, size), nil
}

// fileRow reads one row of data from folder/file in modelDir and checks it
// holds exactly n elements of dt.
func fileRow(modelDir fs.FS, file string, dt tensor.DataType, n int64) ([]byte, error) {
	p, err := filePath(file)
	if err != nil {
		return nil, err
	}
	if modelDir == nil {
		return nil, fmt.Errorf("input_data_file %s: no model folder to read it from: %w", strconv.Quote(file), fs.ErrNotExist)
	}
	f, err := modelDir.Open(p)
	if err != nil {
		return nil, fmt.Errorf("input_data_file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		st = nil // some fs.FS implementations cannot stat; the read below decides
	}
	if st != nil && st.IsDir() {
		return nil, fmt.Errorf("input_data_file %s is a folder, not a file", strconv.Quote(p))
	}
	if dt == tensor.Bytes {
		data, err := io.ReadAll(io.LimitReader(f, maxInputBytes+1))
		if err != nil {
			return nil, fmt.Errorf("input_data_file: reading %s: %w", strconv.Quote(p), err)
		}
		if len(data) > maxInputBytes {
			return nil, fmt.Errorf("file %s exceeds the %d-byte limit on warm-up data", strconv.Quote(p), int64(maxInputBytes))
		}
		if err := tensor.ValidateBytes(data, n); err != nil {
			return nil, fmt.Errorf("file %s must hold exactly %d length-prefixed BYTES elements (one row): %w", strconv.Quote(p), n, err)
		}
		return data, nil
	}
	want, err := rowBytes(dt, n)
	if err != nil {
		return nil, err
	}
	sizeErr := func(got string) error {
		return fmt.Errorf("file %s has %s bytes, want %d (one row: %d %v elements)", strconv.Quote(p), got, want, n, dt)
	}
	if st != nil && st.Mode().IsRegular() && st.Size() != int64(want) {
		return nil, sizeErr(strconv.FormatInt(st.Size(), 10))
	}
	// Read at most one byte more than a row, whatever the file claims, so
	// that a huge file is rejected without reading it whole.
	data, err := io.ReadAll(io.LimitReader(f, int64(want)+1))
	if err != nil {
		return nil, fmt.Errorf("input_data_file: reading %s: %w", strconv.Quote(p), err)
	}
	switch {
	case len(data) > want:
		return nil, sizeErr("more than " + strconv.Itoa(want))
	case len(data) < want:
		return nil, sizeErr(strconv.Itoa(len(data)))
	}
	if dt == tensor.Bool {
		for i, b := range data {
			if b > 1 {
				return nil, fmt.Errorf("file %s: BOOL element %d is %d, not 0 or 1: %w", strconv.Quote(p), i, b, tensor.ErrInvalid)
			}
		}
	}
	return data, nil
}

// filePath returns the path in the model folder of an input_data_file
// name, rejecting any name that could leave folder.
func filePath(file string) (string, error) {
	bad := func(why string) error {
		return fmt.Errorf("input_data_file %s %s; it must be a relative path inside the model's %s/ folder",
			strconv.Quote(file), why, folder)
	}
	switch {
	case file == "":
		return "", bad("is empty")
	case strings.HasPrefix(file, "/"):
		return "", bad("is absolute")
	case strings.Contains(file, `\`):
		return "", bad("contains a backslash")
	case slices.Contains(strings.Split(file, "/"), ".."):
		return "", bad(`contains ".."`)
	}
	p := folder + "/" + file
	if !fs.ValidPath(file) || !fs.ValidPath(p) {
		return "", bad("is not a valid fs.FS path")
	}
	return p, nil
}
