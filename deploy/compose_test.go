package deploy_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

// composeEnv is what an operator's .env holds: the secrets compose.yaml
// refuses to start without.
var composeEnv = map[string]string{
	"POSTGRES_PASSWORD":      "pw",
	"IDENTITY_MASTER_KEY":    "aWRlbnRpdHktbWFzdGVyLWtleS0zMi1ieXRlcy0uLi4=",
	"BOX_MASTER_KEY":         "Ym94LW1hc3Rlci1rZXktMzItYnl0ZXMtLi4uLi4uLi4=",
	"COURIER_SECRET_BOX_KEY": "Y291cmllci1zZWNyZXQtYm94LWtleS0zMi1ieXRlcy4=",
	"COURIER_SMTP_HOST":      "smtp.example.com:587",
	"COURIER_MAIL_FROM":      "Platform <no-reply@example.com>",
}

func loadCompose(t *testing.T, env map[string]string) (*types.Project, error) {
	t.Helper()
	var list []string
	for k, v := range env {
		list = append(list, k+"="+v)
	}
	opts, err := cli.NewProjectOptions([]string{"compose.yaml"}, cli.WithName("platform"), cli.WithWorkingDirectory("."),
		cli.WithEnv(list), cli.WithInterpolation(true), cli.WithConsistency(true))
	if err != nil {
		t.Fatal(err)
	}
	return opts.LoadProject(context.Background())
}

func TestComposeRefusesToStartWithoutEachSecret(t *testing.T) {
	for _, secret := range []string{"POSTGRES_PASSWORD", "IDENTITY_MASTER_KEY", "BOX_MASTER_KEY", "COURIER_SECRET_BOX_KEY"} {
		t.Run(secret, func(t *testing.T) {
			env := map[string]string{}
			for k, v := range composeEnv {
				if k != secret {
					env[k] = v
				}
			}
			_, err := loadCompose(t, env)
			if err == nil || !strings.Contains(err.Error(), secret) {
				t.Fatalf("without %s: got %v, want an error naming it", secret, err)
			}
		})
	}
}

func TestComposeTopologyIsHealthCheckedAndOrdered(t *testing.T) {
	p, err := loadCompose(t, composeEnv)
	if err != nil {
		t.Fatalf("load compose.yaml: %v", err)
	}
	servers := map[string][]string{ // service → environment it must carry
		"identity":           {"DATABASE_URL", "IDENTITY_MASTER_KEY", "IDENTITY_ISSUER", "EVENTS_URL", "METRICS_ADDR"},
		"box":                {"DATABASE_URL", "BOX_MASTER_KEY", "BOX_IDENTITY_URL", "EVENTS_URL", "METRICS_ADDR"},
		"courier":            {"DATABASE_URL", "COURIER_SECRET_BOX_KEY", "COURIER_SMTP_HOST", "COURIER_MAIL_FROM", "EVENTS_URL", "METRICS_ADDR"},
		"keyholder":          {"DATABASE_URL", "KEYHOLDER_BOX_URL", "KEYHOLDER_REGISTRY_URL", "METRICS_ADDR"},
		"gateway":            {"IDENTITY_URL", "BOX_URL", "COURIER_URL", "KEYHOLDER_URL", "PARLOR_URL", "REDIS_URL", "METRICS_ADDR"},
		"parlor":             {"PARLOR_API_URL", "METRICS_ADDR"},
		"identity-publisher": {"DATABASE_URL", "EVENTS_URL", "METRICS_ADDR"},
		"courier-publisher":  {"DATABASE_URL", "EVENTS_URL", "METRICS_ADDR"},
	}
	migrations := map[string]string{"identity": "identity-migrate", "box": "box-migrate", "courier": "courier-migrate",
		"keyholder": "keyholder-migrate", "identity-publisher": "identity-migrate", "courier-publisher": "courier-migrate"}

	for name, s := range p.Services {
		if strings.HasSuffix(name, "-migrate") {
			if s.Restart != "no" || s.DependsOn["postgres"].Condition != types.ServiceConditionHealthy {
				t.Errorf("%s: restart %q, depends on postgres %+v; want a one-shot after a healthy postgres", name, s.Restart, s.DependsOn["postgres"])
			}
			continue
		}
		if s.HealthCheck == nil || len(s.HealthCheck.Test) == 0 || s.HealthCheck.Disable {
			t.Errorf("%s: no health check", name)
		}
	}
	for name, vars := range servers {
		s, ok := p.Services[name]
		if !ok {
			t.Errorf("no %s service", name)
			continue
		}
		for _, v := range vars {
			if val := s.Environment[v]; val == nil || *val == "" {
				t.Errorf("%s: %s is not set", name, v)
			}
		}
		if !s.ReadOnly {
			t.Errorf("%s: root file system is writable, want read_only", name)
		}
		test := strings.Join(s.HealthCheck.Test, " ")
		if !strings.Contains(test, "/platform probe http://127.0.0.1:") {
			t.Errorf("%s: health check %q, want the platform probe", name, test)
		}
		if !strings.HasSuffix(name, "-publisher") && !strings.HasSuffix(test, "/readyz") {
			t.Errorf("%s: health check %q, want /readyz", name, test)
		}
		if m, ok := migrations[name]; ok {
			if got := s.DependsOn[m].Condition; got != types.ServiceConditionCompletedSuccessfully {
				t.Errorf("%s: depends on %s with %q, want %q", name, m, got, types.ServiceConditionCompletedSuccessfully)
			}
		}
	}
	for _, secret := range []string{"IDENTITY_MASTER_KEY", "BOX_MASTER_KEY", "COURIER_SECRET_BOX_KEY"} {
		for name, s := range p.Services {
			if v := s.Environment[secret]; v != nil && *v != composeEnv[secret] {
				t.Errorf("%s: %s is %q, want it from the environment", name, secret, *v)
			}
		}
	}
	if got := p.Services["gateway"].DependsOn["redis"].Condition; got != types.ServiceConditionHealthy {
		t.Errorf("gateway depends on redis with %q, want healthy", got)
	}
	if len(p.Services["gateway"].Ports) == 0 {
		t.Error("gateway publishes no port")
	}
	for name, s := range p.Services {
		if name != "gateway" && len(s.Ports) > 0 {
			t.Errorf("%s publishes ports %v; only the gateway is public", name, s.Ports)
		}
	}

	// The JetStream cluster: three nodes, each routing to the two others,
	// all in one cluster, every server's EVENTS_URL naming all three.
	nodes := []string{"nats-1", "nats-2", "nats-3"}
	for _, n := range nodes {
		s, ok := p.Services[n]
		if !ok {
			t.Errorf("no %s service", n)
			continue
		}
		cmd := strings.Join(s.Command, " ")
		for _, want := range []string{"-js", "--cluster_name platform", "--name " + n} {
			if !strings.Contains(cmd, want) {
				t.Errorf("%s: command %q lacks %q", n, cmd, want)
			}
		}
		for _, other := range nodes {
			if other != n && !strings.Contains(cmd, "nats://"+other+":6222") {
				t.Errorf("%s: command %q does not route to %s", n, cmd, other)
			}
		}
	}
	for name, s := range p.Services {
		if v := s.Environment["EVENTS_URL"]; v != nil {
			urls := strings.Split(*v, ",")
			for _, n := range nodes {
				if !slices.Contains(urls, "nats://"+n+":4222") {
					t.Errorf("%s: EVENTS_URL %q does not name %s", name, *v, n)
				}
			}
		}
	}
}
