package httpapi

import (
	"bytes"
	_ "embed"
)

// openapiDocument is muse's OpenAPI 3.1 document, served at GET
// /openapi.json; the handler tests validate every exchange against it.
//
//go:embed openapi.json
var openapiDocument []byte

// OpenAPI returns muse's OpenAPI 3.1 document.
func OpenAPI() []byte { return bytes.Clone(openapiDocument) }
