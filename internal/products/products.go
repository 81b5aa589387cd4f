// Package products names the platform's products (entitlements.md
// section 3): box grants entitlements to them, keyholder serves one
// registry repository per product. It is on the shared floor so that
// both read one list without either importing the other.
package products

// The products. Kit is the free product a claim grants; the other three
// are sold.
const (
	Kit      = "kit"
	Platform = "platform"
	Identity = "identity"
	Courier  = "courier"
)

// All returns every product, in the order messages name them: a fresh
// slice on every call.
func All() []string { return []string{Kit, Platform, Identity, Courier} }

// Valid reports whether p is one of the products.
func Valid(p string) bool {
	switch p {
	case Kit, Platform, Identity, Courier:
		return true
	}
	return false
}
