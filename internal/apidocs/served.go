package apidocs

import (
	"fmt"

	"github.com/platformco/platform/internal/gateway"
)

// Served returns every OpenAPI document the platform serves at
// /openapi.json, by the name of the service that serves it: each
// service's own and the gateway's merge of the public ones ("gateway").
// Errors: the gateway's merge failing (a path it does not route).
func Served() (map[string][]byte, error) {
	docs := Public()
	merged, err := gateway.OpenAPI(Public())
	if err != nil {
		return nil, fmt.Errorf("the gateway's document: %w", err)
	}
	docs["gateway"] = merged
	return docs, nil
}
