// Package internal_test holds the import rule of design.md: which way the
// arrows between the platform's packages point.
package internal_test

import (
	"go/build"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/platformco/platform/"

// services are the packages under internal/ that are services: none
// imports another's packages, but identity's client.
var services = map[string]bool{
	"identity": true, "box": true, "gateway": true, "courier": true, "keyholder": true, "parlor": true,
	"billing": true, "darkroom": true, "pantry": true, "muse": true,
}

// wiring are the packages that put services together (the binary's
// commands and the end-to-end harness); they may import any service.
var wiring = map[string]bool{
	"internal/devcmd": true, "internal/apidocs": true, "internal/e2e": true, "internal/events/eventscmd": true,
}

// shared is what every service may import of another service.
const shared = "internal/identity/client"

// exceptions are imports that break the rule today, each with why; the
// test fails when one disappears, so the list only shrinks.
var exceptions = map[string]string{}

// TestImportRule fails when a package under internal/<service> imports
// another service's packages (identity's client aside), or a package of
// the shared floor imports a service. Test files may import what their
// tests run (a real identity behind a client's test), and so may helper
// packages named …test, which start real services for other tests.
func TestImportRule(t *testing.T) {
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	var bad []string
	seen := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if name := d.Name(); name == "testdata" || strings.HasPrefix(name, ".") || name == "node_modules" {
			return filepath.SkipDir
		}
		pkg, err := build.ImportDir(path, 0)
		if err != nil {
			return nil // no Go files here
		}
		rel, _ := filepath.Rel(filepath.Dir(root), path)
		rel = filepath.ToSlash(rel)
		if wiring[rel] || strings.HasSuffix(pkg.Name, "test") {
			return nil
		}
		own := serviceOf(rel)
		for _, imp := range pkg.Imports {
			target, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			other := serviceOf(target)
			if other == "" || other == own || target == shared || strings.HasPrefix(target, shared+"/") {
				continue
			}
			edge := rel + " -> " + target
			if _, ok := exceptions[edge]; ok {
				seen[edge] = true
				continue
			}
			if own == "" {
				bad = append(bad, edge+" (the shared floor imports a service)")
			} else {
				bad = append(bad, edge+" (a service imports another service)")
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
	for edge := range exceptions {
		if !seen[edge] {
			t.Errorf("%s no longer imports; remove it from exceptions", edge)
		}
	}
}

// serviceOf names the service a package path belongs to, "" for the
// shared floor.
func serviceOf(path string) string {
	parts := strings.Split(path, "/")
	if len(parts) < 2 || parts[0] != "internal" || !services[parts[1]] {
		return ""
	}
	return parts[1]
}
