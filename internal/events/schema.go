package events

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/platformco/platform/internal/ids"
)

// Draft202012 is the only dialect payload schemas may declare.
const Draft202012 = "https://json-schema.org/draft/2020-12/schema"

// newCompiler returns a compiler that asserts formats, spells "uuid" the
// platform's one way (canonical lower case, no prefix) and loads nothing
// from outside the document, so a schema means the same everywhere.
func newCompiler() *jsonschema.Compiler {
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.RegisterFormat(&jsonschema.Format{Name: "uuid", Validate: func(v any) error {
		if s, ok := v.(string); ok && !ids.Valid(s) {
			return errors.New("not a bare lower-case UUID")
		}
		return nil
	}})
	c.UseLoader(refusingLoader{})
	return c
}

type refusingLoader struct{}

func (refusingLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("payload schemas are self-contained; will not load %s", url)
}

// readJSON decodes one JSON document the way the validator reads instances
// (numbers kept exact).
func readJSON(fsys fs.FS, path string) (any, error) {
	b, err := fs.ReadFile(fsys, path)
	if err != nil {
		return nil, err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	return v, nil
}

// loadSchema reads, lints and compiles t's payload schema. It returns the
// compiled schema (nil when it cannot be compiled), the top-level property
// names, and every rule the document breaks.
func loadSchema(fsys fs.FS, t Type) (*jsonschema.Schema, []string, []string) {
	path := t.SchemaPath()
	doc, err := readJSON(fsys, path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil, []string{"no payload schema at " + path}
		}
		return nil, nil, []string{path + ": " + err.Error()}
	}
	root, ok := doc.(map[string]any)
	if !ok {
		return nil, nil, []string{path + ": must be a JSON object"}
	}
	var problems []string
	if root["$schema"] != Draft202012 {
		problems = append(problems, fmt.Sprintf("%s: $schema must be %q", path, Draft202012))
	}
	if root["type"] != "object" {
		problems = append(problems, path+`: must describe the data object ("type": "object")`)
	}
	for _, p := range lintSchema(root, "#") {
		problems = append(problems, path+": "+p)
	}
	var props []string
	if m, ok := root["properties"].(map[string]any); ok {
		for k := range m {
			props = append(props, k)
		}
		sort.Strings(props)
	}
	c := newCompiler()
	url := "schema:///" + path
	if err := c.AddResource(url, doc); err != nil {
		return nil, props, append(problems, path+": "+err.Error())
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, props, append(problems, path+": does not compile as draft 2020-12: "+err.Error())
	}
	return sch, props, problems
}

// schemaMaps and schemaLists name the keywords whose values hold
// subschemas, so the lint walks schemas and never mistakes a property
// called "type" for a keyword.
var (
	schemaMaps    = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
	schemaSingles = []string{"items", "additionalProperties", "unevaluatedProperties", "not", "if", "then", "else", "contains", "propertyNames", "unevaluatedItems"}
	schemaLists   = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
)

// UUIDPattern is the pattern every identifier property carries beside
// format uuid. Draft 2020-12 makes format an annotation unless a validator
// is told to assert it, so the pattern is what makes a standard validator
// refuse a prefixed, braced or upper-case id.
const UUIDPattern = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"

// lintSchema enforces what platform.md asks of payload schemas beyond
// validity: every object is closed (additionalProperties or
// unevaluatedProperties false), and identifiers are bare UUIDs: a property
// named id, *_id or *_by (an actor) must be a string of format uuid with
// exactly UUIDPattern, so no schema can require a prefixed identifier and
// every validator, asserting formats or not, refuses one.
func lintSchema(s map[string]any, at string) []string {
	var problems []string
	_, hasProps := s["properties"]
	if s["type"] == "object" || hasProps {
		if s["additionalProperties"] != false && s["unevaluatedProperties"] != false {
			problems = append(problems, at+": object schema must be closed (additionalProperties: false)")
		}
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for name, v := range props {
			if !isIdentifierName(name) {
				continue
			}
			ps, _ := v.(map[string]any)
			if ps["type"] != "string" || ps["format"] != "uuid" {
				problems = append(problems, fmt.Sprintf("%s/properties/%s: an identifier must be {\"type\": \"string\", \"format\": \"uuid\"} (a bare UUID)", at, name))
			}
			if ps["pattern"] != UUIDPattern {
				problems = append(problems, fmt.Sprintf("%s/properties/%s: an identifier's pattern must be %q (bare lower-case UUIDs only, never prefixed)", at, name, UUIDPattern))
			}
		}
	}
	for _, kw := range schemaMaps {
		m, _ := s[kw].(map[string]any)
		for _, k := range sortedKeys(m) {
			if sub, ok := m[k].(map[string]any); ok {
				problems = append(problems, lintSchema(sub, at+"/"+kw+"/"+k)...)
			}
		}
	}
	for _, kw := range schemaSingles {
		if sub, ok := s[kw].(map[string]any); ok {
			problems = append(problems, lintSchema(sub, at+"/"+kw)...)
		}
	}
	for _, kw := range schemaLists {
		list, _ := s[kw].([]any)
		for i, v := range list {
			if sub, ok := v.(map[string]any); ok {
				problems = append(problems, lintSchema(sub, fmt.Sprintf("%s/%s/%d", at, kw, i))...)
			}
		}
	}
	return problems
}

// isIdentifierName reports whether name is one of the platform's own
// identifiers. A processor_* property is a payment processor's own id for
// its record (platform.md's processor_event_id on every billing fact),
// named as such, which is never a UUID.
func isIdentifierName(name string) bool {
	if strings.HasPrefix(name, "processor_") {
		return false
	}
	return name == "id" || strings.HasSuffix(name, "_id") || strings.HasSuffix(name, "_by")
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// prefixedID looks like a prefixed, long base32 identifier (TypeID or a
// prefixed ULID, such as user_01h455vb4pex5vsknk084sn02q), which no
// example may carry.
var prefixedID = regexp.MustCompile(`^[a-z][a-z0-9]*_[0-9a-hjkmnp-tv-z]{26}$`)

// prefixedIDs lists the places in an example that carry such an id.
func prefixedIDs(v any, at string) []string {
	var found []string
	switch x := v.(type) {
	case string:
		if prefixedID.MatchString(strings.ToLower(x)) {
			found = append(found, at)
		}
	case map[string]any:
		for _, k := range sortedKeys(x) {
			found = append(found, prefixedIDs(x[k], at+"/"+k)...)
		}
	case []any:
		for i, e := range x {
			found = append(found, prefixedIDs(e, fmt.Sprintf("%s/%d", at, i))...)
		}
	}
	return found
}
