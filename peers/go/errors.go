package echomq

import (
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Error is a refusal by a script: an error reply of the form `EMQ_<CODE> <message>`.
type Error struct {
	Code    string // e.g. EMQ_BAD_ARG, EMQ_VERSION
	Message string // the rest of the reply
}

func (e *Error) Error() string { return e.Code + " " + e.Message }

// FatalError, returned by a handler, sends its job to the morgue at once (no retry).
type FatalError struct{ Err error }

func (e *FatalError) Error() string { return e.Err.Error() }
func (e *FatalError) Unwrap() error { return e.Err }

// Fatal wraps err so the consumer loop buries the job instead of retrying it.
func Fatal(err error) error { return &FatalError{Err: err} }

// ErrorCode returns the EMQ_ code of err ("" when it is not a script refusal).
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// wrapError maps an `EMQ_<CODE> …` error reply to *Error; other errors pass unchanged.
func wrapError(err error) error {
	var re redis.Error
	if !errors.As(err, &re) {
		return err
	}
	msg := re.Error()
	if !strings.HasPrefix(msg, "EMQ_") {
		return err
	}
	code, rest, _ := strings.Cut(msg, " ")
	return &Error{Code: code, Message: rest}
}
