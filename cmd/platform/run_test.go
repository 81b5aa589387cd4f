package main

import (
	"bytes"
	"context"
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
		{name: "IdentityNoSubcommand", args: []string{"identity"}, wantCode: 2, wantStderr: "expected serve"},
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
