package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"

	"github.com/platformco/platform/internal/apidocs"
	"github.com/platformco/platform/internal/billing/billingcmd"
	"github.com/platformco/platform/internal/box/boxcmd"
	"github.com/platformco/platform/internal/cli"
	"github.com/platformco/platform/internal/courier/couriercmd"
	"github.com/platformco/platform/internal/darkroom/darkroomcmd"
	"github.com/platformco/platform/internal/devcmd"
	"github.com/platformco/platform/internal/events/eventscmd"
	"github.com/platformco/platform/internal/gateway/gatewaycmd"
	"github.com/platformco/platform/internal/identity/identitycmd"
	"github.com/platformco/platform/internal/keyholder/keyholdercmd"
	"github.com/platformco/platform/internal/licensecmd"
	"github.com/platformco/platform/internal/muse/musecmd"
	"github.com/platformco/platform/internal/pantry/pantrycmd"
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
  billing serve|migrate|plans seed      plans, checkout, processor webhooks; its schema
  courier serve|migrate                 email, preferences and webhooks, and their schema
  keyholder serve|migrate|publish       the registry-credential exchange
  license verify FILE --keys URL|FILE   check a licence file offline [--fingerprint F] [--version V]
  pantry serve|migrate                  the project registry
  darkroom serve|migrate                media: uploads, variants, object storage
  muse serve|migrate                    the OpenAI-compatible model endpoint and its schema
  parlor serve                          the web app
  events publish --service NAME         the outbox publisher loop
  events check                          catalog, manifests and schemas agree
  events tail [--new]                   print the event stream as JSON lines
  openapi DIR                           write every served OpenAPI document to DIR/<service>.json
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
	case "billing":
		return billingcmd.Command.Run(ctx, args[1:], env)
	case "courier":
		return couriercmd.Command.Run(ctx, args[1:], env)
	case "events":
		return eventscmd.Run(ctx, args[1:], env)
	case "keyholder":
		return keyholdercmd.Command.Run(ctx, args[1:], env)
	case "license":
		return licensecmd.Run(ctx, args[1:], env)
	case "darkroom":
		return darkroomcmd.Command.Run(ctx, args[1:], env)
	case "pantry":
		return pantrycmd.Command.Run(ctx, args[1:], env)
	case "parlor":
		return parlorcmd.Command.Run(ctx, args[1:], env)
	case "muse":
		return musecmd.Command.Run(ctx, args[1:], env)
	case "openapi":
		return writeOpenAPI(args[1:], env)
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

// writeOpenAPI writes every document the platform serves at /openapi.json
// (apidocs.Served: each service's and the gateway's merge) into one
// directory as <service>.json, for linters and renderers.
func writeOpenAPI(args []string, env cli.Env) error {
	if len(args) != 1 || args[0] == "" {
		return cli.Usagef("openapi: expected DIR")
	}
	docs, err := apidocs.Served()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(args[0], 0o755); err != nil {
		return err
	}
	names := make([]string, 0, len(docs))
	for name := range docs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		path := filepath.Join(args[0], name+".json")
		if err := os.WriteFile(path, docs[name], 0o644); err != nil {
			return err
		}
		fmt.Fprintln(env.Stdout, path)
	}
	return nil
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
