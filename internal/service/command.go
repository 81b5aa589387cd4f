package service

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"

	"github.com/platformco/platform/internal/cli"
	"github.com/platformco/platform/internal/config"
	"github.com/platformco/platform/internal/sqldb"
)

// Command is `platform NAME …` for one service: serve, migrate (when the
// service has a schema), help, and the service's own commands. Every
// service answers the same way: help exits 0, an unknown subcommand or an
// extra argument is a usage error (exit 2), a bad variable stops it with
// one line naming the variable (exit 1), and a port it cannot listen on is
// reported in one wording.
type Command[C any, P interface {
	*C
	Config
}] struct {
	// Name is the service's name, its first word on the command line.
	Name string
	// Summary says what serve runs, such as "the entitlement service".
	Summary string
	// DefaultPort is PORT when unset.
	DefaultPort int
	// Serve runs the service on ln until ctx is done.
	Serve func(ctx context.Context, cfg C, logger *slog.Logger, ln net.Listener) error
	// Migrate applies the service's migrations and returns how many; nil
	// for a service without a database.
	Migrate func(ctx context.Context, databaseURL string) (int, error)
	// Commands are the service's own subcommands, each given the
	// arguments after its name; Usage describes them, one indented line
	// or more each.
	Commands map[string]func(ctx context.Context, args []string, env cli.Env) error
	Usage    string
	// Process, when set, runs before Serve when the service runs as its
	// own process (never under platform dev or a test of Serve): settings
	// that are the process's, such as a library's global logger.
	Process func(cfg *C, logger *slog.Logger)
}

// Help is the command's usage text.
func (c Command[C, P]) Help() string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: platform %s <command>\n\n", c.Name)
	fmt.Fprintf(&b, "  serve      run %s (PORT, default %d)\n", c.Summary, c.DefaultPort)
	if c.Migrate != nil {
		fmt.Fprintf(&b, "  migrate    apply %s's schema migrations to DATABASE_URL\n", c.Name)
	}
	if c.Usage != "" {
		b.WriteString(strings.TrimRight(c.Usage, "\n") + "\n")
	}
	b.WriteString("  help       print this help\n")
	return b.String()
}

// Run runs `platform NAME args…`.
func (c Command[C, P]) Run(ctx context.Context, args []string, env cli.Env) error {
	if len(args) == 0 {
		return cli.Usagef("%s: no subcommand given (`platform %s help` lists them)", c.Name, c.Name)
	}
	sub, rest := args[0], args[1:]
	switch {
	case isHelp(sub):
		fmt.Fprint(env.Stdout, c.Help())
		return nil
	case sub == "serve":
		if err := c.noArguments(sub, rest, env); err != nil || len(rest) > 0 {
			return err
		}
		return c.serve(ctx, env)
	case sub == "migrate" && c.Migrate != nil:
		if err := c.noArguments(sub, rest, env); err != nil || len(rest) > 0 {
			return err
		}
		return c.migrate(ctx, env)
	}
	if run, ok := c.Commands[sub]; ok {
		return run(ctx, rest, env)
	}
	return cli.Usagef("%s: unknown subcommand %q (`platform %s help` lists them)", c.Name, sub, c.Name)
}

func isHelp(arg string) bool { return arg == "help" || arg == "-h" || arg == "--help" }

// noArguments refuses arguments after serve or migrate; help asked for
// there prints the help.
func (c Command[C, P]) noArguments(sub string, rest []string, env cli.Env) error {
	switch {
	case len(rest) == 0:
		return nil
	case len(rest) == 1 && isHelp(rest[0]):
		fmt.Fprint(env.Stdout, c.Help())
		return nil
	}
	return cli.Usagef("%s %s: unexpected argument %q", c.Name, sub, rest[0])
}

// Load reads cfg as serve does: Load, with PORT defaulting to
// DefaultPort.
func (c Command[C, P]) Load(ctx context.Context, getenv func(string) string, cfg *C) error {
	return Load(ctx, c.withDefaultPort(getenv), P(cfg))
}

func (c Command[C, P]) serve(ctx context.Context, env cli.Env) error {
	var cfg C
	if err := c.Load(ctx, env.Getenv, &cfg); err != nil {
		return err
	}
	port := P(&cfg).base().Port
	ln, err := net.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		return ListenError(port, err)
	}
	logger := env.Logger(c.Name)
	if c.Process != nil {
		c.Process(&cfg, logger)
	}
	return c.Serve(ctx, cfg, logger, ln)
}

// ListenError is the one wording of a port a service cannot listen on.
func ListenError(port int, err error) error {
	return fmt.Errorf("PORT: cannot listen on %d: %w", port, err)
}

func (c Command[C, P]) withDefaultPort(getenv func(string) string) func(string) string {
	return func(k string) string {
		v := getenv(k)
		if k == "PORT" && strings.TrimSpace(v) == "" {
			return strconv.Itoa(c.DefaultPort)
		}
		return v
	}
}

func (c Command[C, P]) migrate(ctx context.Context, env cli.Env) error {
	var cfg struct {
		DatabaseURL string `env:"DATABASE_URL, required"`
	}
	if err := config.Load(ctx, env.Getenv, &cfg); err != nil {
		return err
	}
	if _, _, err := sqldb.ParseURL(cfg.DatabaseURL); err != nil {
		return fmt.Errorf("DATABASE_URL: %v", err)
	}
	n, err := c.Migrate(ctx, cfg.DatabaseURL)
	if err != nil {
		return fmt.Errorf("%s migrate: %w", c.Name, err)
	}
	fmt.Fprintf(env.Stdout, "%s: %d migration(s) applied; schema is current\n", c.Name, n)
	return nil
}

// Migrate opens databaseURL, applies each schema in order (the service's
// own, then a library's such as the event consumer's) and returns how
// many migrations it applied.
func Migrate(ctx context.Context, databaseURL string, schemas ...func(context.Context, *sqldb.DB) (int, error)) (int, error) {
	db, err := sqldb.Open(ctx, databaseURL)
	if err != nil {
		return 0, fmt.Errorf("DATABASE_URL: %w", err)
	}
	defer db.Close()
	total := 0
	for _, apply := range schemas {
		n, err := apply(ctx, db)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// Schema is the migration step of migrations for Migrate.
func Schema(migrations sqldb.Migrations) func(context.Context, *sqldb.DB) (int, error) {
	return func(ctx context.Context, db *sqldb.DB) (int, error) { return db.Migrate(ctx, migrations) }
}
