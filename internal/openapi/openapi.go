// Package openapi serves a service's OpenAPI 3.1 document. The documents
// live beside the routes they describe (internal/<service>/httpapi/
// openapi.json, embedded); package openapitest holds the test-side half
// that keeps them honest by validating every request and response a test
// suite exercises against them.
package openapi

import (
	"net/http"
	"strconv"
)

// Handler answers GET /openapi.json with doc, the service's document as
// embedded at build time. The bytes are served as they are: the document
// in the repository is the one the service publishes.
func Handler(doc []byte) http.Handler {
	length := strconv.Itoa(len(doc))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", length)
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			_, _ = w.Write(doc)
		}
	})
}
