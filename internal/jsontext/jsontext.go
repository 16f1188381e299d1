package jsontext

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// AppendString appends s as a JSON string the way rapidjson's writer
// does: '"', '\\' and control characters escaped, every other byte as it
// is, except that bytes that are not valid UTF-8 become U+FFFD, as in
// encoding/json: rapidjson copies them, which makes the document invalid
// JSON that strict readers (Python's json module among them) refuse. A
// BYTES output that is not text loses such bytes in JSON; binary_data
// keeps them.
func AppendString[S ~string | ~[]byte](b []byte, s S) []byte {
	const hexDigits = "0123456789ABCDEF"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			var buf [utf8.UTFMax]byte
			_, size := utf8.DecodeRune(buf[:copy(buf[:], s[i:])])
			if size == 1 { // invalid: DecodeRune gives RuneError, 1 byte
				b = append(b, s[start:i]...)
				b = append(b, `\ufffd`...)
				start = i + 1
			}
			i += size
			continue
		}
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"':
			b = append(b, '\\', '"')
		case '\\':
			b = append(b, '\\', '\\')
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendDouble appends f as rapidjson's writer prints a double: the
// shortest digits that round-trip, always with a fraction or an exponent
// ("1.0", "0.001", "1e21", "1.5e-7"). NaN and infinities, which JSON
// cannot express and rapidjson refuses to write, are written as NaN,
// Infinity and -Infinity (what Python's json module reads and writes).
func AppendDouble(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, 1):
		return append(b, "Infinity"...)
	case math.IsInf(f, -1):
		return append(b, "-Infinity"...)
	case f == 0:
		if math.Signbit(f) {
			return append(b, "-0.0"...)
		}
		return append(b, "0.0"...)
	}
	if f < 0 {
		b = append(b, '-')
		f = -f
	}
	// Shortest digits d1d2...dn and exponent: f = 0.d1...dn × 10^kk.
	var tmp [32]byte
	e := strconv.AppendFloat(tmp[:0], f, 'e', -1, 64) // d.ddde±XX
	mant, exp := e, 0
	for i, c := range e {
		if c == 'e' {
			mant = e[:i]
			exp, _ = strconv.Atoi(string(e[i+1:]))
			break
		}
	}
	var digits [24]byte
	n := 0
	for _, c := range mant {
		if c != '.' {
			digits[n] = c
			n++
		}
	}
	length := n
	kk := exp + 1 // value = 0.digits × 10^kk
	k := kk - length
	switch {
	case k >= 0 && kk <= 21: // 1234e7 -> 12340000000.0
		b = append(b, digits[:length]...)
		for i := length; i < kk; i++ {
			b = append(b, '0')
		}
		return append(b, '.', '0')
	case kk > 0 && kk <= 21: // 1234e-2 -> 12.34
		b = append(b, digits[:kk]...)
		b = append(b, '.')
		return append(b, digits[kk:length]...)
	case kk > -6 && kk <= 0: // 1234e-6 -> 0.001234
		b = append(b, '0', '.')
		for i := 0; i < -kk; i++ {
			b = append(b, '0')
		}
		return append(b, digits[:length]...)
	case length == 1: // 1e30
		b = append(b, digits[0], 'e')
		return strconv.AppendInt(b, int64(kk-1), 10)
	default: // 1234e30 -> 1.234e33
		b = append(b, digits[0], '.')
		b = append(b, digits[1:length]...)
		b = append(b, 'e')
		return strconv.AppendInt(b, int64(kk-1), 10)
	}
}

// AppendParameter appends v, a value of Triton's parameter kinds (bool,
// int64, uint64, float64, string), as JSON; any other type is written as
// null.
func AppendParameter(b []byte, v any) []byte {
	switch v := v.(type) {
	case bool:
		return strconv.AppendBool(b, v)
	case int64:
		return strconv.AppendInt(b, v, 10)
	case uint64:
		return strconv.AppendUint(b, v, 10)
	case float64:
		return AppendDouble(b, v)
	case string:
		return AppendString(b, v)
	}
	return append(b, "null"...)
}
