package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// CatalogFile is the catalog's name inside the schemas directory.
const CatalogFile = "catalog.json"

// SchemasDir is the schemas directory relative to the repository root.
const SchemasDir = "schemas/events"

// Status says how the code in this repository stands to a catalog row.
type Status string

const (
	// StatusEmitted: the publisher is built in this repository, emits the
	// type, and its manifest declares it. Grammar, manifest agreement,
	// schema and examples are all checked.
	StatusEmitted Status = "emitted"
	// StatusNotEmitted: the publisher is built in this repository but does
	// not build the feature that emits the type (platform.md catalogues it
	// for the platform as a whole). The manifest must not declare it.
	StatusNotEmitted Status = "not_emitted"
	// StatusExternal: the publisher is not built in this repository; the
	// row is kept so the catalog holds the platform's every type, and only
	// its grammar and vocabulary are checked.
	StatusExternal Status = "external"
)

func (s Status) valid() bool {
	return s == StatusEmitted || s == StatusNotEmitted || s == StatusExternal
}

// CatalogEntry is one row of the catalog.
type CatalogEntry struct {
	Type               string       `json:"type"`
	Publisher          string       `json:"publisher"`
	Status             Status       `json:"status"`
	Subject            SubjectKind  `json:"subject"`
	SubjectDescription string       `json:"subject_description"`
	EmittedWhen        string       `json:"emitted_when"`
	DataFields         []string     `json:"data_fields,omitempty"`
	Note               string       `json:"note,omitempty"`
	Deprecated         *Deprecation `json:"deprecated,omitempty"`
}

// Deprecation announces a type's removal (platform.md section 8: at least
// six months between the announcement and the removal).
type Deprecation struct {
	Since       string `json:"since"`        // YYYY-MM-DD
	RemovalDate string `json:"removal_date"` // YYYY-MM-DD, at least 6 months after Since
	ReplacedBy  string `json:"replaced_by,omitempty"`
}

// Catalog is the platform's list of event types.
type Catalog struct {
	Description []string       `json:"description"`
	Events      []CatalogEntry `json:"events"`
}

// Entry returns the row for typ.
func (c *Catalog) Entry(typ string) (CatalogEntry, bool) {
	for _, e := range c.Events {
		if e.Type == typ {
			return e, true
		}
	}
	return CatalogEntry{}, false
}

// LoadCatalog reads catalog.json from fsys (the schemas directory), strictly:
// unknown fields and trailing data are refused.
func LoadCatalog(fsys fs.FS) (*Catalog, error) {
	b, err := fs.ReadFile(fsys, CatalogFile)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", CatalogFile, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var c Catalog
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("%s: %w", CatalogFile, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: unexpected data after the object", CatalogFile)
	}
	return &c, nil
}

// LocateSchemas finds the schemas directory: dir itself when it holds a
// catalog, otherwise SchemasDir under dir or under the nearest parent of it
// that has one, so the check runs from anywhere inside the repository.
func LocateSchemas(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if fileExists(filepath.Join(abs, CatalogFile)) {
		return abs, nil
	}
	for d := abs; ; d = filepath.Dir(d) {
		candidate := filepath.Join(d, filepath.FromSlash(SchemasDir))
		if fileExists(filepath.Join(candidate, CatalogFile)) {
			return candidate, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no %s/%s in %s or any parent directory", SchemasDir, CatalogFile, abs)
		}
	}
}

func fileExists(path string) bool {
	info, err := os.Stat(path)
	return err == nil && !info.IsDir()
}

// checkDeprecation applies platform.md section 8's window.
func checkDeprecation(d *Deprecation) error {
	since, err := time.Parse(time.DateOnly, d.Since)
	if err != nil {
		return fmt.Errorf("deprecated.since must be a date YYYY-MM-DD, got %q", d.Since)
	}
	removal, err := time.Parse(time.DateOnly, d.RemovalDate)
	if err != nil {
		return fmt.Errorf("deprecated.removal_date must be a date YYYY-MM-DD, got %q", d.RemovalDate)
	}
	if removal.Before(since.AddDate(0, 6, 0)) {
		return fmt.Errorf("deprecated.removal_date %s is less than 6 months after %s", d.RemovalDate, d.Since)
	}
	if d.ReplacedBy != "" {
		if _, err := ParseType(d.ReplacedBy); err != nil {
			return fmt.Errorf("deprecated.replaced_by: %v", err)
		}
	}
	return nil
}
