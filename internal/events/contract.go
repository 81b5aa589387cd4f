package events

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Contract validates events against the catalog and the payload schemas of
// the types this repository declares: what a contract test, a publisher
// or a careful consumer asks of an envelope.
type Contract struct {
	rows    map[string]CatalogEntry
	schemas map[string]*jsonschema.Schema
}

// LoadContract reads the catalog and compiles the schema of every declared
// row from fsys (the schemas directory). It fails on the first schema that
// cannot be read or compiled; `platform events check` gives the full list.
func LoadContract(fsys fs.FS) (*Contract, error) {
	cat, err := LoadCatalog(fsys)
	if err != nil {
		return nil, err
	}
	c := &Contract{rows: map[string]CatalogEntry{}, schemas: map[string]*jsonschema.Schema{}}
	for _, e := range cat.Events {
		c.rows[e.Type] = e
		if e.Status != StatusEmitted {
			continue
		}
		t, err := ParseType(e.Type)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", CatalogFile, err)
		}
		sch, _, problems := loadSchema(fsys, t)
		if sch == nil {
			return nil, fmt.Errorf("%s: %s", e.Type, strings.Join(problems, "; "))
		}
		c.schemas[e.Type] = sch
	}
	return c, nil
}

// ContractError is an envelope whose type, subject or payload breaks the
// catalog or the type's schema.
type ContractError struct {
	Type   string
	Reason string
}

func (e *ContractError) Error() string { return fmt.Sprintf("event %s: %s", e.Type, e.Reason) }

// Validate checks the envelope first (Envelope.Validate), then that its
// type is catalogued as declared by this repository, that its subject has
// the catalogued form, and that its data passes the type's schema.
// Errors are *EnvelopeError or *ContractError.
func (c *Contract) Validate(e Envelope) error {
	if err := e.Validate(); err != nil {
		return err
	}
	row, ok := c.rows[e.Type]
	if !ok {
		return &ContractError{e.Type, "not in the catalog"}
	}
	if row.Status != StatusEmitted {
		return &ContractError{e.Type, fmt.Sprintf("catalogued as %s: no publisher in this repository emits it", row.Status)}
	}
	if err := row.Subject.Check(e.Subject); err != nil {
		return &ContractError{e.Type, "subject: " + err.Error()}
	}
	return c.ValidatePayload(e.Type, e.Data)
}

// ValidatePayload checks data against typ's schema. Errors are *ContractError.
func (c *Contract) ValidatePayload(typ string, data []byte) error {
	sch, ok := c.schemas[typ]
	if !ok {
		return &ContractError{typ, "no payload schema (the type is not declared in this repository)"}
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return &ContractError{typ, "data is not JSON: " + err.Error()}
	}
	if err := sch.Validate(doc); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return &ContractError{typ, "data fails its schema: " + oneLine(ve)}
		}
		return &ContractError{typ, "data: " + err.Error()}
	}
	return nil
}

// ValidateJSON decodes raw strictly (Decode) and validates the result.
func (c *Contract) ValidateJSON(raw []byte) (Envelope, error) {
	e, err := Decode(raw)
	if err != nil {
		return Envelope{}, err
	}
	return e, c.Validate(e)
}
