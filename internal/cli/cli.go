// Package cli holds what every subcommand of the platform binary shares: its
// environment, usage errors (exit status 2), the JSON logger and the
// container probe.
package cli

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"github.com/platformco/platform/internal/observe"
)

// Env is everything a command reads from its process.
type Env struct {
	Getenv func(string) string
	Stdout io.Writer
	Stderr io.Writer
}

// Logger returns the JSON logger of service (observe.NewLogger), writing to
// stderr at LOG_LEVEL. Each service's Config refuses a LOG_LEVEL other than
// debug, info, warn or error before it logs; a command without one logs at
// info when the value does not parse.
func (e Env) Logger(service string) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(e.Getenv("LOG_LEVEL"))); err != nil {
		level = slog.LevelInfo
	}
	return observe.NewLogger(e.Stderr, service, level)
}

// UsageError is a command line that cannot be run as written.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef returns a UsageError.
func Usagef(format string, args ...any) error { return &UsageError{Msg: fmt.Sprintf(format, args...)} }

// IsUsage reports whether err is a usage error.
func IsUsage(err error) bool {
	var u *UsageError
	return errors.As(err, &u)
}

// ExitCode maps a command's error to the process exit status:
// 0 success (help asked for included), 2 usage error, 1 anything else.
func ExitCode(err error) int {
	switch {
	case err == nil, IsHelp(err):
		return 0
	case IsUsage(err):
		return 2
	default:
		return 1
	}
}

// FlagSet returns a flag set that reports problems as usage errors instead
// of exiting.
func FlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// Parse parses args into fs, turning failures into usage errors (their
// usage written where fs writes) and -h or --help into a HelpError.
func Parse(fs *flag.FlagSet, args []string) error {
	out := fs.Output()
	var buf bytes.Buffer
	fs.SetOutput(&buf)
	err := fs.Parse(args)
	fs.SetOutput(out)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return &HelpError{Text: buf.String()}
	case err != nil:
		_, _ = io.Copy(out, &buf)
		return &UsageError{Msg: err.Error()}
	}
	return nil
}

// HelpError is help that was asked for (-h, --help): a success, whose text
// goes to stdout.
type HelpError struct{ Text string }

func (e *HelpError) Error() string { return e.Text }

// IsHelp reports whether err is help that was asked for.
func IsHelp(err error) bool {
	var h *HelpError
	return errors.As(err, &h)
}
