package main

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/platformco/platform/internal/billing/billingcmd"
	"github.com/platformco/platform/internal/box/boxcmd"
	"github.com/platformco/platform/internal/courier/couriercmd"
	"github.com/platformco/platform/internal/darkroom/darkroomcmd"
	"github.com/platformco/platform/internal/events/eventscmd"
	"github.com/platformco/platform/internal/gateway/gatewaycmd"
	"github.com/platformco/platform/internal/identity/identitycmd"
	"github.com/platformco/platform/internal/keyholder/keyholdercmd"
	"github.com/platformco/platform/internal/muse/musecmd"
	"github.com/platformco/platform/internal/pantry/pantrycmd"
	"github.com/platformco/platform/internal/parlor/parlorcmd"
)

// TestConfigurationReferenceNamesEveryVariable fails when a variable a
// service's Config reads (its `env` tags, the kit's Base included) is not
// in the tables of docs/configuration.md (each service's own) or of the
// README (the shared ones), or when docs/configuration.md names one no
// Config reads.
func TestConfigurationReferenceNamesEveryVariable(t *testing.T) {
	read := map[string][]string{}
	for svc, cfg := range map[string]any{
		"identity": identitycmd.Config{}, "box": boxcmd.Config{}, "gateway": gatewaycmd.Config{},
		"courier": couriercmd.Config{}, "keyholder": keyholdercmd.Config{}, "parlor": parlorcmd.Config{},
		"pantry":         pantrycmd.Config{},
		"billing":        billingcmd.Config{},
		"darkroom":       darkroomcmd.Config{},
		"muse":           musecmd.Config{},
		"events publish": eventscmd.PublishConfig{},
	} {
		for _, v := range envVars(reflect.TypeOf(cfg)) {
			read[v] = append(read[v], svc)
		}
	}
	documented, shared := tableVariables(t, "../../docs/configuration.md"), tableVariables(t, "../../README.md")
	for v, svcs := range read {
		if !documented[v] && !shared[v] {
			slices.Sort(svcs)
			t.Errorf("%s (read by %s) is in neither docs/configuration.md nor the README's table", v, strings.Join(svcs, ", "))
		}
	}
	for v := range documented {
		if _, ok := read[v]; !ok && !notInAConfig[v] {
			t.Errorf("docs/configuration.md names %s, which no service's Config reads", v)
		}
	}
}

// notInAConfig are variables the reference documents that commands read
// outside a service's Config.
var notInAConfig = map[string]bool{
	"PLATFORM_TOKEN": true, // box grant/revoke/list, keyholder publish
}

// tableVariables are the variables named, spelled out in backquotes, in
// the first column of the tables of the document at path.
func tableVariables(t *testing.T, path string) map[string]bool {
	t.Helper()
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]bool{}
	row := regexp.MustCompile(`(?m)^\| ([^|]+) \|`)
	name := regexp.MustCompile("`([A-Z][A-Z0-9_]+)`")
	for _, r := range row.FindAllStringSubmatch(string(doc), -1) {
		for _, n := range name.FindAllStringSubmatch(r[1], -1) {
			vars[n[1]] = true
		}
	}
	return vars
}

func envVars(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		if tag, ok := f.Tag.Lookup("env"); ok {
			n, _, _ := strings.Cut(tag, ",")
			out = append(out, strings.TrimSpace(n))
			continue
		}
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			out = append(out, envVars(f.Type)...)
		}
	}
	return out
}
