package httpapi

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/keyholder"
)

type handlers struct {
	svc      *keyholder.Service
	identity Identity
	logger   *slog.Logger
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

// pullJSON is one pull: credential is null and file names the file for a
// download in a browser.
type pullJSON struct {
	ID         int64     `json:"id"`
	Credential *string   `json:"credential"`
	File       *string   `json:"file"`
	Repository string    `json:"repository"`
	Tag        string    `json:"tag"`
	Digest     string    `json:"digest"`
	PulledAt   time.Time `json:"pulled_at"`
}

// pulls is a member's read of their account's pulls.
func (h *handlers) pulls(w http.ResponseWriter, r *http.Request) {
	accountID := r.PathValue("account_id")
	m, err := h.member(r, accountID)
	if err != nil {
		writeError(w, r, h.logger, err)
		return
	}
	page, err := h.svc.Pulls(r.Context(), m, r.URL.Query().Get("cursor"))
	h.answerPulls(w, r, page, err)
}

// staffPulls is the operator console's read of any account's pulls.
func (h *handlers) staffPulls(w http.ResponseWriter, r *http.Request) {
	st, err := h.staff(r)
	if err != nil {
		writeError(w, r, h.logger, err)
		return
	}
	page, err := h.svc.StaffPulls(r.Context(), st, r.PathValue("account_id"), r.URL.Query().Get("cursor"))
	h.answerPulls(w, r, page, err)
}

// answerPulls answers a read of the pull record.
func (h *handlers) answerPulls(w http.ResponseWriter, r *http.Request, page keyholder.PullPage, err error) {
	if err != nil {
		writeError(w, r, h.logger, err)
		return
	}
	out := make([]pullJSON, len(page.Pulls))
	for i, p := range page.Pulls {
		out[i] = pullJSON{ID: p.ID, Repository: p.Repository, Tag: p.Tag, Digest: p.Digest, PulledAt: p.PulledAt}
		if p.CredentialID != "" {
			cred := keyholder.UsernamePrefix + p.CredentialID
			out[i].Credential = &cred
		}
		if p.File != "" {
			out[i].File = &p.File
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	var next *string
	if page.NextCursor != "" {
		next = &page.NextCursor
	}
	httpx.WriteJSON(w, http.StatusOK, struct {
		Pulls      []pullJSON `json:"pulls"`
		NextCursor *string    `json:"next_cursor"`
	}{out, next})
}
