package httpapi

import (
	"bytes"
	_ "embed"
)

// openapiDocument is billing's OpenAPI 3.1 document, served at GET
// /openapi.json; the handler tests validate their traffic against it.
//
//go:embed openapi.json
var openapiDocument []byte

// OpenAPI returns billing's OpenAPI document.
func OpenAPI() []byte { return bytes.Clone(openapiDocument) }
