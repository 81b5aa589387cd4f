package httpapi

import (
	"strings"
	"testing"

	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/openapi/openapitest"
)

// lifecycleConformance drives every declared response of the credential
// lifecycle's routes. Links issued at registration have expired by now.
func lifecycleConformance(t *testing.T, c *openapitest.Client, env *identitytest.Env, login func(string) string) {
	t.Helper()
	const pw = `"password":"correct horse battery"`
	big := `{"token":"` + strings.Repeat("a", httpx.MaxBodyBytes) + `"}`
	plain := openapitest.Header("Content-Type", "text/plain")
	evil := openapitest.Header("Origin", "https://evil.example")
	token := func(email, template string) string { return env.LinkToken(t, email, template) }

	// Verification, and its resend.
	c.Code("POST", "/v1/email/verify", `{"token":"`+token("invitee@example.com", identity.TemplateVerifyEmail)+`"}`, 410, "token_expired")
	c.Do("POST", "/v1/users", `{"email":"fresh-lc@example.com",`+pw+`}`, 201)
	freshTok := login("fresh-lc@example.com")
	resend := "/v1/me/email/verification"
	c.Code("POST", resend, "", 429, "rate_limited", openapitest.Bearer(freshTok))
	c.Code("POST", resend, "", 403, "forbidden", openapitest.Header("Cookie", SessionCookie+"="+freshTok), evil)
	c.Code("POST", resend, "", 401, "unauthorized")
	first := token("fresh-lc@example.com", identity.TemplateVerifyEmail)
	env.Clock.Advance(identity.VerificationResendGap)
	c.Do("POST", resend, "", 202, openapitest.Bearer(freshTok))
	c.Do("POST", "/v1/email/verify", `{"token":"`+first+`"}`, 200)
	c.Code("POST", "/v1/email/verify", `{"token":"`+first+`"}`, 410, "token_used")
	c.Code("POST", resend, "", 409, "conflict", openapitest.Bearer(freshTok))
	c.Code("POST", "/v1/email/verify", `{"token":"no-such-token"}`, 404, "not_found")
	c.Code("POST", "/v1/email/verify", `{"token":" "}`, 422, "validation_failed")
	c.Code("POST", "/v1/email/verify", `{"token":[]}`, 400, "malformed_json")
	c.Code("POST", "/v1/email/verify", `{}`, 415, "unsupported_media_type", plain)
	c.Code("POST", "/v1/email/verify", big, 413, "body_too_large")

	// Password reset.
	reset, confirm := "/v1/password/reset", "/v1/password/reset/confirm"
	c.Do("POST", reset, `{"email":"fresh-lc@example.com"}`, 202)
	c.Do("POST", reset, `{"email":"nobody@example.com"}`, 202)
	c.Code("POST", reset, `{"email":"nope"}`, 422, "validation_failed")
	c.Code("POST", reset, `{"email":[]}`, 400, "malformed_json")
	c.Code("POST", reset, `{}`, 415, "unsupported_media_type", plain)
	c.Code("POST", reset, big, 413, "body_too_large")
	rt := token("fresh-lc@example.com", identity.TemplatePasswordReset)
	c.Code("POST", confirm, `{"token":"`+rt+`","password":"short"}`, 422, "validation_failed")
	c.Do("POST", confirm, `{"token":"`+rt+`","password":"another horse battery"}`, 200)
	c.Code("POST", confirm, `{"token":"`+rt+`","password":"another horse battery"}`, 410, "token_used")
	c.Code("POST", confirm, `{"token":"no-such-token","password":"another horse battery"}`, 404, "not_found")
	c.Code("POST", confirm, `{"token":[]}`, 400, "malformed_json")
	c.Code("POST", confirm, `{}`, 415, "unsupported_media_type", plain)
	c.Code("POST", confirm, big, 413, "body_too_large")
	c.Code("GET", "/v1/me", "", 401, "unauthorized", openapitest.Bearer(freshTok)) // the reset ended it

	// Email change.
	var s struct{ Token string }
	c.JSON("POST", "/v1/session", `{"email":"fresh-lc@example.com","password":"another horse battery"}`, 201, &s)
	change := "/v1/me/email"
	c.Code("POST", change, `{"email":"moved-lc@example.com","password":"wrong password"}`, 403, "invalid_credentials", openapitest.Bearer(s.Token))
	c.Code("POST", change, `{"email":"nope","password":"x"}`, 422, "validation_failed", openapitest.Bearer(s.Token))
	c.Code("POST", change, `{"email":"x@example.com"`, 400, "malformed_json", openapitest.Bearer(s.Token))
	c.Code("POST", change, `{}`, 415, "unsupported_media_type", openapitest.Bearer(s.Token), plain)
	c.Code("POST", change, big, 413, "body_too_large", openapitest.Bearer(s.Token))
	c.Code("POST", change, `{"email":"moved-lc@example.com","password":"x"}`, 401, "unauthorized")
	c.Do("POST", change, `{"email":"moved-lc@example.com","password":"another horse battery"}`, 202, openapitest.Bearer(s.Token))
	c.Do("POST", change, `{"email":"taken-lc@example.com","password":"another horse battery"}`, 202, openapitest.Bearer(s.Token))
	ct := token("moved-lc@example.com", identity.TemplateEmailChangeConfirm)
	taken := token("taken-lc@example.com", identity.TemplateEmailChangeConfirm)
	ec := "/v1/email/change/confirm"
	c.Do("POST", ec, `{"token":"`+ct+`"}`, 200)
	c.Code("POST", ec, `{"token":"`+ct+`"}`, 410, "token_used")
	c.Code("POST", ec, `{"token":"no-such-token"}`, 404, "not_found")
	c.Code("POST", ec, `{"token":" "}`, 422, "validation_failed")
	c.Code("POST", ec, `{"token":[]}`, 400, "malformed_json")
	c.Code("POST", ec, `{}`, 415, "unsupported_media_type", plain)
	c.Code("POST", ec, big, 413, "body_too_large")
	// The second request's link died with the old address; an address
	// taken after the link went out is 409.
	c.Code("POST", ec, `{"token":"`+taken+`"}`, 410, "token_used")
	var s2 struct{ Token string }
	c.JSON("POST", "/v1/session", `{"email":"moved-lc@example.com","password":"another horse battery"}`, 201, &s2)
	c.Do("POST", change, `{"email":"race-lc@example.com","password":"another horse battery"}`, 202, openapitest.Bearer(s2.Token))
	c.Do("POST", "/v1/users", `{"email":"race-lc@example.com",`+pw+`}`, 201)
	c.Code("POST", ec, `{"token":"`+token("race-lc@example.com", identity.TemplateEmailChangeConfirm)+`"}`, 409, "conflict")

	// Wrong passwords count toward the lockout (threshold 5).
	var s3 struct{ Token string }
	c.JSON("POST", "/v1/session", `{"email":"moved-lc@example.com","password":"another horse battery"}`, 201, &s3)
	for range 5 {
		c.Code("POST", change, `{"email":"other-lc@example.com","password":"wrong password"}`, 403, "invalid_credentials", openapitest.Bearer(s3.Token))
	}
	c.Code("POST", change, `{"email":"other-lc@example.com","password":"another horse battery"}`, 423, "account_locked", openapitest.Bearer(s3.Token))
}
