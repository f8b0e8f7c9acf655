// Package jsonscan reads JSON text below encoding/json: what a decoder
// hides, such as a lone UTF-16 surrogate escape it reads as U+FFFD.
package jsonscan

import (
	"bytes"
	"strconv"
	"unicode/utf16"
)

// MarkLoneSurrogates rewrites each \uXXXX escape of a lone UTF-16
// surrogate in a valid JSON document as \u0000 (the same length), so that
// a walk for NUL finds its field. It copies data only when there is one.
func MarkLoneSurrogates(data []byte) ([]byte, bool) {
	if !bytes.Contains(data, []byte(`\u`)) {
		return data, false
	}
	out, found := data, false
	hex4 := func(i int) rune {
		if i+6 > len(data) || data[i] != '\\' || data[i+1] != 'u' {
			return -1
		}
		n, err := strconv.ParseUint(string(data[i+2:i+6]), 16, 16)
		if err != nil {
			return -1
		}
		return rune(n)
	}
	inString := false
	for i := 0; i < len(data); i++ {
		switch c := data[i]; {
		case !inString:
			inString = c == '"'
		case c == '"':
			inString = false
		case c == '\\':
			r := hex4(i)
			if r < 0 {
				i++ // a one-character escape
				continue
			}
			if utf16.IsSurrogate(r) {
				if lo := hex4(i + 6); r < 0xDC00 && lo >= 0xDC00 && lo < 0xE000 {
					i += 6 // a pair
				} else {
					if !found {
						out, found = bytes.Clone(data), true
					}
					copy(out[i+2:i+6], "0000")
				}
			}
			i += 5
		}
	}
	return out, found
}
