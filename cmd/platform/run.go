package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"

	"github.com/platformco/platform/internal/apidocs"
	"github.com/platformco/platform/internal/box/boxcmd"
	"github.com/platformco/platform/internal/cli"
	"github.com/platformco/platform/internal/courier/couriercmd"
	"github.com/platformco/platform/internal/devcmd"
	"github.com/platformco/platform/internal/events/eventscmd"
	"github.com/platformco/platform/internal/gateway/gatewaycmd"
	"github.com/platformco/platform/internal/identity/identitycmd"
	"github.com/platformco/platform/internal/keyholder/keyholdercmd"
	"github.com/platformco/platform/internal/parlor/parlorcmd"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = ""

const usage = `usage: platform <command> [arguments]

commands:
  dev [--data DIR]                      everything in one process on embedded storage
  identity serve|migrate                the identity service and its schema
  identity staff add|remove EMAIL       mark a user as staff, or not
  identity keys list|rotate|withdraw    token-signing keys
  box serve|migrate                     the entitlement service and its schema
  box grant|revoke|list                 operator commands against BOX_URL
  gateway serve                         the edge
  courier serve|migrate                 email, preferences and webhooks, and their schema
  keyholder serve|migrate|publish       the registry-credential exchange
  parlor serve                          the web app
  events publish --service NAME         the outbox publisher loop
  events check                          catalog, manifests and schemas agree
  events tail [--new]                   print the event stream as JSON lines
  probe URL                             GET URL, succeed on 2xx (container health checks)
  version                               print the version
`

// run executes one command line and returns the process exit status:
// 0 on success, 2 for a usage error, 1 otherwise.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	env := cli.Env{Getenv: getenv, Stdout: stdout, Stderr: stderr}
	err := dispatch(ctx, args, env)
	if cli.IsHelp(err) {
		fmt.Fprint(stdout, err.Error())
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "platform:", err)
		if cli.IsUsage(err) {
			fmt.Fprint(stderr, usage)
		}
	}
	return cli.ExitCode(err)
}

func dispatch(ctx context.Context, args []string, env cli.Env) error {
	if len(args) == 0 {
		return cli.Usagef("no command given")
	}
	switch args[0] {
	case "dev":
		return devcmd.Run(ctx, args[1:], env)
	case "identity":
		return identitycmd.Command.Run(ctx, args[1:], env)
	case "box":
		return boxcmd.Command.Run(ctx, args[1:], env)
	case "gateway":
		return gatewaycmd.NewCommand(apidocs.Public()).Run(ctx, args[1:], env)
	case "courier":
		return couriercmd.Command.Run(ctx, args[1:], env)
	case "events":
		return eventscmd.Run(ctx, args[1:], env)
	case "keyholder":
		return keyholdercmd.Command.Run(ctx, args[1:], env)
	case "parlor":
		return parlorcmd.Command.Run(ctx, args[1:], env)
	case "probe":
		return cli.Probe(ctx, args[1:], env)
	case "version":
		fmt.Fprintln(env.Stdout, versionString())
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(env.Stdout, usage)
		return nil
	default:
		return cli.Usagef("unknown command %q", args[0])
	}
}

func versionString() string {
	if version != "" {
		return "platform " + version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return "platform " + info.Main.Version
	}
	return "platform (devel)"
}
