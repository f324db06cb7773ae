// Package jsonw appends JSON values by hand, byte for byte as
// encoding/json writes them, for the encoders that skip reflection: the
// request bodies the providers send and the event payloads the runner
// stores.
package jsonw

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"unicode/utf8"
)

// Each function writes exactly what encoding/json writes for the same
// value, and fails the same way.

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string: '"' and '\\' and control
// characters escaped (\b \f \n \r \t short), invalid UTF-8 replaced by
// \ufffd, U+2028 and U+2029 escaped, and <, > and & escaped when html is
// set (as json.Marshal does) or as is (a json.Encoder with
// SetEscapeHTML(false)); everything else as is.
func AppendString[T string | []byte](dst []byte, s T, html bool) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && (!html || (b != '<' && b != '>' && b != '&')) {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		n := min(len(s)-i, utf8.UTFMax)
		c, size := utf8.DecodeRuneInString(string(s[i : i+n]))
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendFloat appends f as encoding/json writes a float64 (ES6 number
// formatting). NaN and infinities fail with the *json.UnsupportedValueError
// encoding/json returns.
func AppendFloat(dst []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return dst, &json.UnsupportedValueError{Value: reflect.ValueOf(f), Str: strconv.FormatFloat(f, 'g', -1, 64)}
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, nil
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// AppendRaw appends raw compacted, as a json.Encoder with
// SetEscapeHTML(false) writes a json.RawMessage: nil as null, invalid JSON
// failing with the *json.MarshalerError encoding/json returns.
func AppendRaw(dst []byte, raw json.RawMessage) ([]byte, error) {
	if raw == nil {
		return append(dst, "null"...), nil
	}
	b := bytes.NewBuffer(dst)
	if err := json.Compact(b, raw); err != nil {
		return dst, &json.MarshalerError{Type: rawMessageType, Err: err}
	}
	return b.Bytes(), nil
}
