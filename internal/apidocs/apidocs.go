// Package apidocs gathers the public OpenAPI documents of the services
// behind the gateway, by the gateway's service names, so the binary's
// wiring (cmd/platform, devcmd) hands them to the gateway as data. It is
// wiring, like devcmd: the gateway itself compiles in no other service's
// packages (the import rule in internal/arrows_test.go).
package apidocs

import (
	billingapi "github.com/platformco/platform/internal/billing/httpapi"
	boxapi "github.com/platformco/platform/internal/box/httpapi"
	courierapi "github.com/platformco/platform/internal/courier/httpapi"
	darkroomapi "github.com/platformco/platform/internal/darkroom/httpapi"
	identityapi "github.com/platformco/platform/internal/identity/httpapi"
	keyholderapi "github.com/platformco/platform/internal/keyholder/httpapi"
	museapi "github.com/platformco/platform/internal/muse/httpapi"
	pantryapi "github.com/platformco/platform/internal/pantry/httpapi"
)

// Public returns each service's embedded document by service name
// (gateway.Identity, gateway.Box, …): a fresh map on every call, holding
// the services' own bytes.
func Public() map[string][]byte {
	return map[string][]byte{
		"identity":  identityapi.OpenAPI(),
		"box":       boxapi.OpenAPI(),
		"courier":   courierapi.OpenAPI(),
		"keyholder": keyholderapi.OpenAPI(),
		"pantry":    pantryapi.OpenAPI(),
		"billing":   billingapi.OpenAPI(),
		"darkroom":  darkroomapi.OpenAPI(),
		"muse":      museapi.OpenAPI(),
	}
}
