package httpapi

import (
	"bytes"
	_ "embed"
)

// openapiDocument is keyholder's OpenAPI 3.1 document, served at GET
// /openapi.json. The handler tests validate every exchange against it
// (internal/openapi/openapitest), so it cannot drift from the code.
//
//go:embed openapi.json
var openapiDocument []byte

// OpenAPI returns keyholder's OpenAPI 3.1 document, for test suites that
// validate their traffic against it.
func OpenAPI() []byte { return bytes.Clone(openapiDocument) }
