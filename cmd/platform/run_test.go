package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunExitCodes(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		env        map[string]string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{name: "Version", args: []string{"version"}, wantCode: 0, wantStdout: "platform "},
		{name: "HelpLong", args: []string{"--help"}, wantCode: 0, wantStdout: "usage: platform"},
		{name: "HelpShort", args: []string{"-h"}, wantCode: 0, wantStdout: "usage: platform"},
		{name: "HelpWord", args: []string{"help"}, wantCode: 0, wantStdout: "usage: platform"},
		{name: "SubcommandHelp", args: []string{"events", "check", "--help"}, wantCode: 0, wantStdout: "-dir"},
		{name: "DevHelp", args: []string{"dev", "-h"}, wantCode: 0, wantStdout: "-listen"},
		{name: "BadIssuer", args: []string{"identity", "serve"}, env: map[string]string{"IDENTITY_ISSUER": "not-a-url"},
			wantCode: 1, wantStderr: "IDENTITY_ISSUER: must be an absolute http(s) URL"},
		{name: "BadLogLevel", args: []string{"box", "serve"}, env: map[string]string{"LOG_LEVEL": "loud"},
			wantCode: 1, wantStderr: "LOG_LEVEL: must be one of debug, info, warn, error"},
		{name: "BadMasterKeyWithoutDatabase", args: []string{"identity", "serve"}, env: map[string]string{"IDENTITY_MASTER_KEY": "c2hvcnQ="},
			wantCode: 1, wantStderr: "IDENTITY_MASTER_KEY: must be the base64 encoding of exactly 32 bytes"},
		{name: "NoCommand", args: nil, wantCode: 2, wantStderr: "no command given"},
		{name: "UnknownCommand", args: []string{"frobnicate"}, wantCode: 2, wantStderr: `unknown command "frobnicate"`},
		{name: "OpenAPINoDir", args: []string{"openapi"}, wantCode: 2, wantStderr: "openapi: expected DIR"},
		{name: "IdentityNoSubcommand", args: []string{"identity"}, wantCode: 2, wantStderr: "identity: no subcommand given"},
		{name: "StaffMissingEmail", args: []string{"identity", "staff", "add"}, wantCode: 2, wantStderr: "expected add EMAIL"},
		{name: "KeysWithdrawNoKID", args: []string{"identity", "keys", "withdraw"}, wantCode: 2, wantStderr: "withdraw KID"},
		{name: "BadLockoutThreshold", args: []string{"identity", "serve"}, env: map[string]string{"IDENTITY_LOCKOUT_THRESHOLD": "zero"},
			wantCode: 1, wantStderr: "IDENTITY_LOCKOUT_THRESHOLD: must be a positive whole number"},
		{name: "PublicDebugAddr", args: []string{"identity", "serve"}, env: map[string]string{"DEBUG_ADDR": "0.0.0.0:6060"},
			wantCode: 1, wantStderr: "DEBUG_ADDR: must be a loopback host:port"},
		{name: "BadSessionTTL", args: []string{"identity", "serve"}, env: map[string]string{"IDENTITY_SESSION_TTL": "forever"},
			wantCode: 1, wantStderr: "IDENTITY_SESSION_TTL"},
		{name: "BadDatabaseURL", args: []string{"identity", "serve"}, env: map[string]string{"DATABASE_URL": "mysql://x", "IDENTITY_MASTER_KEY": strings.Repeat("A", 43) + "="},
			wantCode: 1, wantStderr: "DATABASE_URL: must be a postgres://"},
		{name: "MasterKeyRequired", args: []string{"identity", "serve"}, env: map[string]string{"DATABASE_URL": "sqlite:x.db"},
			wantCode: 1, wantStderr: "IDENTITY_MASTER_KEY: is required"},
		{name: "MasterKeyWrongLength", args: []string{"identity", "serve"}, env: map[string]string{"DATABASE_URL": "sqlite:x.db", "IDENTITY_MASTER_KEY": "c2hvcnQ="},
			wantCode: 1, wantStderr: "IDENTITY_MASTER_KEY: must be the base64 encoding of exactly 32 bytes"},
		{name: "MigrateNeedsDatabase", args: []string{"identity", "migrate"}, wantCode: 1, wantStderr: "DATABASE_URL: is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			getenv := func(k string) string { return tt.env[k] }
			code := run(context.Background(), tt.args, getenv, &stdout, &stderr)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.wantCode, stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.wantStdout) {
				t.Errorf("stdout %q does not contain %q", stdout.String(), tt.wantStdout)
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("stderr %q does not contain %q", stderr.String(), tt.wantStderr)
			}
			if strings.Contains(stderr.String(), strings.Repeat("A", 43)) {
				t.Errorf("stderr echoes the master key")
			}
		})
	}
}

// TestEveryServiceCommandAnswersAlike runs every service's command as a
// new user would and expects one answer from all of them: a bad LOG_LEVEL
// stops it (exit 1) naming the variable, help exits 0 with the service's
// usage, and an argument after serve is refused (exit 2).
func TestEveryServiceCommandAnswersAlike(t *testing.T) {
	for _, svc := range []string{"identity", "box", "gateway", "courier", "keyholder", "pantry", "parlor", "billing", "darkroom", "muse"} {
		for _, tt := range []struct {
			name       string
			args       []string
			env        map[string]string
			wantCode   int
			wantStdout string
			wantStderr string
		}{
			{name: "BadLogLevel", args: []string{svc, "serve"}, env: map[string]string{"LOG_LEVEL": "bogus"},
				wantCode: 1, wantStderr: `platform: LOG_LEVEL: must be one of debug, info, warn, error, got "bogus"` + "\n"},
			{name: "Help", args: []string{svc, "help"}, wantCode: 0, wantStdout: "usage: platform " + svc + " <command>\n"},
			{name: "HelpFlag", args: []string{svc, "--help"}, wantCode: 0, wantStdout: "usage: platform " + svc + " <command>\n"},
			{name: "ServeHelp", args: []string{svc, "serve", "-h"}, wantCode: 0, wantStdout: "usage: platform " + svc + " <command>\n"},
			{name: "ExtraArgument", args: []string{svc, "serve", "extra"}, wantCode: 2,
				wantStderr: "platform: " + svc + ` serve: unexpected argument "extra"` + "\n"},
			{name: "UnknownSubcommand", args: []string{svc, "bake"}, wantCode: 2,
				wantStderr: "platform: " + svc + `: unknown subcommand "bake"`},
			{name: "NoSubcommand", args: []string{svc}, wantCode: 2, wantStderr: "platform: " + svc + ": no subcommand given"},
		} {
			t.Run(svc+"/"+tt.name, func(t *testing.T) {
				var stdout, stderr bytes.Buffer
				code := run(context.Background(), tt.args, func(k string) string { return tt.env[k] }, &stdout, &stderr)
				if code != tt.wantCode {
					t.Errorf("exit %d, want %d (stderr %q)", code, tt.wantCode, stderr.String())
				}
				if !strings.HasPrefix(stdout.String(), tt.wantStdout) {
					t.Errorf("stdout %q, want it to start %q", stdout.String(), tt.wantStdout)
				}
				if !strings.HasPrefix(stderr.String(), tt.wantStderr) {
					t.Errorf("stderr %q, want it to start %q", stderr.String(), tt.wantStderr)
				}
			})
		}
	}
}

// TestOpenAPIWritesEveryServedDocument: `platform openapi DIR` writes
// each service's document and the gateway's merge, each one JSON, for
// the linter .ci/run runs on them.
func TestOpenAPIWritesEveryServedDocument(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "docs")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"openapi", dir}, func(string) string { return "" }, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d (stderr %q)", code, stderr.String())
	}
	names := []string{"billing", "box", "courier", "darkroom", "gateway", "identity", "keyholder", "muse", "pantry"}
	for _, name := range names {
		raw, err := os.ReadFile(filepath.Join(dir, name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			OpenAPI string         `json:"openapi"`
			Paths   map[string]any `json:"paths"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatalf("%s.json: %v", name, err)
		}
		if doc.OpenAPI == "" || len(doc.Paths) == 0 {
			t.Errorf("%s.json: openapi %q with %d paths", name, doc.OpenAPI, len(doc.Paths))
		}
	}
	if got := strings.Count(stdout.String(), "\n"); got != len(names) {
		t.Errorf("stdout names %d files, want %d:\n%s", got, len(names), stdout.String())
	}
}
