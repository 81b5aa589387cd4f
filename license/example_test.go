package license_test

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"time"

	"github.com/platformco/platform/license"
)

// The software at a customer keeps its licence file and the service's key
// set (GET /v1/license/keys), and checks both at start, offline.
func ExampleVerify() {
	// What the service does when it issues a licence; the software
	// receives only file and keysJSON.
	seed := make([]byte, ed25519.SeedSize)
	signer := ed25519.NewKeyFromSeed(seed)
	rng := "^1.4.0"
	issued := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	file, _ := license.Sign(license.Claims{
		Issuer: "https://box.example.com", Subject: "0190a1b2-0000-7000-8000-000000000001",
		AccountID: "6f1c1f7e-2a4b-4c1e-9a53-1d2b3c4d5e6f", AccountName: "Acme", Product: "platform",
		VersionRange: &rng, Fingerprint: "host-42", EntitlementID: 7,
		IssuedAt: issued.Unix(), ExpiresAt: issued.Add(720 * time.Hour).Unix(),
	}, signer)
	pub := signer.Public().(ed25519.PublicKey)
	keysJSON, _ := license.KeySet{Keys: []license.Key{{ID: license.KeyID(pub), Public: pub}}}.MarshalJSON()

	// What the software does.
	keys, err := license.ParseKeySet(keysJSON)
	if err != nil {
		fmt.Println(err)
		return
	}
	now := issued.Add(24 * time.Hour)
	c, err := license.Verify(file, keys, license.Options{Fingerprint: "host-42", Version: "1.6.2", Now: now})
	fmt.Println(c.Product, c.AccountName, *c.VersionRange, err)

	_, err = license.Verify(file, keys, license.Options{Fingerprint: "host-42", Version: "2.0.0", Now: now})
	fmt.Println(errors.Is(err, license.ErrVersion))
	// Output:
	// platform Acme ^1.4.0 <nil>
	// true
}
