// Package eventscmd is `platform events`: the outbox publisher loop, the
// contract check and a tail of the stream (operations.md sections 1 and 6).
package eventscmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/platformco/platform/internal/billing"
	billingsql "github.com/platformco/platform/internal/billing/sqlstore"
	"github.com/platformco/platform/internal/cli"
	"github.com/platformco/platform/internal/config"
	"github.com/platformco/platform/internal/courier"
	couriersql "github.com/platformco/platform/internal/courier/sqlstore"
	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/sqlstore"
	"github.com/platformco/platform/internal/muse"
	musesql "github.com/platformco/platform/internal/muse/sqlstore"
	"github.com/platformco/platform/internal/observe"
	"github.com/platformco/platform/internal/outbox"
	"github.com/platformco/platform/internal/pantry"
	pantrysql "github.com/platformco/platform/internal/pantry/sqlstore"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/schemas"
)

const usage = `usage: platform events <command>

commands:
  publish --service NAME   run the outbox publisher for NAME's DATABASE_URL to EVENTS_URL
  check [--dir DIR]        check catalog, publishers' manifests and payload schemas agree
                           (the schemas built into the binary, or those under DIR)
  tail [--new]             print every envelope in the stream (only new ones with --new) as JSON lines
`

// Manifests lists the declared events of every publisher built in this
// repository. A new publishing service adds its manifest here.
func Manifests() []events.Manifest {
	return []events.Manifest{
		{Service: "identity", Types: identity.EventTypes()},
		{Service: "courier", Types: courier.EventTypes()},
		{Service: "pantry", Types: pantry.EventTypes()},
		{Service: "billing", Types: billing.EventTypes()},
		{Service: "muse", Types: muse.EventTypes()},
	}
}

// publishers maps each publishing service to its schema history, so the
// publisher can refuse a database whose outbox is not there yet.
func publishers() map[string]sqldb.Migrations {
	return map[string]sqldb.Migrations{
		"identity": sqlstore.Migrations,
		"courier":  couriersql.Migrations,
		"pantry":   pantrysql.Migrations,
		"billing":  billingsql.Migrations,
		"muse":     musesql.Migrations,
	}
}

// Run runs one `platform events` subcommand.
func Run(ctx context.Context, args []string, env cli.Env) error {
	if len(args) == 0 {
		fmt.Fprint(env.Stderr, usage)
		return cli.Usagef("events: no subcommand given")
	}
	switch args[0] {
	case "publish":
		return runPublish(ctx, args[1:], env)
	case "check":
		return runCheck(args[1:], env)
	case "tail":
		return runTail(ctx, args[1:], env)
	case "help", "-h", "--help":
		fmt.Fprint(env.Stdout, usage)
		return nil
	default:
		fmt.Fprint(env.Stderr, usage)
		return cli.Usagef("events: unknown subcommand %q", args[0])
	}
}

// PublishConfig is what the standalone publisher reads (config.Load).
type PublishConfig struct {
	// DatabaseURL is the publishing service's database; required.
	DatabaseURL string `env:"DATABASE_URL"`
	// Telemetry is DEBUG_ADDR, METRICS_ADDR and OTEL_EXPORTER_OTLP_ENDPOINT.
	observe.Telemetry
	// EventsURL is the NATS server to publish to, such as
	// nats://127.0.0.1:4222; required.
	EventsURL string     `env:"EVENTS_URL"`
	LogLevel  slog.Level `env:"LOG_LEVEL, default=info" rule:"oneof=debug info warn error"`
}

// Validate implements config.Validator, in the order an operator fixes
// things: the database first.
func (c *PublishConfig) Validate() error {
	if c.DatabaseURL == "" {
		return errors.New("DATABASE_URL: is required (the publishing service's database)")
	}
	if _, _, err := sqldb.ParseURL(c.DatabaseURL); err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	if c.EventsURL == "" {
		return errors.New("EVENTS_URL: is required (the NATS server to publish to, such as nats://127.0.0.1:4222)")
	}
	if err := events.ValidateURL(c.EventsURL); err != nil {
		return fmt.Errorf("EVENTS_URL: %w", err)
	}
	return nil
}

func runPublish(ctx context.Context, args []string, env cli.Env) error {
	fs := cli.FlagSet("platform events publish", env.Stderr)
	service := fs.String("service", "", "the publishing service whose DATABASE_URL holds the outbox")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	known := publishers()
	names := make([]string, 0, len(known))
	for n := range known {
		names = append(names, n)
	}
	sort.Strings(names)
	migrations, ok := known[*service]
	if !ok {
		return cli.Usagef("events publish: --service must be one of %s", strings.Join(names, ", "))
	}
	if fs.NArg() > 0 {
		return cli.Usagef("events publish: unexpected argument %q", fs.Arg(0))
	}
	var cfg PublishConfig
	if err := config.Load(ctx, env.Getenv, &cfg); err != nil {
		return err
	}
	logger := env.Logger("events-publisher").With("publisher", *service)
	db, err := sqldb.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	defer db.Close()
	metrics, tracing, stopTelemetry, err := cfg.Telemetry.Start(ctx, "events-publisher", logger)
	if err != nil {
		return err
	}
	defer stopTelemetry()
	metrics.Database(db.DB, *service)
	metrics.Outbox(db, logger)
	observe.Statements(db, metrics, tracing)
	if err := sqldb.NewGate(db, migrations, "platform "+*service+" migrate").Check(ctx); err != nil {
		return fmt.Errorf("DATABASE_URL: %w", err)
	}
	stop, err := outbox.Start(ctx, db, cfg.EventsURL, outbox.Options{Service: *service, Counted: metrics.OutboxPublished()}, logger)
	if err != nil {
		return err
	}
	<-ctx.Done()
	stop()
	return nil
}

func runCheck(args []string, env cli.Env) error {
	flags := cli.FlagSet("platform events check", env.Stderr)
	dir := flags.String("dir", "", "the schemas directory, or a directory inside the repository (default: the schemas built into the binary)")
	if err := cli.Parse(flags, args); err != nil {
		return err
	}
	if flags.NArg() > 0 {
		return cli.Usagef("events check: unexpected argument %q", flags.Arg(0))
	}
	var (
		fsys = schemas.Events()
		root = "the schemas built into this binary"
	)
	if *dir != "" {
		located, err := events.LocateSchemas(*dir)
		if err != nil {
			return err
		}
		fsys, root = os.DirFS(located), located
	}
	found := events.Check(fsys, Manifests())
	for _, d := range found {
		fmt.Fprintln(env.Stderr, "events check:", d)
	}
	if len(found) > 0 {
		return fmt.Errorf("events check: %d disagreement(s) between %s, the publishers' manifests and the payload schemas", len(found), events.CatalogFile)
	}
	declared := 0
	for _, m := range Manifests() {
		declared += len(m.Types)
	}
	fmt.Fprintf(env.Stdout, "events check: ok: %d declared types agree with %s and their schemas\n", declared, root)
	return nil
}

func runTail(ctx context.Context, args []string, env cli.Env) error {
	fs := cli.FlagSet("platform events tail", env.Stderr)
	newOnly := fs.Bool("new", false, "print only events published from now on")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return cli.Usagef("events tail: unexpected argument %q", fs.Arg(0))
	}
	var cfg struct {
		// EventsURL is the NATS server to read, such as nats://127.0.0.1:4222.
		EventsURL string `env:"EVENTS_URL, required"`
	}
	if err := config.Load(ctx, env.Getenv, &cfg); err != nil {
		return err
	}
	logger := env.Logger("events-tail")
	nc, err := events.Connect(cfg.EventsURL, "platform-events-tail", logger)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	return Tail(ctx, js, events.Stream{}, *newOnly, env.Stdout, logger)
}

// Tail writes each envelope delivered from the stream to w as one JSON
// line, each id once however often the stream holds it, until ctx is done.
// It reads from the start of the stream, or only what arrives from now on
// when newOnly. A message that is not a valid envelope is reported on the
// log and skipped. The stream is created if it does not exist yet.
func Tail(ctx context.Context, js jetstream.JetStream, s events.Stream, newOnly bool, w io.Writer, logger *slog.Logger) error {
	s = s.WithDefaults()
	str, err := events.EnsureStream(ctx, js, s)
	if err != nil {
		return nonCanceled(ctx, err)
	}
	policy := jetstream.DeliverAllPolicy
	if newOnly {
		policy = jetstream.DeliverNewPolicy
	}
	cons, err := str.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{s.Wildcard()},
		DeliverPolicy:  policy,
	})
	if err != nil {
		return nonCanceled(ctx, err)
	}
	it, err := cons.Messages()
	if err != nil {
		return nonCanceled(ctx, err)
	}
	defer it.Stop()
	seen := map[string]struct{}{}
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			return nonCanceled(ctx, err)
		}
		e, err := events.Decode(msg.Data())
		if err != nil {
			logger.WarnContext(ctx, "events tail: skipped a message that is not a valid envelope", "subject", msg.Subject(), "err", err.Error())
			continue
		}
		if _, dup := seen[e.ID]; dup {
			continue
		}
		seen[e.ID] = struct{}{}
		line, err := e.MarshalJSON()
		if err != nil {
			return err
		}
		if _, err := w.Write(slices.Concat(line, []byte("\n"))); err != nil {
			return err
		}
	}
}

// nonCanceled turns the error of an interrupted tail into a clean stop.
func nonCanceled(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}
