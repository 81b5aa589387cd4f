package license_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/license"
)

func newKey(t *testing.T) ed25519.PrivateKey {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return priv
}

func keySet(keys ...ed25519.PrivateKey) license.KeySet {
	var ks license.KeySet
	for _, k := range keys {
		pub := k.Public().(ed25519.PublicKey)
		ks.Keys = append(ks.Keys, license.Key{ID: license.KeyID(pub), Public: pub})
	}
	return ks
}

var issued = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func claims(rng *string) license.Claims {
	return license.Claims{
		Issuer: "https://box.example.com", Subject: "0190a1b2-0000-7000-8000-000000000001",
		AccountID: "6f1c1f7e-2a4b-4c1e-9a53-1d2b3c4d5e6f", AccountName: "Acme", Product: "platform",
		VersionRange: rng, Fingerprint: "host-42", EntitlementID: 7,
		IssuedAt: issued.Unix(), ExpiresAt: issued.Add(720 * time.Hour).Unix(),
	}
}

func ptr(s string) *string { return &s }

func sign(t *testing.T, c license.Claims, key ed25519.PrivateKey) []byte {
	t.Helper()
	file, err := license.Sign(c, key)
	if err != nil {
		t.Fatal(err)
	}
	return file
}

// TestVerify: each way a licence can fail is told apart by its error.
func TestVerify(t *testing.T) {
	key, other := newKey(t), newKey(t)
	good := sign(t, claims(ptr("^1.2.0")), key)
	jws, err := license.JWS(good)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(jws, ".")
	// A claim changed after signing: the payload says another product.
	forged := strings.Replace(string(mustDecode(t, parts[1])), `"platform"`, `"courier"`, 1)
	tampered := wrap(parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(forged)) + "." + parts[2])
	lines := strings.Split(string(good), "\n")
	truncated := []byte(strings.Join(lines[:len(lines)-3], "\n"))
	within := issued.Add(time.Hour)
	tests := []struct {
		name string
		file []byte
		keys license.KeySet
		opts license.Options
		want error
	}{
		{"OK", good, keySet(key), license.Options{Fingerprint: "host-42", Version: "1.9.3", Now: within}, nil},
		{"OKRotated", good, keySet(other, key), license.Options{Now: within}, nil},
		{"OKEveryVersion", sign(t, claims(nil), key), keySet(key), license.Options{Version: "9.0.0", Now: within}, nil},
		{"ErrTampered", tampered, keySet(key), license.Options{Now: within}, license.ErrSignature},
		{"ErrExpired", good, keySet(key), license.Options{Now: issued.Add(721 * time.Hour)}, license.ErrExpired},
		{"ErrNotYetValid", good, keySet(key), license.Options{Now: issued.Add(-time.Minute)}, license.ErrNotYetValid},
		{"ErrFingerprint", good, keySet(key), license.Options{Fingerprint: "host-43", Now: within}, license.ErrFingerprint},
		{"ErrVersion", good, keySet(key), license.Options{Version: "2.0.0", Now: within}, license.ErrVersion},
		{"ErrVersionNotSemver", good, keySet(key), license.Options{Version: "latest", Now: within}, license.ErrVersion},
		{"ErrUnknownKid", good, keySet(other), license.Options{Now: within}, license.ErrUnknownKey},
		{"ErrTruncated", truncated, keySet(key), license.Options{Now: within}, license.ErrMalformed},
		{"ErrNotALicence", []byte("hello"), keySet(key), license.Options{Now: within}, license.ErrMalformed},
		{"ErrNotBase64", []byte(license.BeginLine + "\n!!!\n" + license.EndLine), keySet(key), license.Options{Now: within}, license.ErrMalformed},
		{"ErrOtherAlgorithm", wrap(base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","kid":"x"}`)) + "." + parts[1] + "."), keySet(key), license.Options{Now: within}, license.ErrMalformed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := license.Verify(tc.file, tc.keys, tc.opts)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Fatalf("Verify error = %v, want %v", err, tc.want)
			}
			if tc.want == nil && (c.Product != "platform" || c.Fingerprint != "host-42" || c.EntitlementID != 7) {
				t.Errorf("claims = %+v", c)
			}
		})
	}
}

// TestRanges: the version check reads every range form as box does.
func TestRanges(t *testing.T) {
	key := newKey(t)
	within := issued.Add(time.Hour)
	for _, tc := range []struct {
		rng, version string
		ok           bool
	}{
		{"^1.2.0", "1.2.0", true}, {"^1.2.0", "1.1.9", false}, {"^1.2.0", "2.0.0", false},
		{"^0.3.1", "0.3.9", true}, {"^0.3.1", "0.4.0", false}, {"^0.0.3", "0.0.4", false},
		{"~1.2.3", "1.2.9", true}, {"~1.2.3", "1.3.0", false},
		{">=2.0.0", "10.0.0", true}, {">=2.0.0", "1.9.9", false},
		{"1.2.3", "1.2.3", true}, {"1.2.3", "1.2.4", false},
	} {
		_, err := license.Verify(sign(t, claims(&tc.rng), key), keySet(key), license.Options{Version: tc.version, Now: within})
		if (err == nil) != tc.ok {
			t.Errorf("%s admits %s: err %v, want ok %v", tc.rng, tc.version, err, tc.ok)
		}
	}
}

// TestPlainEd25519: the file is a standard compact JWS; crypto/ed25519
// alone checks it, with the key taken from the JWK set's JSON.
func TestPlainEd25519(t *testing.T) {
	key := newKey(t)
	file := sign(t, claims(nil), key)
	doc, err := json.Marshal(keySet(key))
	if err != nil {
		t.Fatal(err)
	}
	var set struct {
		Keys []struct{ Kid, X, Kty, Crv, Alg string }
	}
	if err := json.Unmarshal(doc, &set); err != nil || len(set.Keys) != 1 || set.Keys[0].Kty != "OKP" || set.Keys[0].Crv != "Ed25519" || set.Keys[0].Alg != "EdDSA" {
		t.Fatalf("key set %s: %v", doc, err)
	}
	text := strings.TrimSpace(string(file))
	if !strings.HasPrefix(text, "-----BEGIN PLATFORM LICENSE-----\n") || !strings.HasSuffix(text, "\n-----END PLATFORM LICENSE-----") {
		t.Fatalf("file framing:\n%s", file)
	}
	body := strings.Join(strings.Split(text, "\n")[1:len(strings.Split(text, "\n"))-1], "")
	jws := string(mustDecodeStd(t, body))
	parts := strings.Split(jws, ".")
	var h struct{ Alg, Kid string }
	if err := json.Unmarshal(mustDecode(t, parts[0]), &h); err != nil || h.Alg != "EdDSA" || h.Kid != set.Keys[0].Kid {
		t.Fatalf("header %s: %v", mustDecode(t, parts[0]), err)
	}
	pub := ed25519.PublicKey(mustDecode(t, set.Keys[0].X))
	if !ed25519.Verify(pub, []byte(parts[0]+"."+parts[1]), mustDecode(t, parts[2])) {
		t.Fatal("crypto/ed25519 does not verify the JWS")
	}
	var c map[string]any
	if err := json.Unmarshal(mustDecode(t, parts[1]), &c); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"iss", "sub", "account_id", "account_name", "product", "version_range", "fingerprint", "entitlement_id", "iat", "exp"} {
		if _, ok := c[k]; !ok {
			t.Errorf("claim %s missing from %v", k, c)
		}
	}
}

func TestParseKeySet(t *testing.T) {
	key := newKey(t)
	doc, _ := json.Marshal(keySet(key))
	ks, err := license.ParseKeySet(doc)
	if err != nil || len(ks.Keys) != 1 || !bytes.Equal(ks.Keys[0].Public, key.Public().(ed25519.PublicKey)) {
		t.Fatalf("ParseKeySet = %+v, %v", ks, err)
	}
	for _, bad := range []string{`{}`, `{"keys":[{"kty":"RSA","kid":"r"}]}`, `{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"k","x":"AAAA"}]}`, `[`} {
		if _, err := license.ParseKeySet([]byte(bad)); err == nil {
			t.Errorf("ParseKeySet(%s) accepted", bad)
		}
	}
}

func wrap(jws string) []byte {
	return []byte(license.BeginLine + "\n" + base64.StdEncoding.EncodeToString([]byte(jws)) + "\n" + license.EndLine + "\n")
}

func mustDecode(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustDecodeStd(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
