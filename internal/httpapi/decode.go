package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"wps/internal/jsonscan"
)

// Decoding request bodies. huma decodes each JSON body twice: into an any,
// which it validates against the schema, then into the operation's type.
// unmarshalJSON is both decoders; what it refuses, huma reports as a
// problem, and humaError turns "<field>: <one of bodyMessages>" into 422
// naming the field.

// textMessage is the problem of text the store could not hold.
const textMessage = "must be valid UTF-8 without the NUL character (U+0000)"

// rangeMessage is the problem of a number its field's type cannot hold.
const rangeMessage = "number out of range"

var bodyMessages = []string{textMessage, rangeMessage}

// unmarshalJSON decodes a body, refusing what the store could not hold
// alike on both engines (PostgreSQL's text holds neither invalid UTF-8 nor
// the NUL character; SQLite would):
//   - invalid UTF-8 is a malformed body (400);
//   - a string holding NUL, or a lone UTF-16 surrogate escape (\ud800,
//     which encoding/json would silently read as U+FFFD), is an invalid
//     field;
//   - a number past a double (1e400), or past the Go integer a field is
//     decoded into, is an invalid field, not a malformed body.
func unmarshalJSON(data []byte, v any) error {
	if !utf8.Valid(data) {
		return errors.New("the body must be valid UTF-8")
	}
	if err := json.Unmarshal(data, v); err != nil {
		return numberError(data, err)
	}
	if _, ok := v.(*any); ok {
		if path, found := badTextAt(data); found {
			return fmt.Errorf("%s: %s", path, textMessage)
		}
	}
	return nil
}

// badTextAt names the first string or key of a valid JSON document that
// holds NUL or a lone surrogate (a.b[0].c; [1].c in an array). In JSON a
// NUL can only be written as \u0000 and a surrogate only as an escape, so
// most documents are not walked.
func badTextAt(data []byte) (string, bool) {
	marked, lone := jsonscan.MarkLoneSurrogates(data)
	if !lone && !bytes.Contains(data, []byte(`\u0000`)) {
		return "", false
	}
	var doc any
	if json.Unmarshal(marked, &doc) != nil {
		return "", false
	}
	return nulAt(doc)
}

// firstAt walks a decoded document (keys as strings, before their values)
// and returns the path of the first value found reports (a.b[0].c, as the
// service names fields).
func firstAt(v any, path string, found func(v any, path string) bool) (string, bool) {
	if found(v, path) {
		return path, true
	}
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if kp := joinField(path, k); found(k, kp) {
				return kp, true
			} else if p, ok := firstAt(e, kp, found); ok {
				return p, true
			}
		}
	case []any:
		for i, e := range v {
			if p, ok := firstAt(e, path+"["+strconv.Itoa(i)+"]", found); ok {
				return p, true
			}
		}
	}
	return "", false
}

// nulAt finds a string or key holding the NUL character.
func nulAt(doc any) (string, bool) {
	path, found := firstAt(doc, "", func(v any, _ string) bool {
		s, ok := v.(string)
		return ok && strings.ContainsRune(s, 0)
	})
	return strings.ReplaceAll(path, "\x00", `\u0000`), found
}

// numberError turns encoding/json's error for a number its Go type cannot
// hold into one naming the field: the path of the number with that literal
// (and, decoding into a struct, the dotted Go path encoding/json gives).
func numberError(data []byte, err error) error {
	var te *json.UnmarshalTypeError
	lit, ok := "", errors.As(err, &te)
	if ok {
		lit, ok = strings.CutPrefix(te.Value, "number ")
	}
	if !ok {
		return err
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var doc any
	if d.Decode(&doc) != nil {
		return err
	}
	if path, found := numberAt(doc, lit, te.Field); found {
		return fmt.Errorf("%s: %s", path, rangeMessage)
	}
	return err
}

// numberAt finds the number lit in a document decoded with UseNumber; when
// goPath is set, only where the path without its indexes is goPath.
func numberAt(doc any, lit, goPath string) (string, bool) {
	return firstAt(doc, "", func(v any, path string) bool {
		n, ok := v.(json.Number)
		return ok && string(n) == lit && (goPath == "" || withoutIndexes(path) == goPath)
	})
}

// withoutIndexes turns a.b[0].c into a.b.c, as encoding/json names fields.
func withoutIndexes(path string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(path, '[')
		if i < 0 {
			return b.String() + path
		}
		b.WriteString(path[:i])
		j := strings.IndexByte(path[i:], ']')
		if j < 0 {
			return b.String() + path[i:]
		}
		path = path[i+j+1:]
	}
}
