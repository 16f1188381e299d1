package jsontext

import (
	"encoding/json"
	"math"
	"testing"
	"unicode/utf8"
)

func TestAppendDouble(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want string
	}{
		{0, "0.0"}, {math.Copysign(0, -1), "-0.0"}, {1, "1.0"}, {-2.5, "-2.5"}, {100, "100.0"},
		{float64(float32(1.1)), "1.100000023841858"}, {0.1, "0.1"}, {1e21, "1e21"}, {1e20, "100000000000000000000.0"},
		{1.5e-7, "1.5e-7"}, {0.000001, "0.000001"}, {1e-6, "0.000001"}, {1.234e-7, "1.234e-7"}, {1.5e300, "1.5e300"},
		{123456.789, "123456.789"}, {math.MaxFloat64, "1.7976931348623157e308"}, {5e-324, "5e-324"},
		{math.NaN(), "NaN"}, {math.Inf(1), "Infinity"}, {math.Inf(-1), "-Infinity"},
	} {
		if got := string(AppendDouble(nil, tc.f)); got != tc.want {
			t.Errorf("AppendDouble(%v) = %s, want %s", tc.f, got, tc.want)
		}
	}
}

func TestAppendString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"a\"b\\c\x00\x1f\n\t/<>é", `"a\"b\\c\u0000\u001F\n\t/<>é"`},
		// Not UTF-8: each bad byte becomes U+FFFD, valid neighbours stay.
		{"\xff", `"\ufffd"`},
		{"x\xc3", `"x\ufffd"`},                             // truncated sequence at the end
		{"\xc3(é", `"\ufffd(é"`},                           // truncated sequence before ASCII
		{"\xc0\x80", `"\ufffd\ufffd"`},                     // overlong NUL
		{"\xed\xa0\x80", `"\ufffd\ufffd\ufffd"`},           // a UTF-16 surrogate
		{"\xf4\x90\x80\x80", `"\ufffd\ufffd\ufffd\ufffd"`}, // past U+10FFFF
		{"日本\x80語", `"日本\ufffd語"`},
	} {
		got := AppendString(nil, []byte(tc.in))
		if string(got) != tc.want || !utf8.Valid(got) {
			t.Errorf("%q: got %s, want %s", tc.in, got, tc.want)
		}
		if s := string(AppendString(nil, tc.in)); s != tc.want {
			t.Errorf("%q as a string: got %s", tc.in, s)
		}
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Errorf("%q: %s is not JSON: %v", tc.in, got, err)
		}
	}
}

// FuzzAppendString: whatever the bytes, the result is valid UTF-8
// and a JSON string that decodes to the input where the input is valid
// UTF-8.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a", "\xff\xfe", "é\x00\"\\", "\xed\xa0\x80", "\xe6\x97"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		got := AppendString(nil, in)
		if !utf8.Valid(got) {
			t.Fatalf("%q: not UTF-8: %q", in, got)
		}
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("%q: %q is not JSON: %v", in, got, err)
		}
		if utf8.Valid(in) && back != string(in) {
			t.Fatalf("%q: decodes to %q", in, back)
		}
	})
}

func TestAppendParameter(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{true, "true"}, {int64(-3), "-3"}, {uint64(1) << 63, "9223372036854775808"},
		{2.0, "2.0"}, {0.25, "0.25"}, {"a\"b", `"a\"b"`}, {int32(1), "null"},
	} {
		if got := string(AppendParameter(nil, tc.v)); got != tc.want {
			t.Errorf("AppendParameter(%#v) = %s, want %s", tc.v, got, tc.want)
		}
	}
}
