package wps

import (
	"errors"
	"fmt"
	"time"
)

// Code classifies an Error. The HTTP layer maps each code to one status.
type Code string

// Error codes. Every error the service returns to a client carries one.
const (
	CodeBadRequest   Code = "bad_request"  // malformed request
	CodeUnauthorized Code = "unauthorized" // no or bad credential
	CodeForbidden    Code = "forbidden"    // credential valid, action not allowed
	CodeNotFound     Code = "not_found"    // unknown id, or another org's
	CodeConflict     Code = "conflict"     // duplicate or state conflict
	CodeGone         Code = "gone"         // expired, accepted or revoked token
	CodeInvalid      Code = "invalid"      // a value fails validation
	CodeTooLarge     Code = "too_large"    // a body or upload over its limit
	CodeRateLimited  Code = "rate_limited" // too many requests
	CodeUpstream     Code = "upstream"     // an HTTP call the request needed failed (502)
	CodeInternal     Code = "internal"     // anything else; never shown in detail
)

// FieldError names one offending field and why.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
	// format and args made Message: Say words it in a reader's language.
	format string
	args   []any
}

// fieldError is a FieldError whose message Say can word in a reader's
// language.
func fieldError(field, format string, args ...any) FieldError {
	return FieldError{Field: field, Message: fmt.Sprintf(format, args...), format: format, args: args}
}

// Say is the message in the words tr gives its format: tr is a language's
// catalogue of the service's messages (lang.Printer.Format), which returns
// a format it does not know as it is. Messages built without a format
// (a cause's text) are said as they are.
func (f FieldError) Say(tr func(format string) string) string {
	if f.format == "" || tr == nil {
		return f.Message
	}
	return fmt.Sprintf(tr(f.format), f.args...)
}

// Error is the one error type of the domain. Message is safe to show to a
// client; Err (when set) is an internal cause that is logged, never shown.
type Error struct {
	Code    Code
	Message string
	Fields  []FieldError
	Err     error
	// RetryAfter says when to try again (CodeRateLimited).
	RetryAfter time.Duration
	// format and args made Message (Errorf); byFields when Message is the
	// first field's (Invalid, Validator): Say words either.
	format   string
	args     []any
	byFields bool
}

// Say is Message in the words tr gives (see FieldError.Say).
func (e *Error) Say(tr func(format string) string) string {
	switch {
	case tr == nil:
	case e.byFields && len(e.Fields) > 0:
		msg := e.Fields[0].Field + ": " + e.Fields[0].Say(tr)
		if n := len(e.Fields) - 1; n > 0 {
			msg += fmt.Sprintf(tr(" (and %d more)"), n)
		}
		return msg
	case e.format != "":
		return fmt.Sprintf(tr(e.format), e.args...)
	}
	return e.Message
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), format: format, args: args}
}

// Invalid reports one invalid field (422).
func Invalid(field, format string, args ...any) *Error {
	f := fieldError(field, format, args...)
	return &Error{Code: CodeInvalid, Message: field + ": " + f.Message, Fields: []FieldError{f}, byFields: true}
}

// NotFound reports an unknown resource (404).
func NotFound(what string) *Error { return Errorf(CodeNotFound, "%s not found", what) }

// Internal wraps an unexpected cause (500); the cause is logged, not shown.
func Internal(err error) *Error {
	return &Error{Code: CodeInternal, Message: "internal error", Err: err}
}

// ErrorCode returns the code of err, CodeInternal when err is not an *Error.
func ErrorCode(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// IsCode reports whether err is an *Error with the given code.
func IsCode(err error, code Code) bool { return err != nil && ErrorCode(err) == code }

// Validator collects field errors so a request reports all its mistakes at once.
type Validator struct{ fields []FieldError }

// Add records a field error.
func (v *Validator) Add(field, format string, args ...any) {
	v.fields = append(v.fields, fieldError(field, format, args...))
}

// Check records a field error when ok is false.
func (v *Validator) Check(ok bool, field, format string, args ...any) {
	if !ok {
		v.Add(field, format, args...)
	}
}

// Err returns a 422 Error listing every recorded field, or nil.
func (v *Validator) Err() error {
	if len(v.fields) == 0 {
		return nil
	}
	msg := v.fields[0].Field + ": " + v.fields[0].Message
	if len(v.fields) > 1 {
		msg += fmt.Sprintf(" (and %d more)", len(v.fields)-1)
	}
	return &Error{Code: CodeInvalid, Message: msg, Fields: v.fields, byFields: true}
}

// Conflict returns a 409 Error listing every recorded field, or nil: the
// fields are valid, but the state of what they name refuses them.
func (v *Validator) Conflict() error {
	err := v.Err()
	if err != nil {
		err.(*Error).Code = CodeConflict
	}
	return err
}

func asError(err error, target **Error) bool { return errors.As(err, target) }
