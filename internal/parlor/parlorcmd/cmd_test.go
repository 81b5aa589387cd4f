package parlorcmd

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/cli"
	"github.com/platformco/platform/internal/observe"
	"github.com/platformco/platform/internal/service"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// base is what Base holds with only PORT set.
func base(port int) service.Base {
	return service.Base{Port: port, DatabaseTimeout: 5 * time.Second, Telemetry: observe.Telemetry{SpanQueue: 8192}}
}

func TestConfig(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    Config
		wantErr string
	}{
		{"Defaults", map[string]string{"PARLOR_API_URL": "http://127.0.0.1:8080/"},
			Config{Base: base(3000), APIURL: "http://127.0.0.1:8080", APITimeout: 5 * time.Second}, ""},
		{"Everything", map[string]string{"PARLOR_API_URL": "https://api.example.com", "PORT": "8085", "PARLOR_API_TIMEOUT": "2s"},
			Config{Base: base(8085), APIURL: "https://api.example.com", APITimeout: 2 * time.Second}, ""},
		{"BlankPortIsDefault", map[string]string{"PARLOR_API_URL": "http://gw", "PORT": "  "},
			Config{Base: base(3000), APIURL: "http://gw", APITimeout: 5 * time.Second}, ""},
		{"ErrAPIURLMissing", map[string]string{}, Config{}, "PARLOR_API_URL: is required"},
		{"ErrAPIURLNotHTTP", map[string]string{"PARLOR_API_URL": "ftp://gw"}, Config{}, "PARLOR_API_URL: must be an absolute http(s) URL"},
		{"ErrAPIURLRelative", map[string]string{"PARLOR_API_URL": "gateway:8080"}, Config{}, "PARLOR_API_URL: must be an absolute http(s) URL"},
		{"ErrPortNotNumber", map[string]string{"PARLOR_API_URL": "http://gw", "PORT": "eighty"}, Config{}, "PORT: must be a port number"},
		{"ErrPortTooLarge", map[string]string{"PARLOR_API_URL": "http://gw", "PORT": "70000"}, Config{}, "PORT: must be a port number"},
		{"ErrTimeoutNotDuration", map[string]string{"PARLOR_API_URL": "http://gw", "PARLOR_API_TIMEOUT": "5"}, Config{}, "PARLOR_API_TIMEOUT: must be a positive Go duration"},
		{"ErrTimeoutNegative", map[string]string{"PARLOR_API_URL": "http://gw", "PARLOR_API_TIMEOUT": "-1s"}, Config{}, "PARLOR_API_TIMEOUT: must be a positive Go duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Config
			err := Command.Load(context.Background(), env(tt.env), &got)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("err = %v, want one line starting %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("config = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestRunUsage(t *testing.T) {
	e := cli.Env{Getenv: env(nil), Stdout: io.Discard, Stderr: io.Discard}
	for _, args := range [][]string{nil, {"bake"}, {"serve", "extra"}} {
		if err := Command.Run(context.Background(), args, e); cli.ExitCode(err) != 2 {
			t.Errorf("parlor %v: exit %d, want 2 (usage)", args, cli.ExitCode(err))
		}
	}
	if err := Command.Run(context.Background(), []string{"serve"}, e); err == nil || !strings.HasPrefix(err.Error(), "PARLOR_API_URL:") || cli.ExitCode(err) != 1 {
		t.Errorf("serve without PARLOR_API_URL: %v, want a configuration error naming it", err)
	}
}
