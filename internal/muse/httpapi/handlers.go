package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/muse"
	"github.com/platformco/platform/internal/service"
)

type handlers struct {
	svc     *muse.Service
	errors  service.Errors // problem+json
	openai  service.Errors // OpenAI's envelope
	maxBody int64
}

// bearer returns the request's bearer credential, or "".
func bearer(r *http.Request) string {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	token = strings.TrimSpace(token)
	if strings.ContainsAny(token, " \t") {
		return ""
	}
	return token
}

func private(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, status, v)
}

// chat is POST /v1/chat/completions.
func (h *handlers) chat(w http.ResponseWriter, r *http.Request) {
	caller, err := h.svc.Invoker(r.Context(), bearer(r), r.Header.Get(muse.OrganizationHeader))
	if err != nil {
		h.openai.Write(w, r, err)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			h.openai.Refuse(w, r, http.StatusUnsupportedMediaType, "unsupported_media_type", "Content-Type must be application/json")
			return
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			h.openai.Refuse(w, r, http.StatusRequestEntityTooLarge, "request_too_large",
				"the request is larger than "+strconv.FormatInt(h.maxBody, 10)+" bytes")
			return
		}
		h.openai.Write(w, r, err)
		return
	}
	req, err := muse.ParseChat(body)
	if err != nil {
		h.openai.Write(w, r, err)
		return
	}
	sw := &chatWriter{w: w, r: r, rc: http.NewResponseController(w)}
	// A completion outlives the server's write timeout: its first byte is
	// bounded by MUSE_UPSTREAM_TIMEOUT, a stream by its upstream.
	_ = sw.rc.SetWriteDeadline(time.Time{})
	err = h.svc.Chat(r.Context(), caller, req, sw)
	var ue *muse.UpstreamError
	switch {
	case err == nil:
	case errors.As(err, &ue) && ue.Status < 500 && len(ue.Body) > 0:
		// The upstream's own refusal of the request, as it gave it.
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(ue.Status)
		_, _ = w.Write(ue.Body)
	case errors.As(err, &ue):
		h.openai.Write(w, r, errs.New(muse.CodeUpstreamFailed, "the model's provider failed: "+ue.Message))
	default:
		h.openai.Write(w, r, err)
	}
}

// chatWriter writes a completion: a JSON body, or server-sent events
// flushed one by one.
type chatWriter struct {
	w       http.ResponseWriter
	r       *http.Request
	rc      *http.ResponseController
	started bool
}

// Reply sends a whole completion and flushes it: the caller has its
// answer while the completion is metered, as a stream's caller has its
// last chunk.
func (c *chatWriter) Reply(body []byte) error {
	h := c.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	c.w.WriteHeader(http.StatusOK)
	if _, err := c.w.Write(body); err != nil {
		return err
	}
	return http.NewResponseController(c.w).Flush()
}

func (c *chatWriter) event(data []byte) error {
	if err := c.r.Context().Err(); err != nil {
		return err
	}
	if !c.started {
		c.started = true
		h := c.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		c.w.WriteHeader(http.StatusOK)
	}
	buf := make([]byte, 0, len(data)+8)
	buf = append(append(append(buf, "data: "...), data...), "\n\n"...)
	if _, err := c.w.Write(buf); err != nil {
		return err
	}
	return c.rc.Flush()
}

func (c *chatWriter) Chunk(chunk []byte) error { return c.event(chunk) }
func (c *chatWriter) End() error               { return c.event([]byte("[DONE]")) }

// Fail ends a stream with an error event, which OpenAI's SDKs raise.
func (c *chatWriter) Fail(err error) {
	msg := "the model's provider failed mid-stream"
	var ue *muse.UpstreamError
	if errors.As(err, &ue) {
		msg += ": " + ue.Message
	}
	b, _ := json.Marshal(openAIError{Error: openAIErrorBody{Message: msg, Type: "server_error", Code: muse.CodeUpstreamFailed}})
	_ = c.event(b)
}

// models is GET /v1/models in OpenAI's list shape.
func (h *handlers) models(w http.ResponseWriter, r *http.Request) {
	caller, err := h.svc.Invoker(r.Context(), bearer(r), r.Header.Get(muse.OrganizationHeader))
	if err != nil {
		h.openai.Write(w, r, err)
		return
	}
	as, err := h.svc.Models(r.Context(), caller)
	if err != nil {
		h.openai.Write(w, r, err)
		return
	}
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	out := make([]model, 0, len(as))
	for _, a := range as {
		m := model{ID: a.Name, Object: "model", OwnedBy: a.AccountID}
		if a.UpdatedAt.IsZero() { // the built-in echo alias
			m.OwnedBy = "platform"
		} else {
			m.Created = a.UpdatedAt.Unix()
		}
		out = append(out, m)
	}
	private(w, http.StatusOK, struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{"list", out})
}

// manager authorizes a management route: the account's roles, or staff on
// /v1/operator/.
func (h *handlers) manager(w http.ResponseWriter, r *http.Request, roles []string) (muse.Actor, bool) {
	var (
		a   muse.Actor
		err error
	)
	if strings.HasPrefix(r.URL.Path, "/v1/operator/") {
		a, err = h.svc.Operator(r.Context(), bearer(r))
	} else {
		a, err = h.svc.Manager(r.Context(), bearer(r), r.PathValue("account_id"), roles...)
	}
	if err != nil {
		h.errors.Write(w, r, err)
		return muse.Actor{}, false
	}
	return a, true
}

type credentialJSON struct {
	ID        string    `json:"id"`
	AccountID *string   `json:"account_id"`
	Provider  string    `json:"provider"`
	Name      string    `json:"name"`
	BaseURL   *string   `json:"base_url"`
	LastFour  string    `json:"last_four"`
	CreatedAt time.Time `json:"created_at"`
}

func orNull(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func credentialOut(c muse.Credential) credentialJSON {
	return credentialJSON{ID: c.ID, AccountID: orNull(c.AccountID), Provider: c.Provider, Name: c.Name,
		BaseURL: orNull(c.BaseURL), LastFour: c.LastFour, CreatedAt: c.CreatedAt.UTC().Truncate(time.Second)}
}

func (h *handlers) createCredential(w http.ResponseWriter, r *http.Request) {
	a, ok := h.manager(w, r, muse.Writers)
	if !ok {
		return
	}
	var in struct {
		Provider string `json:"provider"`
		Name     string `json:"name"`
		BaseURL  string `json:"base_url"`
		APIKey   string `json:"api_key"`
	}
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		h.errors.Write(w, r, err)
		return
	}
	c, err := h.svc.CreateCredential(r.Context(), a, muse.CredentialInput(in))
	if err != nil {
		h.errors.Write(w, r, err)
		return
	}
	private(w, http.StatusCreated, struct {
		Credential credentialJSON `json:"provider_credential"`
	}{credentialOut(c)})
}

func (h *handlers) listCredentials(w http.ResponseWriter, r *http.Request) {
	a, ok := h.manager(w, r, muse.Readers)
	if !ok {
		return
	}
	cs, err := h.svc.Credentials(r.Context(), a)
	if err != nil {
		h.errors.Write(w, r, err)
		return
	}
	out := make([]credentialJSON, 0, len(cs))
	for _, c := range cs {
		out = append(out, credentialOut(c))
	}
	private(w, http.StatusOK, struct {
		Credentials []credentialJSON `json:"provider_credentials"`
	}{out})
}

func (h *handlers) deleteCredential(w http.ResponseWriter, r *http.Request) {
	a, ok := h.manager(w, r, muse.Writers)
	if !ok {
		return
	}
	if err := h.svc.DeleteCredential(r.Context(), a, r.PathValue("credential_id")); err != nil {
		h.errors.Write(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
}

type targetJSON struct {
	CredentialID string `json:"credential_id"`
	Model        string `json:"model"`
	Weight       int    `json:"weight"`
}

type aliasJSON struct {
	Alias     string       `json:"alias"`
	Targets   []targetJSON `json:"targets"`
	UpdatedAt time.Time    `json:"updated_at"`
}

func aliasOut(a muse.Alias) aliasJSON {
	ts := make([]targetJSON, 0, len(a.Targets))
	for _, t := range a.Targets {
		ts = append(ts, targetJSON(t))
	}
	return aliasJSON{Alias: a.Name, Targets: ts, UpdatedAt: a.UpdatedAt.UTC().Truncate(time.Second)}
}

func (h *handlers) putAlias(w http.ResponseWriter, r *http.Request) {
	a, ok := h.manager(w, r, muse.Writers)
	if !ok {
		return
	}
	var in struct {
		Targets []struct {
			CredentialID string `json:"credential_id"`
			Model        string `json:"model"`
			Weight       *int   `json:"weight"`
		} `json:"targets"`
	}
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		h.errors.Write(w, r, err)
		return
	}
	ts := make([]muse.Target, 0, len(in.Targets))
	for _, t := range in.Targets {
		mt := muse.Target{CredentialID: t.CredentialID, Model: t.Model}
		if t.Weight != nil {
			mt.Weight = *t.Weight
		}
		ts = append(ts, mt)
	}
	al, err := h.svc.PutAlias(r.Context(), a, r.PathValue("alias"), ts)
	if err != nil {
		h.errors.Write(w, r, err)
		return
	}
	private(w, http.StatusOK, struct {
		Model aliasJSON `json:"model"`
	}{aliasOut(al)})
}

func (h *handlers) getAlias(w http.ResponseWriter, r *http.Request) {
	a, ok := h.manager(w, r, muse.Readers)
	if !ok {
		return
	}
	al, err := h.svc.Alias(r.Context(), a, r.PathValue("alias"))
	if err != nil {
		h.errors.Write(w, r, err)
		return
	}
	private(w, http.StatusOK, struct {
		Model aliasJSON `json:"model"`
	}{aliasOut(al)})
}

func (h *handlers) listAliases(w http.ResponseWriter, r *http.Request) {
	a, ok := h.manager(w, r, muse.Readers)
	if !ok {
		return
	}
	as, err := h.svc.Aliases(r.Context(), a)
	if err != nil {
		h.errors.Write(w, r, err)
		return
	}
	out := make([]aliasJSON, 0, len(as))
	for _, al := range as {
		out = append(out, aliasOut(al))
	}
	private(w, http.StatusOK, struct {
		Models []aliasJSON `json:"models"`
	}{out})
}

func (h *handlers) deleteAlias(w http.ResponseWriter, r *http.Request) {
	a, ok := h.manager(w, r, muse.Writers)
	if !ok {
		return
	}
	if err := h.svc.DeleteAlias(r.Context(), a, r.PathValue("alias")); err != nil {
		h.errors.Write(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusNoContent)
}

type budgetJSON struct {
	MonthlyTokens *int64 `json:"monthly_tokens"`
	UsedTokens    int64  `json:"used_tokens"`
	Month         string `json:"month"`
}

func budgetOut(b muse.Budget) budgetJSON {
	out := budgetJSON{UsedTokens: b.Used, Month: time.Now().UTC().Format("2006-01")}
	if b.Monthly > 0 {
		out.MonthlyTokens = &b.Monthly
	}
	return out
}

func (h *handlers) putBudget(w http.ResponseWriter, r *http.Request) {
	a, ok := h.manager(w, r, muse.Writers)
	if !ok {
		return
	}
	var in struct {
		MonthlyTokens *int64 `json:"monthly_tokens"`
	}
	if err := httpx.DecodeJSON(w, r, &in); err != nil {
		h.errors.Write(w, r, err)
		return
	}
	var monthly int64
	if in.MonthlyTokens != nil {
		monthly = *in.MonthlyTokens
	}
	b, err := h.svc.SetBudget(r.Context(), a, monthly)
	if err != nil {
		h.errors.Write(w, r, err)
		return
	}
	private(w, http.StatusOK, struct {
		Budget budgetJSON `json:"budget"`
	}{budgetOut(b)})
}

func (h *handlers) getBudget(w http.ResponseWriter, r *http.Request) {
	a, ok := h.manager(w, r, muse.Readers)
	if !ok {
		return
	}
	b, err := h.svc.Budget(r.Context(), a)
	if err != nil {
		h.errors.Write(w, r, err)
		return
	}
	private(w, http.StatusOK, struct {
		Budget budgetJSON `json:"budget"`
	}{budgetOut(b)})
}

// day reads a query date (YYYY-MM-DD), or def when absent.
func day(v, field string, def time.Time, f *errs.Fields) time.Time {
	if v == "" {
		return def
	}
	t, err := time.Parse(time.DateOnly, v)
	if err != nil {
		f.Add(field, "invalid")
	}
	return t
}

func (h *handlers) usage(w http.ResponseWriter, r *http.Request) {
	a, ok := h.manager(w, r, muse.Readers)
	if !ok {
		return
	}
	now := time.Now().UTC()
	first := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	var f errs.Fields
	from := day(r.URL.Query().Get("from"), "from", first, &f)
	to := day(r.URL.Query().Get("to"), "to", first.AddDate(0, 1, 0), &f)
	if err := f.Err(muse.CodeValidation, "from and to are dates, YYYY-MM-DD"); err != nil {
		h.errors.Write(w, r, err)
		return
	}
	sums, err := h.svc.Usage(r.Context(), a, from, to)
	if err != nil {
		h.errors.Write(w, r, err)
		return
	}
	type dayJSON struct {
		Day              string `json:"day"`
		Alias            string `json:"alias"`
		Requests         int64  `json:"requests"`
		PromptTokens     int64  `json:"prompt_tokens"`
		CompletionTokens int64  `json:"completion_tokens"`
		TotalTokens      int64  `json:"total_tokens"`
	}
	out := make([]dayJSON, 0, len(sums))
	for _, s := range sums {
		out = append(out, dayJSON{s.Day, s.Alias, s.Requests, s.PromptTokens, s.CompletionTokens, s.PromptTokens + s.CompletionTokens})
	}
	private(w, http.StatusOK, struct {
		From  string    `json:"from"`
		To    string    `json:"to"`
		Usage []dayJSON `json:"usage"`
	}{from.Format(time.DateOnly), to.Format(time.DateOnly), out})
}
