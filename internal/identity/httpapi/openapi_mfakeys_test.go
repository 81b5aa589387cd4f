package httpapi

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"

	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/identitytest"
	"github.com/platformco/platform/internal/openapi/openapitest"
)

func totpCode(t *testing.T, secret string, at time.Time) string {
	t.Helper()
	c, err := totp.GenerateCodeCustom(secret, at, totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// exerciseMFAAndKeys is the conformance suite's part for MFA and API
// keys (identity-lifecycle.md §4, §5), including the isolation matrix of
// a key: its own account's read 200, any other identity route 403
// insufficient_scope, another account's routes 404. ownerTok is a live
// session of owner@example.com.
func exerciseMFAAndKeys(t *testing.T, c *openapitest.Client, env *identitytest.Env, ownerTok string) {
	t.Helper()
	ctx := context.Background()
	const pw = `"password":"correct horse battery"`
	big := `{"code":"` + strings.Repeat("a", httpx.MaxBodyBytes) + `"}`
	plain := openapitest.Header("Content-Type", "text/plain")
	evil := openapitest.Header("Origin", "https://evil.example")
	cookie := func(tok string) openapitest.Option { return openapitest.Header("Cookie", SessionCookie+"="+tok) }
	bearer := openapitest.Bearer
	user := func(email string) string {
		env.Register(t, email)
		env.Verify(t, email) // an invitee must hold a verified address
		return env.Login(t, email)
	}

	// Enrolment and confirmation.
	aTok := user("mfa-a@example.com")
	c.Code("POST", "/v1/me/mfa/totp", `{"password":1}`, 400, "malformed_json", bearer(aTok))
	c.Code("POST", "/v1/me/mfa/totp", `{`+pw+`}`, 415, "unsupported_media_type", bearer(aTok), plain)
	c.Code("POST", "/v1/me/mfa/totp", big, 413, "body_too_large", bearer(aTok))
	c.Code("POST", "/v1/me/mfa/totp", `{"password":""}`, 422, "validation_failed", bearer(aTok))
	c.Code("POST", "/v1/me/mfa/totp", `{"password":"wrong password"}`, 403, "invalid_credentials", bearer(aTok))
	c.Code("POST", "/v1/me/mfa/totp", `{`+pw+`}`, 403, "forbidden", cookie(aTok), evil)
	c.Code("POST", "/v1/me/mfa/totp", `{`+pw+`}`, 401, "unauthorized")
	c.Code("POST", "/v1/me/mfa/totp/confirm", `{"code":"123456"}`, 404, "not_found", bearer(aTok))
	var en struct {
		Secret        string   `json:"secret"`
		RecoveryCodes []string `json:"recovery_codes"`
	}
	type mfaState struct {
		Enabled   bool       `json:"enabled"`
		EnabledAt *time.Time `json:"enabled_at"`
		Pending   bool       `json:"pending"`
	}
	state := func(want mfaState) {
		t.Helper()
		var got mfaState
		c.JSON("GET", "/v1/me/mfa", "", 200, &got, bearer(aTok))
		if got.Enabled != want.Enabled || got.Pending != want.Pending || (got.EnabledAt != nil) != want.Enabled {
			t.Errorf("GET /v1/me/mfa = %+v, want enabled %t, pending %t", got, want.Enabled, want.Pending)
		}
	}
	state(mfaState{})
	c.JSON("POST", "/v1/me/mfa/totp", `{`+pw+`}`, 201, &en, bearer(aTok))
	state(mfaState{Pending: true})
	for _, tc := range []struct {
		path string
		ok   int
	}{{"/v1/me/mfa/totp/confirm", 200}, {"/v1/me/mfa/recovery_codes", 201}, {"/v1/me/mfa/totp", 204}} {
		method := "POST"
		if tc.ok == 204 {
			method = "DELETE"
		}
		c.Code(method, tc.path, `{"code":1}`, 400, "malformed_json", bearer(aTok))
		c.Code(method, tc.path, `{"code":"1"}`, 415, "unsupported_media_type", bearer(aTok), plain)
		c.Code(method, tc.path, big, 413, "body_too_large", bearer(aTok))
		c.Code(method, tc.path, `{"code":"1"}`, 403, "forbidden", cookie(aTok), evil)
		c.Code(method, tc.path, `{"code":"1"}`, 401, "unauthorized")
	}
	c.Code("POST", "/v1/me/mfa/totp/confirm", `{"code":"000000x"}`, 401, "invalid_code", bearer(aTok))
	c.Do("POST", "/v1/me/mfa/totp/confirm", `{"code":"`+totpCode(t, en.Secret, env.Clock.Now())+`"}`, 200, bearer(aTok))
	env.Clock.Advance(30 * time.Second)
	state(mfaState{Enabled: true})

	// Sign-in with MFA.
	var mr struct{ Challenge string }
	c.JSON("POST", "/v1/session", `{"email":"mfa-a@example.com",`+pw+`}`, 401, &mr)
	if mr.Challenge == "" {
		t.Fatal("mfa_required without a challenge")
	}
	c.Code("POST", "/v1/session/mfa", `{"challenge":1}`, 400, "malformed_json")
	c.Code("POST", "/v1/session/mfa", `{}`, 415, "unsupported_media_type", plain)
	c.Code("POST", "/v1/session/mfa", big, 413, "body_too_large")
	c.Code("POST", "/v1/session/mfa", `{"challenge":"nope","code":"123456"}`, 404, "not_found")
	c.Code("POST", "/v1/session/mfa", `{"challenge":"`+mr.Challenge+`","code":"abcde-fghij"}`, 401, "invalid_code")
	code := totpCode(t, en.Secret, env.Clock.Now())
	c.Do("POST", "/v1/session/mfa", `{"challenge":"`+mr.Challenge+`","code":"`+code+`"}`, 201)
	env.Clock.Advance(30 * time.Second)
	c.Code("POST", "/v1/session/mfa", `{"challenge":"`+mr.Challenge+`","code":"`+totpCode(t, en.Secret, env.Clock.Now())+`"}`, 410, "token_used")
	c.JSON("POST", "/v1/session", `{"email":"mfa-a@example.com",`+pw+`}`, 401, &mr)
	env.Clock.Advance(identity.MFAChallengeTTL + time.Second)
	c.Code("POST", "/v1/session/mfa", `{"challenge":"`+mr.Challenge+`","code":"`+totpCode(t, en.Secret, env.Clock.Now())+`"}`, 410, "token_expired")

	// Recovery codes and turning MFA off.
	var fresh struct {
		RecoveryCodes []string `json:"recovery_codes"`
	}
	c.JSON("POST", "/v1/me/mfa/recovery_codes", `{"code":"`+en.RecoveryCodes[0]+`"}`, 201, &fresh, bearer(aTok))
	c.Code("POST", "/v1/me/mfa/recovery_codes", `{"code":"`+en.RecoveryCodes[1]+`"}`, 401, "invalid_code", bearer(aTok))
	c.Do("DELETE", "/v1/me/mfa/totp", `{"code":"`+fresh.RecoveryCodes[0]+`"}`, 204, bearer(aTok))
	c.Code("DELETE", "/v1/me/mfa/totp", `{"code":"`+fresh.RecoveryCodes[1]+`"}`, 404, "not_found", bearer(aTok))
	c.Code("POST", "/v1/me/mfa/recovery_codes", `{"code":"123456"}`, 404, "not_found", bearer(aTok))

	// A locked user: every MFA route answers 423.
	bTok := user("mfa-b@example.com")
	b := env.Principal(t, bTok, "")
	bEn, err := env.Service.EnrolTOTP(ctx, b, identitytest.Password)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Service.ConfirmTOTP(ctx, b, totpCode(t, bEn.Secret, env.Clock.Now())); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Service.EnrolTOTP(ctx, b, identitytest.Password); err != nil { // a rotation, pending
		t.Fatal(err)
	}
	c.JSON("POST", "/v1/session", `{"email":"mfa-b@example.com",`+pw+`}`, 401, &mr)
	for i := 0; i < env.Options.LockoutThreshold; i++ {
		c.Code("POST", "/v1/session", `{"email":"mfa-b@example.com","password":"wrong password"}`, 401, "unauthorized")
	}
	c.Code("POST", "/v1/session/mfa", `{"challenge":"`+mr.Challenge+`","code":"123456"}`, 423, "account_locked")
	c.Code("POST", "/v1/me/mfa/totp", `{`+pw+`}`, 423, "account_locked", bearer(bTok))
	c.Code("POST", "/v1/me/mfa/totp/confirm", `{"code":"123456"}`, 423, "account_locked", bearer(bTok))
	c.Code("POST", "/v1/me/mfa/recovery_codes", `{"code":"123456"}`, 423, "account_locked", bearer(bTok))
	c.Code("DELETE", "/v1/me/mfa/totp", `{"code":"123456"}`, 423, "account_locked", bearer(bTok))

	// A password reset of a user with MFA needs the second factor too.
	confirm := "/v1/password/reset/confirm"
	resetOf := func(email string) string {
		c.Do("POST", "/v1/password/reset", `{"email":"`+email+`"}`, 202)
		return `{"token":"` + env.LinkToken(t, email, identity.TemplatePasswordReset) + `","password":"another horse battery"`
	}
	c.Code("POST", confirm, resetOf("mfa-b@example.com")+`,"code":"123456"}`, 423, "account_locked")
	cp := env.Principal(t, user("mfa-c@example.com"), "")
	cEn, err := env.Service.EnrolTOTP(ctx, cp, identitytest.Password)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.Service.ConfirmTOTP(ctx, cp, totpCode(t, cEn.Secret, env.Clock.Now())); err != nil {
		t.Fatal(err)
	}
	env.Clock.Advance(30 * time.Second)
	cReset := resetOf("mfa-c@example.com")
	c.Code("POST", confirm, cReset+`}`, 403, "mfa_required")
	c.Code("POST", confirm, cReset+`,"code":"abcde-fghjk"}`, 401, "invalid_code")
	c.Do("POST", confirm, cReset+`,"code":"`+totpCode(t, cEn.Secret, env.Clock.Now())+`"}`, 200)

	// API keys.
	var team, other struct{ ID string }
	c.JSON("POST", "/v1/accounts", `{"name":"Key Holders"}`, 201, &team, bearer(ownerTok))
	c.JSON("POST", "/v1/accounts", `{"name":"Key Strangers"}`, 201, &other, bearer(ownerTok))
	keys := "/v1/accounts/" + team.ID + "/api_keys"
	memberTok := user("key-member@example.com")
	env.Join(t, env.Principal(t, ownerTok, team.ID), env.Principal(t, memberTok, ""), identity.RoleMember)
	strangerTok := user("key-stranger@example.com")
	req := `{"name":"ci","scopes":["artifacts:fetch","account:read"]}`
	var created struct {
		APIKey struct{ ID string } `json:"api_key"`
		Token  string
	}
	c.JSON("POST", keys, req, 201, &created, bearer(ownerTok))
	c.Code("POST", keys, `{"name":"ci","scopes":["everything"]}`, 422, "validation_failed", bearer(ownerTok))
	c.Code("POST", keys, `{"name":1}`, 400, "malformed_json", bearer(ownerTok))
	c.Code("POST", keys, req, 415, "unsupported_media_type", bearer(ownerTok), plain)
	c.Code("POST", keys, big, 413, "body_too_large", bearer(ownerTok))
	c.Code("POST", keys, req, 401, "unauthorized")
	c.Code("POST", keys, req, 403, "forbidden", bearer(memberTok))
	c.Code("POST", keys, req, 404, "not_found", bearer(strangerTok))
	c.Do("GET", keys, "", 200, bearer(ownerTok))
	c.Code("GET", keys, "", 401, "unauthorized")
	c.Code("GET", keys, "", 403, "forbidden", bearer(memberTok))
	c.Code("GET", keys, "", 404, "not_found", bearer(strangerTok))

	// The isolation matrix of a key.
	key := bearer(created.Token)
	var acct struct {
		Role   string
		Scopes []string
	}
	c.JSON("GET", "/v1/accounts/"+team.ID, "", 200, &acct, key)
	if acct.Role != "api_key" || len(acct.Scopes) != 2 {
		t.Errorf("the key reads its account as %+v, want role api_key with its two scopes", acct)
	}
	public := map[string]bool{"POST /v1/users": true, "POST /v1/session": true, "POST /v1/session/mfa": true,
		"POST /v1/email/verify": true, "POST /v1/password/reset": true, "POST /v1/password/reset/confirm": true,
		"POST /v1/email/change/confirm": true, "POST /v1/invitations/preview": true}
	for _, rt := range oaRoutes(team.ID, b.User.ID) {
		switch {
		case public[rt.method+" "+rt.path]:
		case rt.method == "GET" && rt.path == "/v1/accounts/"+team.ID:
		default:
			c.Code(rt.method, rt.path, rt.body, 403, "insufficient_scope", key)
		}
	}
	for _, rt := range oaRoutes(other.ID, b.User.ID) {
		if strings.HasPrefix(rt.path, "/v1/accounts/"+other.ID) {
			c.Code(rt.method, rt.path, rt.body, 404, "not_found", key)
		}
	}

	c.Code("DELETE", keys+"/"+created.APIKey.ID, "", 401, "unauthorized")
	c.Code("DELETE", keys+"/"+created.APIKey.ID, "", 403, "forbidden", bearer(memberTok))
	c.Code("DELETE", keys+"/"+created.APIKey.ID, "", 404, "not_found", bearer(strangerTok))
	c.Do("DELETE", keys+"/"+created.APIKey.ID, "", 204, bearer(ownerTok))
	c.Code("DELETE", keys+"/"+created.APIKey.ID, "", 404, "not_found", bearer(ownerTok))
	c.Code("GET", "/v1/accounts/"+team.ID, "", 401, "unauthorized", key)
}
