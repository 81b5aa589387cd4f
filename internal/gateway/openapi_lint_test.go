package gateway_test

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/platformco/platform/internal/apidocs"
	"github.com/platformco/platform/internal/gateway"
)

// mergedDocument is the gateway's document, decoded.
func mergedDocument(t *testing.T) map[string]any {
	t.Helper()
	raw, err := gateway.OpenAPI(apidocs.Public())
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestOpenAPIMergeIsWellFormed holds, without a linter, the properties
// Redocly's recommended rules found the merge breaking (issue 48, item
// 17): each is a finding the merge made, not one a service's document
// brings.
func TestOpenAPIMergeIsWellFormed(t *testing.T) {
	doc := mergedDocument(t)
	tests := []struct {
		name  string
		check func(doc map[string]any) []string
	}{
		{"TagNamesUnique", duplicateTags},
		{"OperationTagsDeclared", undeclaredTags},
		{"ServersPresent", func(doc map[string]any) []string {
			servers, _ := doc["servers"].([]any)
			if len(servers) == 0 {
				return []string{"no servers"}
			}
			return nil
		}},
		{"AnyOfBranchesDistinct", duplicatedBranches},
		{"ComponentsUsed", unusedComponents},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, p := range tt.check(doc) {
				t.Error(p)
			}
		})
	}
}

func duplicateTags(doc map[string]any) []string {
	var bad []string
	seen := map[string]bool{}
	tags, _ := doc["tags"].([]any)
	for _, t := range tags {
		name, _ := t.(map[string]any)["name"].(string)
		if seen[name] {
			bad = append(bad, "tag "+name+" declared twice")
		}
		seen[name] = true
	}
	return bad
}

func undeclaredTags(doc map[string]any) []string {
	declared := map[string]bool{}
	tags, _ := doc["tags"].([]any)
	for _, t := range tags {
		name, _ := t.(map[string]any)["name"].(string)
		declared[name] = true
	}
	used := map[string]bool{}
	var bad []string
	paths, _ := doc["paths"].(map[string]any)
	for p, item := range paths {
		for m, op := range item.(map[string]any) {
			opm, _ := op.(map[string]any)
			list, _ := opm["tags"].([]any)
			for _, tag := range list {
				name := tag.(string)
				used[name] = true
				if !declared[name] {
					bad = append(bad, m+" "+p+" names the undeclared tag "+name)
				}
			}
		}
	}
	for name := range declared {
		if !used[name] {
			bad = append(bad, "tag "+name+" is declared but no operation has it")
		}
	}
	sort.Strings(bad)
	return bad
}

func duplicatedBranches(doc map[string]any) []string {
	var bad []string
	var walk func(ptr string, node any)
	walk = func(ptr string, node any) {
		switch n := node.(type) {
		case map[string]any:
			if list, ok := n["anyOf"].([]any); ok {
				seen := map[string]bool{}
				for _, br := range list {
					enc, _ := json.Marshal(br)
					if seen[string(enc)] {
						bad = append(bad, ptr+"/anyOf repeats "+string(enc))
					}
					seen[string(enc)] = true
				}
			}
			for k, v := range n {
				walk(ptr+"/"+k, v)
			}
		case []any:
			for _, v := range n {
				walk(ptr+"/*", v)
			}
		}
	}
	walk("#", doc)
	sort.Strings(bad)
	return bad
}

// unusedComponents are the components nothing uses: a use is a $ref (or,
// for a security scheme, a requirement naming it) outside the components
// and outside extensions, or one from a used component. An extension's
// reference counts for nothing to a linter or a reader.
func unusedComponents(doc map[string]any) []string {
	components, _ := doc["components"].(map[string]any)
	used := map[string]bool{}
	var queue []string
	var walk func(node any)
	walk = func(node any) {
		switch n := node.(type) {
		case map[string]any:
			for k, v := range n {
				switch {
				case strings.HasPrefix(k, "x-"):
				case k == "security":
					for _, r := range v.([]any) {
						for scheme := range r.(map[string]any) {
							used["securitySchemes/"+scheme] = true
						}
					}
				case k == "$ref":
					ref, _ := v.(string)
					parts := strings.SplitN(strings.TrimPrefix(ref, "#/components/"), "/", 3)
					if len(parts) >= 2 && !used[parts[0]+"/"+parts[1]] {
						used[parts[0]+"/"+parts[1]] = true
						queue = append(queue, parts[0]+"/"+parts[1])
					}
				default:
					walk(v)
				}
			}
		case []any:
			for _, v := range n {
				walk(v)
			}
		}
	}
	for k, v := range doc {
		if k != "components" && !strings.HasPrefix(k, "x-") {
			walk(v)
		}
	}
	for len(queue) > 0 {
		kind, name, _ := strings.Cut(queue[0], "/")
		queue = queue[1:]
		entries, _ := components[kind].(map[string]any)
		walk(entries[name])
	}
	var bad []string
	for kind, v := range components {
		for name := range v.(map[string]any) {
			if !used[kind+"/"+name] {
				bad = append(bad, "components/"+kind+"/"+name+" is never used")
			}
		}
	}
	sort.Strings(bad)
	return bad
}
