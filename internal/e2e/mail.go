package e2e

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"testing"

	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/sqldb"
)

// MailToken returns the one-time token in the newest mail identity queued
// for address with template, read from identity's database and opened with
// its master key (base64), as the relay would before handing it to courier.
func MailToken(t testing.TB, db *sqldb.DB, masterKey, address, template string) string {
	t.Helper()
	address = identity.NormalizeEmail(address)
	master, err := base64.StdEncoding.DecodeString(masterKey)
	if err != nil {
		t.Fatalf("master key: %v", err)
	}
	sealer, err := identity.NewMailSealer(master)
	if err != nil {
		t.Fatal(err)
	}
	m := identity.OutgoingMail{Template: template, To: address}
	err = db.QueryRow(context.Background(), `
		SELECT id, data_sealed FROM mail_outbox WHERE recipient = $1 AND template = $2 AND data_sealed IS NOT NULL
		ORDER BY created_at DESC, id DESC LIMIT 1`, address, template).Scan(&m.ID, &m.Sealed)
	if err != nil {
		t.Fatalf("no %s mail queued for %s: %v", template, address, err)
	}
	data, err := sealer.Open(m)
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(data["link"])
	if err != nil || u.Query().Get("token") == "" {
		t.Fatalf("%s mail to %s carries no link with a token", template, address)
	}
	return u.Query().Get("token")
}

// VerifyEmail verifies address at identity (base) with the token of its
// queued verification mail.
func VerifyEmail(t testing.TB, base string, db *sqldb.DB, masterKey, address string) {
	t.Helper()
	token := MailToken(t, db, masterKey, address, identity.TemplateVerifyEmail)
	Client{Base: base}.Do(t, "POST", "/v1/email/verify", map[string]string{"token": token}).Expect(t, http.StatusOK)
}
