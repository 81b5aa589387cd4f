// Package deploy holds the platform's deployment files; its tests check
// them: the Prometheus rules, the Compose topology and the Kustomize
// output.
package deploy_test

import (
	"os"
	"os/exec"
	"testing"
)

// needTool returns tool's path, skipping the test when it is missing,
// except in CI (CI=true), where a missing tool is a failure.
func needTool(t *testing.T, tool string) string {
	t.Helper()
	path, err := exec.LookPath(tool)
	if err == nil {
		return path
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is not installed (Debian: apt-get install prometheus); CI must run this test", tool)
	}
	t.Skipf("%s is not installed: the alert rules are not checked", tool)
	return ""
}

func TestAlertRulesPassPromtoolCheckAndTheirUnitTests(t *testing.T) {
	promtool := needTool(t, "promtool")
	for _, args := range [][]string{
		{"check", "rules", "prometheus/alerts.yaml"},
		{"test", "rules", "prometheus/alerts_test.yaml"},
	} {
		out, err := exec.Command(promtool, args...).CombinedOutput()
		if err != nil {
			t.Errorf("promtool %v: %v\n%s", args, err, out)
		}
	}
}
