// Package errs is the platform's one error type: a machine-readable code, a
// message safe to show the caller, and optional field errors. Each service
// declares its own codes and maps them to HTTP statuses in one table; any
// error that is not an *Error is internal, logged with detail and answered
// generically.
package errs

import (
	"errors"
	"fmt"
	"time"
)

// Error is an expected failure that the caller may see.
type Error struct {
	Code    string
	Message string
	Fields  []FieldError

	// RetryAfter, when positive, tells the caller when to try again
	// (answered as a Retry-After header).
	RetryAfter time.Duration
}

// FieldError names one invalid request field and the rule it broke.
type FieldError struct {
	Field string `json:"field"`
	Code  string `json:"code"`
}

func (e *Error) Error() string {
	if len(e.Fields) == 0 {
		return e.Code + ": " + e.Message
	}
	return fmt.Sprintf("%s: %s %v", e.Code, e.Message, e.Fields)
}

// New returns an error with code and message.
func New(code, message string) *Error { return &Error{Code: code, Message: message} }

// As returns err as an *Error when it is one.
func As(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// Code returns err's code, or "" when err is not an *Error.
func Code(err error) string {
	if e, ok := As(err); ok {
		return e.Code
	}
	return ""
}

// Fields collects field errors during validation.
type Fields []FieldError

// Add records that field broke rule.
func (f *Fields) Add(field, rule string) { *f = append(*f, FieldError{Field: field, Code: rule}) }

// Err returns nil when nothing was recorded, else an error with code and message.
func (f Fields) Err(code, message string) error {
	if len(f) == 0 {
		return nil
	}
	return &Error{Code: code, Message: message, Fields: f}
}
