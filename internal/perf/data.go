package perf

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/triton-go/triton/tensor"
)

// data.go is perf_analyzer's DataLoader: the batch-1 data of every input,
// generated (--input-data zero|random, the default random) or read from
// JSON files in perf_analyzer's format or from a directory with one file
// per input. Error texts are perf_analyzer's.

// tensorData is one input's (or expected output's) batch-1 data in one
// step: raw little-endian bytes, BYTES elements length-prefixed.
type tensorData struct {
	data []byte
	// shape overrides the tensor's default shape ("shape" in the JSON
	// file); nil keeps the default.
	shape []int64
}

// step is one request's worth of batch-1 data.
type step struct {
	inputs  map[string]tensorData
	outputs map[string]tensorData // validation_data; nil when none
}

// dataSet holds the streams of steps. Generated and directory data are one
// stream of one step; JSON "data" is one stream, or one per inner array.
type dataSet struct {
	streams [][]step
	// fromFile reports steps read from JSON, whose count sets a
	// sequence's length when --sequence-length is not given.
	fromFile bool
}

// characterSet is what random BYTES elements are drawn from
// (perf_analyzer's character_set).
const characterSet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ1234567890 .?!"

// defaultShapes applies --shape to the model's inputs: a variable
// dimension takes the given shape. A --shape for an input the model does
// not have, or one that contradicts a fixed dimension, is an error here
// (perf_analyzer ignores both silently).
func defaultShapes(cfg *Config, m *modelInfo) (map[string][]int64, error) {
	shapes := map[string][]int64{}
	var names []string
	for _, in := range m.inputs {
		shapes[in.name] = in.shape
		names = append(names, in.name)
	}
	for _, name := range sortedKeys(cfg.Shapes) {
		given := cfg.Shapes[name]
		model, ok := shapes[name]
		if !ok {
			return nil, fmt.Errorf("Failed to parse --shape. The model '%s' has no input named '%s' (its inputs: %s).", m.name, name, strings.Join(names, ", "))
		}
		if err := checkShape(given, model, name); err != nil {
			return nil, err
		}
		shapes[name] = given
	}
	return shapes, nil
}

// checkShape is DataLoader::ValidateTensorShape for a fully given shape.
func checkShape(shape, model []int64, name string) error {
	bad := len(shape) != len(model)
	for i := 0; !bad && i < len(shape); i++ {
		bad = shape[i] != model[i] && model[i] != -1
	}
	if bad {
		return fmt.Errorf("The supplied shape of %s for input \"%s\" is incompatible with the model's input shape of %s", shapeString(shape), name, shapeString(model))
	}
	return nil
}

// elementCount is perf_analyzer's ElementCount: -1 for a shape with a
// variable dimension.
func elementCount(shape []int64) int64 {
	n := int64(1)
	for _, d := range shape {
		if d < 0 {
			return -1
		}
		n *= d
	}
	return n
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// loadData builds the data set for the model's inputs.
func loadData(cfg *Config, m *modelInfo, shapes map[string][]int64) (*dataSet, error) {
	if len(cfg.UserData) == 0 {
		return generateData(cfg, m, shapes)
	}
	if fi, err := os.Stat(cfg.UserData[0]); err == nil && fi.IsDir() {
		return readDataDir(cfg.UserData[0], m, shapes)
	}
	ds := &dataSet{fromFile: true}
	multi := -1 // unknown until the first stream is read
	for _, path := range cfg.UserData {
		if fi, err := os.Stat(path); err == nil && fi.IsDir() {
			continue // only the first --input-data may be a directory
		}
		if err := ds.readJSON(path, m, shapes, &multi); err != nil {
			return nil, err
		}
	}
	return ds, nil
}

// generateData is DataLoader::GenerateData: one buffer of zeros or random
// bytes shared by every fixed-size input, and strings for BYTES inputs.
func generateData(cfg *Config, m *modelInfo, shapes map[string][]int64) (*dataSet, error) {
	st := step{inputs: map[string]tensorData{}}
	var maxBytes int64
	for _, in := range m.inputs {
		if in.shapeTensor {
			return nil, fmt.Errorf("can not generate data for shape tensor '%s', user-provided data is needed.", in.name)
		}
		n := elementCount(shapes[in.name])
		if n < 0 {
			return nil, fmt.Errorf("input %s contains dynamic shape, provide shapes to send along with the request", in.name)
		}
		if in.dtype != tensor.Bytes {
			maxBytes = max(maxBytes, n*int64(in.dtype.Size()))
		}
	}
	// rand() without srand: the same bytes on every run. A fixed seed
	// here too.
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, maxBytes)
	if !cfg.ZeroInput {
		for i := range buf {
			buf[i] = byte(rng.Uint32())
		}
	}
	for _, in := range m.inputs {
		n := elementCount(shapes[in.name])
		if in.dtype != tensor.Bytes {
			size := n * int64(in.dtype.Size())
			data := buf[:size:size]
			if in.dtype == tensor.Bool && !cfg.ZeroInput {
				// Booleans must be 0 or 1 where the server checks them.
				data = make([]byte, size)
				for i := range data {
					data[i] = byte(rng.Uint32() & 1)
				}
			}
			st.inputs[in.name] = tensorData{data: data}
			continue
		}
		var b []byte
		for range n {
			s := cfg.StringData
			if s == "" {
				r := make([]byte, cfg.StringLength)
				for i := range r {
					r[i] = characterSet[rng.IntN(len(characterSet))]
				}
				s = string(r)
			}
			b = tensor.AppendElement(b, []byte(s))
		}
		st.inputs[in.name] = tensorData{data: b}
	}
	return &dataSet{streams: [][]step{{st}}}, nil
}

// readDataDir is DataLoader::ReadDataFromDir: a file per input named after
// it, raw batch-1 bytes, or for BYTES a text file with one element per
// line; files named after outputs are expected outputs.
func readDataDir(dir string, m *modelInfo, shapes map[string][]int64) (*dataSet, error) {
	st := step{inputs: map[string]tensorData{}}
	for _, in := range m.inputs {
		path := dir + "/" + in.name
		n := elementCount(shapes[in.name])
		if in.dtype != tensor.Bytes {
			data, err := readFile(path)
			if err != nil {
				if in.optional && os.IsNotExist(err) {
					continue
				}
				return nil, err
			}
			if n < 0 {
				return nil, fmt.Errorf("input %s contains dynamic shape, provide shapes to send along with the request", in.name)
			}
			if size := n * int64(in.dtype.Size()); int64(len(data)) != size {
				return nil, fmt.Errorf("provided data for input %s has byte size %d, expect %d", in.name, len(data), size)
			}
			st.inputs[in.name] = tensorData{data: data}
			continue
		}
		lines, err := readLines(path)
		if err != nil {
			if in.optional && os.IsNotExist(err) {
				continue
			}
			return nil, err
		}
		if n < 0 {
			return nil, fmt.Errorf("input %s contains dynamic shape, provide shapes to send along with the request", in.name)
		}
		if int64(len(lines)) != n {
			return nil, fmt.Errorf("provided data for input %s has %d elements, expect %d", in.name, len(lines), n)
		}
		var b []byte
		for _, l := range lines {
			b = tensor.AppendElement(b, []byte(l))
		}
		st.inputs[in.name] = tensorData{data: b}
	}
	for _, out := range m.outputs {
		path := dir + "/" + out.name
		var data []byte
		if out.dtype != tensor.Bytes {
			b, err := os.ReadFile(path)
			if err != nil || len(b) == 0 {
				continue
			}
			data = b
		} else {
			lines, err := readLines(path)
			if err != nil {
				continue
			}
			for _, l := range lines {
				data = tensor.AppendElement(data, []byte(l))
			}
		}
		if st.outputs == nil {
			st.outputs = map[string]tensorData{}
		}
		st.outputs[out.name] = tensorData{data: data}
	}
	return &dataSet{streams: [][]step{{st}}}, nil
}

type fileError struct{ msg string }

func (e *fileError) Error() string { return e.msg }

func readFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, err
		}
		return nil, &fileError{"failed to open file '" + path + "'"}
	}
	if len(b) == 0 {
		return nil, &fileError{"file '" + path + "' is empty"}
	}
	return b, nil
}

func readLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, err
		}
		return nil, &fileError{"failed to open file '" + path + "'"}
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<30)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) == 0 {
		return nil, &fileError{"file '" + path + "' is empty"}
	}
	return lines, nil
}

// readJSON is DataLoader::ReadDataFromJSON and ParseData. multi is the
// parsing mode of the files read so far: -1 none yet, 0 a flat array of
// steps, 1 an array of streams.
func (ds *dataSet) readJSON(path string, m *modelInfo, shapes map[string][]int64, multi *int) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("failed to open file for reading provided data")
	}
	doc, err := parseJSON(raw)
	if err != nil {
		return fmt.Errorf("failed to parse the specified json file for reading provided data (%s: %v)", filepath.Base(path), err)
	}
	top, ok := doc.(*jsonObject)
	if !ok {
		return fmt.Errorf("The json file doesn't contain data field")
	}
	dataV, ok := top.get("data")
	if !ok {
		return fmt.Errorf("The json file doesn't contain data field")
	}
	streams, ok := dataV.([]any)
	if !ok {
		return fmt.Errorf("Input data file is malformed.")
	}
	var outStreams []any
	if v, ok := top.get("validation_data"); ok {
		outStreams, ok = v.([]any)
		if !ok || len(outStreams) != len(streams) {
			return fmt.Errorf("The 'validation_data' field doesn't align with 'data' field in the json file")
		}
	}
	for i, s := range streams {
		_, isArray := s.([]any)
		mode := 0
		if isArray {
			mode = 1
		}
		if *multi < 0 {
			*multi = mode
		} else if *multi != mode {
			return fmt.Errorf("Inconsistency in input-data provided. Can not have a combination of objects and arrays inside of the Data array")
		}
		if !isArray {
			break
		}
		var outSteps []any
		if outStreams != nil {
			outSteps, ok = outStreams[i].([]any)
			if !ok || len(outSteps) != len(s.([]any)) {
				return fmt.Errorf("The 'validation_data' field doesn't align with 'data' field in the json file")
			}
		}
		streamID := len(ds.streams)
		var steps []step
		for k, v := range s.([]any) {
			st, err := readStep(v, outSteps, k, m, shapes, streamID)
			if err != nil {
				return err
			}
			steps = append(steps, st)
		}
		ds.streams = append(ds.streams, steps)
	}
	if *multi == 0 {
		// A flat array: the steps of stream 0, appended to those of
		// earlier files.
		if len(ds.streams) == 0 {
			ds.streams = append(ds.streams, nil)
		}
		offset := len(ds.streams[0])
		for k, v := range streams {
			st, err := readStep(v, outStreams, k, m, shapes, 0)
			if err != nil {
				if se, ok := err.(*stepError); ok {
					se.step += offset
					return se
				}
				return err
			}
			ds.streams[0] = append(ds.streams[0], st)
		}
	}
	return nil
}

// stepError is a problem with one step, located as perf_analyzer locates
// it: "<msg> ( Location stream id: S, step id: K)".
type stepError struct {
	msg          string
	stream, step int
}

func (e *stepError) Error() string {
	return fmt.Sprintf("%s ( Location stream id: %d, step id: %d)", e.msg, e.stream, e.step)
}

func readStep(v any, outSteps []any, k int, m *modelInfo, shapes map[string][]int64, stream int) (step, error) {
	st := step{}
	var err error
	if st.inputs, err = readTensors(v, m.inputs, shapes, stream, k, true); err != nil {
		return st, err
	}
	if outSteps != nil {
		outShapes := map[string][]int64{}
		for _, o := range m.outputs {
			outShapes[o.name] = o.shape
		}
		if st.outputs, err = readTensors(outSteps[k], m.outputs, outShapes, stream, k, false); err != nil {
			return st, err
		}
	}
	return st, nil
}

// readTensors is DataLoader::ReadTensorData for one step.
func readTensors(v any, tensors []tensorInfo, shapes map[string][]int64, stream, k int, inputs bool) (map[string]tensorData, error) {
	obj, ok := v.(*jsonObject)
	if !ok {
		return nil, fmt.Errorf("Input data file is malformed.")
	}
	out := map[string]tensorData{}
	known := map[string]bool{"model": true}
	for _, t := range tensors {
		known[t.name] = true
		tv, ok := obj.get(t.name)
		if !ok {
			if !t.optional && inputs {
				return nil, &stepError{"missing tensor " + t.name, stream, k}
			}
			continue
		}
		var td tensorData
		var content any
		switch x := tv.(type) {
		case []any:
			content = x
		case *jsonObject:
			if sv, ok := x.get("shape"); ok {
				arr, ok := sv.([]any)
				if !ok {
					return nil, fmt.Errorf("shape values must be integers.")
				}
				td.shape = []int64{}
				for _, d := range arr {
					n, ok := jsonInt(d, math.MinInt32, math.MaxInt32)
					if !ok {
						return nil, fmt.Errorf("shape values must be integers.")
					}
					td.shape = append(td.shape, n)
				}
			}
			if _, ok := x.get("b64"); ok {
				content = x
			} else if c, ok := x.get("content"); ok {
				content = c
			} else {
				return nil, &stepError{"missing content field.", stream, k}
			}
		default:
			return nil, fmt.Errorf("Input data file is malformed.")
		}
		var err error
		switch c := content.(type) {
		case []any:
			td.data, err = serializeExplicit(c, t.dtype)
			if err != nil {
				return nil, err
			}
		case *jsonObject:
			b, ok := c.get("b64")
			if !ok {
				return nil, &stepError{"The tensor values are not supported. Expected an array or b64 string", stream, k}
			}
			s, ok := b.(string)
			if !ok {
				return nil, &stepError{"the value of b64 field should be of type string", stream, k}
			}
			td.data, err = decodeBase64(s)
			if err != nil {
				return nil, &stepError{"the value of b64 field is not valid base64", stream, k}
			}
		default:
			return nil, &stepError{"The tensor values are not supported. Expected an array or b64 string", stream, k}
		}
		if err := validateTensor(td, t, shapes[t.name]); err != nil {
			return nil, err
		}
		out[t.name] = td
	}
	for _, key := range obj.keys {
		if !known[key] {
			return nil, fmt.Errorf("The input or output '%s' is not found in the model configuration", key)
		}
	}
	return out, nil
}

// validateTensor is DataLoader::ValidateTensor: the shape must be fully
// known and fit the model's, and the data must match it. BYTES data is
// checked to hold exactly that many well-framed elements (perf_analyzer
// leaves that to the server).
func validateTensor(td tensorData, t tensorInfo, defaultShape []int64) error {
	shape := defaultShape
	if td.shape != nil {
		shape = td.shape
	}
	n := elementCount(shape)
	if n < 0 {
		return fmt.Errorf("The variable-sized tensor \"%s\" with model shape %s needs to have its shape fully defined. See the --shape option.", t.name, shapeString(t.shape))
	}
	if err := checkShape(shape, t.shape, t.name); err != nil {
		return err
	}
	if t.dtype == tensor.Bytes {
		if err := tensor.ValidateBytes(td.data, n); err != nil {
			return fmt.Errorf("mismatch in the data provided for %s. Expected: %d BYTES elements for shape %s: %v", t.name, n, shapeString(shape), err)
		}
		return nil
	}
	if want := n * int64(t.dtype.Size()); int64(len(td.data)) != want {
		return fmt.Errorf("mismatch in the data provided for %s. Expected: %d bytes, Got: %d bytes", t.name, want, len(td.data))
	}
	return nil
}

func decodeBase64(s string) ([]byte, error) {
	s = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == ' ' || r == '\t' {
			return -1
		}
		return r
	}, s)
	if b, err := base64.StdEncoding.DecodeString(s); err == nil {
		return b, nil
	}
	return base64.RawStdEncoding.DecodeString(strings.TrimRight(s, "="))
}

// serializeExplicit is SerializeExplicitTensor: a flat JSON array in the
// tensor's data type, little-endian. Values out of the type's range are
// refused (perf_analyzer casts them); FP16 and BF16 are accepted
// (perf_analyzer refuses them).
func serializeExplicit(vals []any, dt tensor.DataType) ([]byte, error) {
	var b []byte
	le := binary.LittleEndian
	for _, v := range vals {
		switch dt {
		case tensor.Bytes:
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("unable to find string data in json")
			}
			b = tensor.AppendElement(b, []byte(s))
		case tensor.Bool:
			x, ok := v.(bool)
			if !ok {
				return nil, fmt.Errorf("unable to find bool data in json")
			}
			if x {
				b = append(b, 1)
			} else {
				b = append(b, 0)
			}
		case tensor.Uint8, tensor.Uint16, tensor.Uint32, tensor.Uint64:
			size := dt.Size()
			u, ok := jsonUint(v, math.MaxUint64>>(64-8*size))
			if !ok {
				return nil, fmt.Errorf("unable to find uint%d_t data in json", 8*size)
			}
			b = le.AppendUint64(b, u)[:len(b)+size]
		case tensor.Int8, tensor.Int16, tensor.Int32, tensor.Int64:
			size := dt.Size()
			hi := int64(math.MaxInt64 >> (64 - 8*size))
			i, ok := jsonInt(v, -hi-1, hi)
			if !ok {
				return nil, fmt.Errorf("unable to find int%d_t data in json", 8*size)
			}
			b = le.AppendUint64(b, uint64(i))[:len(b)+size]
		case tensor.FP32:
			f, ok := jsonFloat(v)
			if !ok {
				return nil, fmt.Errorf("unable to find float data in json")
			}
			b = le.AppendUint32(b, math.Float32bits(float32(f)))
		case tensor.FP64:
			f, ok := jsonFloat(v)
			if !ok {
				return nil, fmt.Errorf("unable to find fp64 data in json")
			}
			b = le.AppendUint64(b, math.Float64bits(f))
		case tensor.FP16:
			f, ok := jsonFloat(v)
			if !ok {
				return nil, fmt.Errorf("unable to find fp16 data in json")
			}
			b = le.AppendUint16(b, uint16(tensor.Float16FromFloat32(float32(f))))
		case tensor.BF16:
			f, ok := jsonFloat(v)
			if !ok {
				return nil, fmt.Errorf("unable to find bf16 data in json")
			}
			b = le.AppendUint16(b, uint16(tensor.BFloat16FromFloat32(float32(f))))
		default:
			return nil, fmt.Errorf("Unexpected type %s", dt)
		}
	}
	if b == nil {
		b = []byte{}
	}
	return b, nil
}

// equalBytes compares output data with the expected.
var equalBytes = bytes.Equal
