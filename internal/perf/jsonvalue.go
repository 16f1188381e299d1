package perf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// jsonvalue.go decodes JSON into values that keep the order of object
// members and the spelling of numbers, which perf_analyzer's checks see
// through rapidjson (IsInt versus IsDouble, members in document order) and
// encoding/json's map[string]any would lose.

// jsonObject is a JSON object with its members in document order; of
// duplicated names the first is found, as rapidjson's FindMember does.
type jsonObject struct {
	keys []string
	vals map[string]any
}

func (o *jsonObject) get(k string) (any, bool) {
	v, ok := o.vals[k]
	return v, ok
}

// parseJSON decodes one JSON document: nil, bool, string, json.Number,
// []any or *jsonObject. Anything after the document is an error.
func parseJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("data after the document at offset %d", dec.InputOffset())
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &jsonObject{vals: map[string]any{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k := kt.(string)
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				if _, dup := o.vals[k]; !dup {
					o.vals[k] = v
				}
				o.keys = append(o.keys, k)
			}
			if _, err := dec.Token(); err != nil { // '}'
				return nil, err
			}
			return o, nil
		case '[':
			a := []any{}
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			if _, err := dec.Token(); err != nil { // ']'
				return nil, err
			}
			return a, nil
		}
		return nil, errors.New("unexpected " + t.String())
	default:
		return t, nil
	}
}

// isIntegerLiteral reports whether a number was written without a
// fraction or exponent (rapidjson then stores it as an integer).
func isIntegerLiteral(n json.Number) bool {
	return !strings.ContainsAny(string(n), ".eE")
}

// jsonInt reads an integer literal within [lo, hi].
func jsonInt(v any, lo, hi int64) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok || !isIntegerLiteral(n) {
		return 0, false
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil || i < lo || i > hi {
		return 0, false
	}
	return i, true
}

// jsonUint reads a non-negative integer literal up to hi.
func jsonUint(v any, hi uint64) (uint64, bool) {
	n, ok := v.(json.Number)
	if !ok || !isIntegerLiteral(n) {
		return 0, false
	}
	u, err := strconv.ParseUint(string(n), 10, 64)
	if err != nil || u > hi {
		return 0, false
	}
	return u, true
}

// jsonFloat reads any number (perf_analyzer asks for a literal with a
// fraction for FP32 and FP64; whole numbers are accepted here too).
func jsonFloat(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil && !math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}
