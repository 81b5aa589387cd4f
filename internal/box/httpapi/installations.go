package httpapi

import (
	"net/http"
	"time"

	"github.com/platformco/platform/internal/box"
	"github.com/platformco/platform/internal/httpx"
)

// installationJSON is an installation as its account reads it.
type installationJSON struct {
	ID          string    `json:"id"`
	Product     string    `json:"product"`
	Fingerprint string    `json:"fingerprint"`
	Name        string    `json:"name"`
	Version     *string   `json:"version"`
	Status      string    `json:"status"`
	LastSeenAt  time.Time `json:"last_seen_at"`
	CreatedAt   time.Time `json:"created_at"`
}

func installationView(i box.Installation) installationJSON {
	return installationJSON{ID: i.ID, Product: i.Product, Fingerprint: i.Fingerprint, Name: i.Name, Version: i.Version,
		Status: i.Status, LastSeenAt: i.LastSeenAt, CreatedAt: i.CreatedAt}
}

type installationResponse struct {
	Installation installationJSON `json:"installation"`
}

// licenseText is the licence file as a JSON string, or null.
func licenseText(file []byte) *string {
	if file == nil {
		return nil
	}
	s := string(file)
	return &s
}

func (h *handlers) activate(w http.ResponseWriter, r *http.Request) {
	m, ok := h.member(w, r, false)
	if !ok {
		return
	}
	var body struct {
		Product     *string `json:"product"`
		Fingerprint *string `json:"fingerprint"`
		Name        *string `json:"name"`
		Version     *string `json:"version"`
	}
	if !h.decode(w, r, &body) {
		return
	}
	a, err := h.svc.Activate(r.Context(), m, bearer(r), box.ActivateInput{
		Product: body.Product, Fingerprint: body.Fingerprint, Name: body.Name, Version: body.Version,
	})
	if err != nil {
		writeError(w, r, h.logger, err)
		return
	}
	status := http.StatusOK
	if a.Created {
		status = http.StatusCreated
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, status, struct {
		Installation installationJSON `json:"installation"`
		License      *string          `json:"license"`
	}{installationView(a.Installation), licenseText(a.License)})
}

func (h *handlers) accountInstallations(w http.ResponseWriter, r *http.Request) {
	m, ok := h.member(w, r, false)
	if !ok {
		return
	}
	list, err := h.svc.AccountInstallations(r.Context(), m)
	if err != nil {
		writeError(w, r, h.logger, err)
		return
	}
	out := struct {
		Installations []installationJSON `json:"installations"`
	}{Installations: make([]installationJSON, 0, len(list))}
	for _, i := range list {
		out.Installations = append(out.Installations, installationView(i))
	}
	httpx.WriteJSON(w, http.StatusOK, out)
}

// installation runs the check of the routes under /v1/installations/{id}:
// the caller is a member of the installation's account, or an API key of
// it with installations:write.
func (h *handlers) installation(w http.ResponseWriter, r *http.Request) (box.Member, box.Installation, bool) {
	m, inst, err := h.svc.InstallationMember(r.Context(), bearer(r), r.PathValue("id"))
	if err == nil {
		err = m.Allow(scopeInstallations)
	}
	if err != nil {
		writeError(w, r, h.logger, err)
		return box.Member{}, box.Installation{}, false
	}
	return m, inst, true
}

func (h *handlers) heartbeat(w http.ResponseWriter, r *http.Request) {
	m, inst, ok := h.installation(w, r)
	if !ok {
		return
	}
	var body struct {
		Version *string `json:"version"`
	}
	// The body is optional: a heartbeat with nothing to tell sends none.
	if r.ContentLength != 0 && !h.decode(w, r, &body) {
		return
	}
	inst, err := h.svc.Heartbeat(r.Context(), m, inst, box.HeartbeatInput{Version: body.Version})
	if err != nil {
		writeError(w, r, h.logger, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, installationResponse{installationView(inst)})
}

func (h *handlers) deactivate(w http.ResponseWriter, r *http.Request) {
	m, inst, ok := h.installation(w, r)
	if !ok {
		return
	}
	inst, err := h.svc.Deactivate(r.Context(), m, inst)
	if err != nil {
		writeError(w, r, h.logger, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, installationResponse{installationView(inst)})
}

func (h *handlers) license(w http.ResponseWriter, r *http.Request) {
	m, inst, ok := h.installation(w, r)
	if !ok {
		return
	}
	file, err := h.svc.License(r.Context(), m, bearer(r), inst)
	if err != nil {
		writeError(w, r, h.logger, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, http.StatusOK, struct {
		License string `json:"license"`
	}{string(file)})
}

// operatorInstallationJSON adds the account to an installation.
type operatorInstallationJSON struct {
	installationJSON
	AccountID string `json:"account_id"`
}

func (h *handlers) operatorInstallations(w http.ResponseWriter, r *http.Request) {
	staff, ok := h.staff(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	list, err := h.svc.Installations(r.Context(), staff, box.InstallationQuery{AccountID: q.Get("account_id"), Limit: q.Get("limit")})
	if err != nil {
		writeError(w, r, h.logger, err)
		return
	}
	out := struct {
		Installations []operatorInstallationJSON `json:"installations"`
	}{Installations: make([]operatorInstallationJSON, 0, len(list))}
	for _, i := range list {
		out.Installations = append(out.Installations, operatorInstallationJSON{installationView(i), i.AccountID})
	}
	httpx.WriteJSON(w, http.StatusOK, out)
}

// licenseKeys is public: anyone may verify a licence.
func (h *handlers) licenseKeys(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "public, max-age=300")
	httpx.WriteJSON(w, http.StatusOK, h.svc.LicenseKeys())
}
