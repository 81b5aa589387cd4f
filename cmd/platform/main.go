// Command platform is the platform's one binary: every service, its
// migrations, its operator commands and the quick start.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/platformco/platform/internal/gctune"
	"github.com/platformco/platform/internal/logsink"
)

// logDelay is how long a log line may wait to be written with the lines
// after it: long enough to gather a busy service's request lines into one
// write, too short for anyone reading the log to notice.
const logDelay = 5 * time.Millisecond

func main() {
	// The collector's settings and the batching of stderr belong to the
	// process, not to run, which tests call in-process.
	gctune.Apply(os.Getenv)
	stderr := logsink.New(os.Stderr, logDelay)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, stderr)
	stop()
	stderr.Close()
	os.Exit(code)
}
