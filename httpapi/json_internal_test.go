package httpapi

import (
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/triton-go/triton/modelconfig"
)

func TestParseJSON(t *testing.T) {
	for _, tc := range []struct {
		in, err string
	}{
		{`{}`, ""},
		{` [1, -0, 0.5e+3, "a\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00", true, false, null, {"k": []}] `, ""},
		{``, "The document is empty. at 0"},
		{`   `, "The document is empty. at 3"},
		{`{} {}`, "The document root must not be followed by other values. at 3"},
		{`{"a" 1}`, "Missing a colon after a name of object member. at 5"},
		{`{"a":1,}`, "Missing a name for object member. at 7"},
		{`{"a":1 "b":2}`, "Missing a comma or '}' after an object member. at 7"},
		{`[1 2]`, "Missing a comma or ']' after an array element. at 3"},
		{`[1,]`, "Invalid value. at 3"},
		{`[01]`, "Missing a comma or ']' after an array element. at 2"},
		{`[1.]`, "Missing fraction part in number. at 3"},
		{`[1e]`, "Missing exponent in number. at 3"},
		{`[-]`, "Invalid value. at 2"},
		{`["\x"]`, "Invalid escape character in string. at 3"},
		{`["\u12G4"]`, "Incorrect hex digit after \\u escape in string. at 3"},
		{`["\ud800"]`, "The surrogate pair in string is invalid."},
		{`["\udc00"]`, "The surrogate pair in string is invalid."},
		{`["\ud800\u0041"]`, "The surrogate pair in string is invalid."},
		{"[\"a\x01\"]", "Invalid encoding in string. at 3"},
		{`["abc`, "Missing a closing quotation mark in string. at 5"},
		{`[nul]`, "Invalid value. at 1"},
		{`{"a":[` + strings.Repeat("[", 98) + strings.Repeat("]", 98) + `]}`, ""},
		{`{"a":[` + strings.Repeat("[", 99) + strings.Repeat("]", 99) + `]}`, "Nesting depth exceeds the limit of 100."},
	} {
		_, err := parseJSON([]byte(tc.in))
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.in, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
		}
	}
}

func TestJSONAccessors(t *testing.T) {
	v, err := parseJSON([]byte(`{"s":"a\u00e9\ud83d\ude00\u0000\n","raw":"x\u00ffy","u":18446744073709551615,"i":-9223372036854775808,"f":1.5e3,"b":true,"n":null,"big":1e400,"arr":[1,[2,3]]}`))
	if err != nil {
		t.Fatal(err)
	}
	ms := v.members()
	s, _ := get(ms, "s")
	if got, ok := s.str(); !ok || string(got) != "aé😀\x00\n" {
		t.Errorf("str %q", got)
	}
	u, _ := get(ms, "u")
	if n, ok := u.uint(); !ok || n != math.MaxUint64 {
		t.Errorf("uint %d %v", n, ok)
	}
	if _, ok := u.int(); ok {
		t.Errorf("MaxUint64 as int64")
	}
	i, _ := get(ms, "i")
	if n, ok := i.int(); !ok || n != math.MinInt64 {
		t.Errorf("int %d", n)
	}
	if _, ok := i.uint(); ok {
		t.Errorf("negative as uint")
	}
	f, _ := get(ms, "f")
	if x, ok := f.float(); !ok || x != 1500 {
		t.Errorf("float %v", x)
	}
	if _, ok := f.int(); ok {
		t.Errorf("1.5e3 as an integer")
	}
	big, _ := get(ms, "big")
	if _, ok := big.float(); ok {
		t.Errorf("1e400 as a float")
	}
	var n int
	arr, _ := get(ms, "arr")
	_ = forEachScalar(arr, func(jval) error { n++; return nil })
	if n != 3 {
		t.Errorf("scalars %d", n)
	}
	if _, ok := get(ms, "missing"); ok {
		t.Errorf("found a missing member")
	}
}

func TestModelConfigJSONEmpty(t *testing.T) {
	b, err := modelConfigJSON(&modelconfig.ModelConfig{})
	if err != nil || len(b) != 0 {
		t.Errorf("all-default config: %q, %v; want an empty body", b, err)
	}
}

func TestRecoverPanic(t *testing.T) {
	core, logs := observer.New(zap.ErrorLevel)
	h := &handler{log: zap.New(core)}
	rec := httptest.NewRecorder()
	func() {
		defer h.recoverPanic(rec)
		panic("boom")
	}()
	if rec.Code != http.StatusInternalServerError || rec.Body.String() != `{"error":"internal error: boom"}` {
		t.Errorf("recovered: %d %s", rec.Code, rec.Body.String())
	}
	if logs.Len() != 1 {
		t.Errorf("%d logs, want 1", logs.Len())
	}
	defer func() {
		if v := recover(); v != http.ErrAbortHandler {
			t.Errorf("ErrAbortHandler not passed on: %v", v)
		}
	}()
	func() {
		defer h.recoverPanic(httptest.NewRecorder())
		panic(http.ErrAbortHandler)
	}()
}
