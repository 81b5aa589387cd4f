package events

import (
	"fmt"
	"io/fs"
	"strings"
	"testing"

	kaptinlin "github.com/kaptinlin/jsonschema"
)

// TestExamplesUnderAnIndependentValidator validates every example beside
// every payload schema with a second draft 2020-12 implementation,
// configured as the standard leaves it: format is an annotation, nothing
// is asserted beyond the vocabulary's defaults. Check's validator asserts
// formats and spells uuid the platform's way, so a negative example that
// only a format refuses passes there and here alike would be missed; this
// test is what a consumer with any stock validator sees.
func TestExamplesUnderAnIndependentValidator(t *testing.T) {
	fsys := repoSchemas(t)
	schemas, err := fs.Glob(fsys, "*/*/*.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(schemas) == 0 {
		t.Fatal("no payload schemas found")
	}
	for _, path := range schemas {
		base := strings.TrimSuffix(path, ".schema.json")
		t.Run(base, func(t *testing.T) {
			src, err := fs.ReadFile(fsys, path)
			if err != nil {
				t.Fatal(err)
			}
			sch, err := kaptinlin.NewCompiler().Compile(src, "schema:///"+path)
			if err != nil {
				t.Fatalf("compile %s: %v", path, err)
			}
			for _, ex := range []struct {
				path  string
				valid bool
			}{{base + ".valid.json", true}, {base + ".invalid.json", false}} {
				doc, err := fs.ReadFile(fsys, ex.path)
				if err != nil {
					t.Errorf("example %s: %v", ex.path, err)
					continue
				}
				res := sch.Validate(doc)
				if got := res.IsValid(); got != ex.valid {
					t.Errorf("%s: valid = %v, want %v (errors: %v)", ex.path, got, ex.valid, errorsOf(res))
				}
			}
		})
	}
}

func errorsOf(res *kaptinlin.EvaluationResult) string {
	var out []string
	for k, e := range res.Errors {
		out = append(out, fmt.Sprintf("%s: %v", k, e))
	}
	return strings.Join(out, "; ")
}

// TestIndependentValidatorRefusesMalformedIDs pins the reason identifiers
// carry a pattern: without asserting formats, the second validator refuses
// each spelling of an id the platform never emits.
func TestIndependentValidatorRefusesMalformedIDs(t *testing.T) {
	src, err := fs.ReadFile(repoSchemas(t), "identity/account/deleted.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	sch, err := kaptinlin.NewCompiler().Compile(src)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		id    string
		valid bool
	}{
		{"LowerCaseUUID", "0b7e2a4c-6f1d-4c5e-9a8b-1d2e3f405162", true},
		{"UpperCaseUUID", "0B7E2A4C-6F1D-4C5E-9A8B-1D2E3F405162", false},
		{"BracedUUID", "{0b7e2a4c-6f1d-4c5e-9a8b-1d2e3f405162}", false},
		{"URN", "urn:uuid:0b7e2a4c-6f1d-4c5e-9a8b-1d2e3f405162", false},
		{"PrefixedID", "acct_01h455vb4pex5vsknk084sn02q", false},
		{"NoDashes", "0b7e2a4c6f1d4c5e9a8b1d2e3f405162", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, field := range []string{"account_id", "deleted_by"} {
				doc := map[string]any{"account_id": "0b7e2a4c-6f1d-4c5e-9a8b-1d2e3f405162", field: tt.id}
				res := sch.Validate(doc)
				if got := res.IsValid(); got != tt.valid {
					t.Errorf("%s = %q: valid = %v, want %v", field, tt.id, got, tt.valid)
				}
			}
		})
	}
}
