package events

import (
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strings"
)

// Disagreement is one thing `platform events check` found wrong. Where
// names the type, file or manifest concerned.
type Disagreement struct {
	Where   string
	Problem string
}

func (d Disagreement) String() string { return d.Where + ": " + d.Problem }

// Check verifies that the catalog in fsys (the schemas directory), the
// manifests of the publishers built in this repository and the payload
// schemas agree:
//
//   - every catalog row is well formed: a type valid by grammar and
//     vocabulary, each type once, its publisher the type's service segment,
//     a known status and subject kind, and a description of both;
//   - catalog and manifests agree in both directions for the publishers in
//     this repository: an emitted row is in its publisher's manifest, every
//     manifest type has an emitted row, a not_emitted row is absent from the
//     manifest, and an external row's publisher has no manifest here;
//   - every declared type has schemas/events/<service>/<entity>/<action>.schema.json,
//     a closed draft 2020-12 document whose identifiers are bare UUIDs and
//     whose top-level properties are the row's data_fields, with a valid
//     example it accepts and a negative example it refuses;
//   - no other file sits in the schemas directory.
//
// It returns every disagreement, sorted, or none.
func Check(fsys fs.FS, manifests []Manifest) []Disagreement {
	var out []Disagreement
	add := func(where, format string, args ...any) {
		out = append(out, Disagreement{where, fmt.Sprintf(format, args...)})
	}
	cat, err := LoadCatalog(fsys)
	if err != nil {
		add(CatalogFile, "%v", err)
		return out
	}
	if len(cat.Description) == 0 {
		add(CatalogFile, "description is required: say what the catalog holds and what each status means")
	}

	// The manifests of the publishers built here, by service.
	declared := map[string]map[string]bool{}
	for _, m := range manifests {
		where := "manifest " + m.Service
		if !isSegment(m.Service, '-') {
			add(where, "service name %q must be kebab-case", m.Service)
		}
		if _, dup := declared[m.Service]; dup {
			add(where, "more than one manifest for the service")
			continue
		}
		types := map[string]bool{}
		declared[m.Service] = types
		for _, typ := range m.Types {
			if types[typ] {
				add(typ, "declared twice by %s's manifest", m.Service)
				continue
			}
			types[typ] = true
			t, err := ParseType(typ)
			if err != nil {
				add(typ, "declared by %s's manifest: %v", m.Service, err)
				continue
			}
			if t.Service != m.Service {
				add(typ, "declared by %s's manifest but its service segment is %q", m.Service, t.Service)
			}
		}
	}

	rows := map[string]CatalogEntry{}
	for i, e := range cat.Events {
		where := e.Type
		if where == "" {
			where = fmt.Sprintf("%s events[%d]", CatalogFile, i)
		}
		if _, dup := rows[e.Type]; dup {
			add(where, "catalogued more than once")
			continue
		}
		rows[e.Type] = e
		// Declared types meet grammar and vocabulary; rows this repository
		// does not emit are kept as platform.md records them, grammar only.
		parse := ParseType
		if e.Status != StatusEmitted {
			parse = ParseTypeGrammar
		}
		t, err := parse(e.Type)
		if err != nil {
			add(where, "%v", err)
		} else if e.Publisher != t.Service {
			add(where, "publisher %q is not the type's service segment %q", e.Publisher, t.Service)
		}
		if !e.Status.valid() {
			add(where, "status %q is not one of declared, not_emitted, external", e.Status)
		}
		if !e.Subject.Valid() {
			add(where, "subject %q is not one of uuid, external_id, platform", e.Subject)
		}
		if strings.TrimSpace(e.SubjectDescription) == "" {
			add(where, "subject_description is required")
		}
		if strings.TrimSpace(e.EmittedWhen) == "" {
			add(where, "emitted_when is required")
		}
		if e.Deprecated != nil {
			if err := checkDeprecation(e.Deprecated); err != nil {
				add(where, "%v", err)
			}
		}

		types, inRepo := declared[e.Publisher]
		switch e.Status {
		case StatusEmitted:
			switch {
			case !inRepo:
				add(where, "catalogued as declared, but publisher %q has no manifest in this repository (mark the row external)", e.Publisher)
			case !types[e.Type]:
				add(where, "catalogued as declared, but %s's manifest does not declare it", e.Publisher)
			}
			if len(e.DataFields) == 0 {
				add(where, "data_fields is required for a declared type")
			}
		case StatusNotEmitted:
			switch {
			case !inRepo:
				add(where, "catalogued as not_emitted, but publisher %q has no manifest in this repository (mark the row external)", e.Publisher)
			case types[e.Type]:
				add(where, "catalogued as not_emitted, but %s's manifest declares it", e.Publisher)
			}
		case StatusExternal:
			if inRepo {
				add(where, "catalogued as external, but publisher %q is built in this repository (mark the row declared or not_emitted)", e.Publisher)
			}
		}
	}

	// Manifest to catalog, and the schemas of every declared type.
	for _, m := range manifests {
		for _, typ := range dedupe(m.Types) {
			t, err := ParseType(typ)
			if err != nil || t.Service != m.Service {
				continue // reported above
			}
			row, ok := rows[typ]
			switch {
			case !ok:
				add(typ, "declared by %s's manifest but has no catalog row", m.Service)
			case row.Status != StatusEmitted:
				add(typ, "declared by %s's manifest but catalogued as %s", m.Service, row.Status)
			}
			for _, p := range checkSchema(fsys, t, row) {
				add(typ, "%s", p)
			}
		}
	}

	for _, p := range strayFiles(fsys, rows) {
		add(p, "not the catalog, a README or a catalogued type's schema or example")
	}

	sort.SliceStable(out, func(i, j int) bool { return out[i].Where < out[j].Where })
	return out
}

// checkSchema applies the payload rules to one declared type.
func checkSchema(fsys fs.FS, t Type, row CatalogEntry) []string {
	sch, props, problems := loadSchema(fsys, t)
	if len(row.DataFields) > 0 && props != nil {
		want := slices.Sorted(slices.Values(row.DataFields))
		if !slices.Equal(want, props) {
			problems = append(problems, fmt.Sprintf("catalog data_fields %v differ from the schema's properties %v", want, props))
		}
	}
	for _, ex := range []struct {
		path  string
		valid bool
	}{{t.ValidExamplePath(), true}, {t.InvalidExamplePath(), false}} {
		doc, err := readJSON(fsys, ex.path)
		if err != nil {
			problems = append(problems, fmt.Sprintf("example %s: %v", ex.path, err))
			continue
		}
		if ex.valid {
			for _, at := range prefixedIDs(doc, "") {
				problems = append(problems, fmt.Sprintf("example %s: %s holds a prefixed identifier; identifiers are bare UUIDs", ex.path, at))
			}
		}
		if sch == nil {
			continue
		}
		err = sch.Validate(doc)
		switch {
		case ex.valid && err != nil:
			problems = append(problems, fmt.Sprintf("valid example %s fails its schema: %v", ex.path, oneLine(err)))
		case !ex.valid && err == nil:
			problems = append(problems, fmt.Sprintf("negative example %s passes its schema; it must fail", ex.path))
		}
	}
	return problems
}

// strayFiles lists files in the schemas directory that belong to nothing.
func strayFiles(fsys fs.FS, rows map[string]CatalogEntry) []string {
	allowed := map[string]bool{CatalogFile: true, "README.md": true}
	for typ := range rows {
		if t, err := ParseTypeGrammar(typ); err == nil {
			allowed[t.SchemaPath()] = true
			allowed[t.ValidExamplePath()] = true
			allowed[t.InvalidExamplePath()] = true
		}
	}
	var stray []string
	_ = fs.WalkDir(fsys, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			stray = append(stray, path)
			return nil
		}
		if !d.IsDir() && !allowed[path] {
			stray = append(stray, path)
		}
		return nil
	})
	return stray
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
