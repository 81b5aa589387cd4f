package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/keyholder"
)

type handlers struct {
	svc    *keyholder.Service
	logger *slog.Logger
}

type credentialJSON struct {
	Username     string    `json:"username"`
	Password     string    `json:"password"`
	Registry     string    `json:"registry"`
	Repository   string    `json:"repository"`
	VersionRange *string   `json:"version_range"`
	ExpiresAt    time.Time `json:"expires_at"`
}

func (h *handlers) exchange(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Capability *string `json:"capability"`
	}
	if err := httpx.DecodeJSON(w, r, &body); err != nil {
		writeError(w, r, h.logger, err)
		return
	}
	issued, err := h.svc.Exchange(r.Context(), body.Capability)
	if err != nil {
		writeError(w, r, h.logger, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, http.StatusCreated, struct {
		Credential credentialJSON `json:"credential"`
	}{credentialJSON{
		Username: issued.Username(), Password: issued.Password, Registry: h.svc.Registry(),
		Repository: issued.Repository, VersionRange: issued.VersionRange, ExpiresAt: issued.ExpiresAt,
	}})
}

func (h *handlers) deleteCredential(w http.ResponseWriter, r *http.Request) {
	// The route takes the credential's own Basic auth, so a refusal
	// challenges for it.
	user, pass, ok := r.BasicAuth()
	if !ok || user != r.PathValue("username") {
		w.Header().Set("WWW-Authenticate", `Basic realm="`+h.svc.Registry()+`"`)
		writeError(w, r, h.logger, keyholder.ErrBadCredential)
		return
	}
	if err := h.svc.Revoke(r.Context(), user, pass); err != nil {
		if errs.Code(err) == keyholder.CodeUnauthenticated {
			w.Header().Set("WWW-Authenticate", `Basic realm="`+h.svc.Registry()+`"`)
		}
		writeError(w, r, h.logger, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

type pullJSON struct {
	ID         int64     `json:"id"`
	Credential string    `json:"credential"`
	Repository string    `json:"repository"`
	Tag        string    `json:"tag"`
	Digest     string    `json:"digest"`
	PulledAt   time.Time `json:"pulled_at"`
}

func (h *handlers) pulls(w http.ResponseWriter, r *http.Request) {
	h.answerPulls(w, r, h.svc.Pulls)
}

// answerPulls answers the pull record that read returns for the caller's
// bearer token and the path's account.
func (h *handlers) answerPulls(w http.ResponseWriter, r *http.Request, read func(ctx context.Context, token, accountID string) ([]keyholder.Pull, error)) {
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
		token = ""
	}
	pulls, err := read(r.Context(), strings.TrimSpace(token), r.PathValue("account_id"))
	if err != nil {
		writeError(w, r, h.logger, err)
		return
	}
	out := make([]pullJSON, len(pulls))
	for i, p := range pulls {
		out[i] = pullJSON{ID: p.ID, Credential: keyholder.UsernamePrefix + p.CredentialID, Repository: p.Repository,
			Tag: p.Tag, Digest: p.Digest, PulledAt: p.PulledAt}
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, http.StatusOK, struct {
		Pulls []pullJSON `json:"pulls"`
	}{out})
}

// staffPulls is the operator console's read of any account's pulls.
func (h *handlers) staffPulls(w http.ResponseWriter, r *http.Request) {
	h.answerPulls(w, r, h.svc.StaffPulls)
}
