package parlor

import (
	"io/fs"
	"net/http"

	"github.com/platformco/platform/internal/httpx"
)

// New returns parlor's handler: every page, the embedded static files and
// the probes, behind the security headers and cross-origin protection of
// every state-changing form.
func New(d Deps) (http.Handler, error) {
	s, err := newServer(d)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", httpx.Healthz())
	ready := d.Ready
	if ready == nil {
		ready = httpx.NoDatabase
	}
	mux.Handle("GET /readyz", httpx.Readyz(ready))
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	mux.Handle("GET /static/", http.StripPrefix("/static/", staticFiles(static)))
	mux.Handle("GET /favicon.ico", favicon(static))

	mux.HandleFunc("GET /{$}", s.landing)
	mux.HandleFunc("GET /signup", s.signupForm)
	mux.HandleFunc("POST /signup", s.signup)
	mux.HandleFunc("GET /signin", s.signinForm)
	mux.HandleFunc("POST /signin", s.signin)
	mux.HandleFunc("POST /signout", s.signout)
	mux.HandleFunc("POST /signin/mfa", s.signinMFA)
	mux.Handle("GET /app/security", s.authed(s.security))
	mux.Handle("POST /app/security/mfa", s.authed(s.enrolMFA))
	mux.Handle("POST /app/security/mfa/confirm", s.authed(s.confirmMFA))
	mux.Handle("POST /app/security/mfa/disable", s.authed(s.disableMFA))
	mux.Handle("GET /app/accounts/{id}/api_keys", s.authed(s.apiKeys))
	mux.Handle("POST /app/accounts/{id}/api_keys", s.authed(s.createAPIKey))
	mux.Handle("POST /app/accounts/{id}/api_keys/{key}/revoke", s.authed(s.revokeAPIKey))
	mux.HandleFunc("GET /invitations/accept", s.invitationForm)
	mux.Handle("POST /invitations/accept", s.authed(s.acceptInvitation))
	mux.HandleFunc("GET /verify", s.verifyForm)
	mux.HandleFunc("POST /verify", s.verify)
	mux.HandleFunc("GET /reset", s.resetForm)
	mux.HandleFunc("POST /reset", s.reset)
	mux.HandleFunc("GET /email/confirm", s.confirmEmailForm)
	mux.HandleFunc("POST /email/confirm", s.confirmEmail)
	mux.Handle("GET /app/settings", s.authed(s.settings))
	mux.Handle("POST /app/settings/verification", s.authed(s.resendVerification))
	mux.Handle("POST /app/settings/email", s.authed(s.changeEmail))
	mux.Handle("POST /app/settings/password", s.authed(s.changePassword))
	mux.Handle("POST /app/settings/avatar", s.authed(s.uploadAvatar))
	mux.Handle("POST /app/settings/avatar/remove", s.authed(s.removeAvatar))
	mux.Handle("POST /app/settings/sessions/others", s.authed(s.endOtherSessions))
	mux.Handle("POST /app/settings/sessions/everywhere", s.authed(s.signOutEverywhere))
	mux.Handle("POST /app/settings/sessions/{session}/end", s.authed(s.endSession))
	mux.Handle("POST /app/settings/applications/{client}/disconnect", s.authed(s.disconnectApp))
	// Web Push (push.go)
	mux.HandleFunc("GET /sw.js", s.serviceWorker)
	mux.Handle("POST /app/settings/push", s.authed(s.subscribePush))
	mux.Handle("POST /app/settings/push/{sub}/delete", s.authed(s.deletePush))

	mux.Handle("GET /app", s.authed(s.accounts))
	mux.Handle("POST /app/accounts", s.authed(s.createAccount))
	mux.Handle("GET /app/accounts/{id}", s.authed(s.account))
	mux.Handle("POST /app/accounts/{id}/rename", s.authed(s.renameAccount))
	mux.Handle("POST /app/accounts/{id}/delete", s.authed(s.deleteAccount))
	mux.Handle("POST /app/accounts/{id}/invitations", s.authed(s.invite))
	mux.Handle("POST /app/accounts/{id}/invitations/{inv}/resend", s.authed(s.invitationAction(s.api.ResendInvitation, "resent")))
	mux.Handle("POST /app/accounts/{id}/invitations/{inv}/revoke", s.authed(s.invitationAction(s.api.RevokeInvitation, "inv_gone")))
	mux.Handle("POST /app/accounts/{id}/members/{user}/role", s.authed(s.changeRole))
	mux.Handle("POST /app/accounts/{id}/members/{user}/remove", s.authed(s.removeMember))
	mux.Handle("GET /app/accounts/{id}/entitlements", s.authed(s.entitlements))
	mux.Handle("POST /app/accounts/{id}/claim", s.authed(s.claim))
	mux.Handle("GET /app/accounts/{id}/installations", s.authed(s.installations))
	mux.Handle("POST /app/accounts/{id}/installations/{iid}/deactivate", s.authed(s.deactivateInstallation))
	mux.Handle("GET /app/accounts/{id}/releases", s.authed(s.releases))
	mux.Handle("POST /app/accounts/{id}/approvals", s.authed(s.approve))
	mux.Handle("GET /app/accounts/{id}/activity", s.authed(s.activity))
	// billing (billing.go)
	mux.HandleFunc("GET /pricing", s.pricing)
	mux.Handle("GET /app/accounts/{id}/billing", s.authed(s.billing))
	mux.Handle("POST /app/accounts/{id}/billing/checkout", s.authed(s.buy))
	mux.Handle("GET /app/accounts/{id}/downloads", s.authed(s.downloads))
	mux.Handle("POST /app/accounts/{id}/downloads", s.authed(s.fetch))
	// pantry (projects.go): the public directory and the account's tab
	mux.HandleFunc("GET /projects", s.directory)
	mux.HandleFunc("GET /projects/{slug}", s.projectPage)
	mux.Handle("POST /projects/{slug}/star", s.authed(s.star(true)))
	mux.Handle("POST /projects/{slug}/unstar", s.authed(s.star(false)))
	mux.Handle("GET /app/accounts/{id}/projects", s.authed(s.accountProjects))
	mux.Handle("POST /app/accounts/{id}/projects", s.authed(s.publishProject))
	mux.Handle("POST /app/accounts/{id}/projects/{slug}", s.authed(s.editProject))
	mux.Handle("POST /app/accounts/{id}/projects/{slug}/delete", s.authed(s.deleteProject))
	// courier and keyholder (delivery.go)
	mux.Handle("GET /app/preferences", s.authed(s.preferences))
	mux.Handle("POST /app/preferences", s.authed(s.updatePreferences))
	mux.Handle("POST /app/accounts/{id}/downloads/exchange", s.authed(s.exchange))
	mux.Handle("GET /app/accounts/{id}/pulls", s.authed(s.pulls))
	mux.Handle("GET /app/accounts/{id}/webhooks", s.authed(s.webhooks))
	mux.Handle("POST /app/accounts/{id}/webhooks", s.authed(s.createWebhook))
	mux.Handle("POST /app/accounts/{id}/webhooks/{eid}/disable", s.authed(s.disableWebhook))
	mux.Handle("POST /app/accounts/{id}/webhooks/{eid}/enable", s.authed(s.enableWebhook))
	mux.Handle("POST /app/accounts/{id}/webhooks/{eid}/delete", s.authed(s.deleteWebhook))
	mux.Handle("POST /app/accounts/{id}/webhooks/{eid}/rotate", s.authed(s.rotateWebhook))
	mux.Handle("GET /app/accounts/{id}/webhooks/{eid}/deliveries", s.authed(s.deliveries))
	mux.Handle("POST /app/accounts/{id}/webhooks/{eid}/deliveries/{did}/retry", s.authed(s.retryDelivery))
	// muse (models.go): the account's Models page and its playground
	mux.Handle("GET /app/accounts/{id}/models", s.authed(s.models))
	mux.Handle("POST /app/accounts/{id}/models/playground", s.authed(s.playground))
	mux.Handle("POST /app/accounts/{id}/models/credentials", s.authed(s.addProviderCredential))
	mux.Handle("POST /app/accounts/{id}/models/credentials/{cred}/remove", s.authed(s.removeProviderCredential))
	mux.Handle("POST /app/accounts/{id}/models/aliases", s.authed(s.putModelAlias))
	mux.Handle("POST /app/accounts/{id}/models/aliases/{alias}/delete", s.authed(s.deleteModelAlias))
	mux.Handle("POST /app/accounts/{id}/models/budget", s.authed(s.setModelBudget))

	// The OpenID Provider's sign-in and consent pages (oauth.go).
	mux.HandleFunc("GET /oauth/sign-in", s.oauthSignInForm)
	mux.HandleFunc("POST /oauth/sign-in", s.oauthSignIn)
	mux.HandleFunc("GET /oauth/consent", s.oauthConsentForm)
	mux.HandleFunc("POST /oauth/consent", s.oauthConsent)
	mux.HandleFunc("GET /oauth/error", s.oauthError)
	mux.HandleFunc("GET /oauth/signed-out", s.oauthSignedOut)

	mux.Handle("GET /operator", s.staffOnly(s.operatorHome))
	mux.Handle("GET /operator/{$}", s.staffOnly(func(w http.ResponseWriter, r *http.Request, _ *session) {
		http.Redirect(w, r, "/operator", http.StatusMovedPermanently)
	}))
	mux.Handle("GET /operator/users", s.staffOnly(s.operatorUsers))
	mux.Handle("GET /operator/accounts", s.staffOnly(s.operatorAccountLookup))
	mux.Handle("GET /operator/accounts/{id}", s.staffOnly(s.operatorAccount))
	mux.Handle("GET /operator/entitlements", s.staffOnly(s.operatorEntitlements))
	mux.Handle("GET /operator/grant", s.staffOnly(s.grantForm))
	mux.Handle("POST /operator/grant", s.staffOnly(s.grant))
	mux.Handle("GET /operator/entitlements/{eid}/revoke", s.staffOnly(s.revokeForm))
	mux.Handle("POST /operator/entitlements/{eid}/revoke", s.staffOnly(s.revoke))
	mux.Handle("GET /operator/releases", s.staffOnly(s.operatorReleases))
	mux.Handle("POST /operator/releases", s.staffOnly(s.publish))
	mux.Handle("POST /operator/releases/keys", s.staffOnly(s.createPublishKey))
	mux.Handle("POST /operator/releases/keys/{kid}/revoke", s.staffOnly(s.revokePublishKey))
	mux.Handle("GET /operator/payments", s.staffOnly(s.operatorPayments))
	mux.Handle("POST /operator/payments/{rid}/grant", s.staffOnly(s.reconcile("grant")))
	mux.Handle("POST /operator/payments/{rid}/revoke", s.staffOnly(s.reconcile("revoke")))
	mux.Handle("GET /operator/plans", s.staffOnly(s.operatorPlans))
	mux.Handle("GET /operator/audit", s.staffOnly(s.operatorAudit))
	mux.Handle("POST /operator/plans", s.staffOnly(s.savePlan))
	mux.Handle("GET /operator/plans/{pid}", s.staffOnly(s.operatorPlan))
	mux.Handle("POST /operator/plans/{pid}", s.staffOnly(s.savePlan))
	// Anything else under /operator is the same 404 for everyone who is
	// not staff, and a plain 404 for staff.
	mux.Handle("/operator/", s.staffOnly(func(w http.ResponseWriter, r *http.Request, sess *session) {
		s.notFound(w, r, &sess.Me)
	}))

	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { s.notFound(w, r, nil) })

	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.render(w, r, http.StatusForbidden, "error", &page{Title: "Refused",
			Error: "This form was sent from another site, so it was refused. Open the page here and send it again."})
	}))
	return httpx.Chain(httpx.RecordRoute(mux),
		httpx.Observe(d.Logger, func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "internal error", http.StatusInternalServerError)
		}),
		secureHeaders,
		forwardFor,
		cop.Handler,
		s.readForm,
	), nil
}

// staticFiles serves the embedded assets. They change only with the
// binary, so a browser may keep them for an hour.
func staticFiles(fsys fs.FS) http.Handler {
	files := http.FileServerFS(fsys)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "" || r.URL.Path[len(r.URL.Path)-1] == '/' {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Cache-Control", "public, max-age=3600")
		files.ServeHTTP(w, r)
	})
}

// favicon answers the address browsers ask every site for with the
// embedded SVG icon the pages also link.
func favicon(fsys fs.FS) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := fs.ReadFile(fsys, "favicon.svg")
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "image/svg+xml")
		w.Header().Set("Cache-Control", "public, max-age=86400")
		_, _ = w.Write(b)
	})
}
