package parlor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The account's Models page (muse): its provider credentials (added with
// the key never shown again, listed by their last four characters,
// removed), its aliases and their targets, its monthly token budget and
// this month's usage, and a playground whose answer streams in.

// ProviderCredential is a provider key as muse lists it: never the key.
type ProviderCredential struct {
	ID        string    `json:"id"`
	Provider  string    `json:"provider"`
	Name      string    `json:"name"`
	BaseURL   *string   `json:"base_url"`
	LastFour  string    `json:"last_four"`
	CreatedAt time.Time `json:"created_at"`
}

// ModelTarget is one place an alias routes to.
type ModelTarget struct {
	CredentialID string `json:"credential_id"`
	Model        string `json:"model"`
	Weight       int    `json:"weight"`
}

// ModelAlias is a model name the account's callers use.
type ModelAlias struct {
	Alias     string        `json:"alias"`
	Targets   []ModelTarget `json:"targets"`
	UpdatedAt time.Time     `json:"updated_at"`
}

// ModelBudget is the account's monthly budget (nil: none) and the
// month's tokens.
type ModelBudget struct {
	MonthlyTokens *int64 `json:"monthly_tokens"`
	UsedTokens    int64  `json:"used_tokens"`
	Month         string `json:"month"`
}

// ModelUsageDay is one day's tokens through one alias.
type ModelUsageDay struct {
	Day          string `json:"day"`
	Alias        string `json:"alias"`
	Requests     int64  `json:"requests"`
	PromptTokens int64  `json:"prompt_tokens"`
	Completion   int64  `json:"completion_tokens"`
	TotalTokens  int64  `json:"total_tokens"`
}

// ProviderCredentials lists the account's provider credentials.
func (c *Client) ProviderCredentials(ctx context.Context, token, account string) ([]ProviderCredential, error) {
	var out struct {
		Credentials []ProviderCredential `json:"provider_credentials"`
	}
	err := c.do(ctx, token, "GET", "/v1/accounts/"+url.PathEscape(account)+"/provider_credentials", nil, &out)
	return out.Credentials, err
}

// AddProviderCredential stores a provider key in muse's vault.
func (c *Client) AddProviderCredential(ctx context.Context, token, account, provider, name, baseURL, apiKey string) error {
	return c.do(ctx, token, "POST", "/v1/accounts/"+url.PathEscape(account)+"/provider_credentials",
		map[string]string{"provider": provider, "name": name, "base_url": baseURL, "api_key": apiKey}, nil)
}

// RemoveProviderCredential deletes one.
func (c *Client) RemoveProviderCredential(ctx context.Context, token, account, id string) error {
	return c.do(ctx, token, "DELETE", "/v1/accounts/"+url.PathEscape(account)+"/provider_credentials/"+url.PathEscape(id), nil, nil)
}

// ModelAliases lists the account's aliases.
func (c *Client) ModelAliases(ctx context.Context, token, account string) ([]ModelAlias, error) {
	var out struct {
		Models []ModelAlias `json:"models"`
	}
	err := c.do(ctx, token, "GET", "/v1/accounts/"+url.PathEscape(account)+"/models", nil, &out)
	return out.Models, err
}

// PutModelAlias routes alias to one target.
func (c *Client) PutModelAlias(ctx context.Context, token, account, alias, credentialID, model string) error {
	return c.do(ctx, token, "PUT", "/v1/accounts/"+url.PathEscape(account)+"/models/"+url.PathEscape(alias),
		map[string]any{"targets": []ModelTarget{{CredentialID: credentialID, Model: model}}}, nil)
}

// DeleteModelAlias removes an alias.
func (c *Client) DeleteModelAlias(ctx context.Context, token, account, alias string) error {
	return c.do(ctx, token, "DELETE", "/v1/accounts/"+url.PathEscape(account)+"/models/"+url.PathEscape(alias), nil, nil)
}

// ModelBudget reads the budget and this month's tokens.
func (c *Client) ModelBudget(ctx context.Context, token, account string) (ModelBudget, error) {
	var out struct {
		Budget ModelBudget `json:"budget"`
	}
	err := c.do(ctx, token, "GET", "/v1/accounts/"+url.PathEscape(account)+"/budget", nil, &out)
	return out.Budget, err
}

// SetModelBudget sets the monthly budget; 0 removes it.
func (c *Client) SetModelBudget(ctx context.Context, token, account string, monthly int64) error {
	return c.do(ctx, token, "PUT", "/v1/accounts/"+url.PathEscape(account)+"/budget", map[string]int64{"monthly_tokens": monthly}, nil)
}

// ModelUsage sums this month's tokens by day and alias.
func (c *Client) ModelUsage(ctx context.Context, token, account string) ([]ModelUsageDay, error) {
	var out struct {
		Usage []ModelUsageDay `json:"usage"`
	}
	err := c.do(ctx, token, "GET", "/v1/accounts/"+url.PathEscape(account)+"/usage/models", nil, &out)
	return out.Usage, err
}

// invoke sends a request to muse's OpenAI-compatible routes, which name
// the account by OpenAI-Organization. Its client has no overall timeout:
// a stream lasts as long as the model writes; ctx bounds it. The caller
// closes the body of a 2xx; any other answer is returned as an
// *APIError.
func (c *Client) invoke(ctx context.Context, token, account, method, path string, body any) (*http.Response, error) {
	req, err := c.newRequest(ctx, token, method, path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("OpenAI-Organization", account)
	streaming := &http.Client{Transport: c.http.Transport, CheckRedirect: c.http.CheckRedirect}
	resp, err := streaming.Do(req)
	if err != nil {
		return nil, fmt.Errorf("platform API %s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	return nil, decodeError(resp.StatusCode, raw)
}

// ModelNames lists the model names the account's callers may use (its
// aliases, and echo in development).
func (c *Client) ModelNames(ctx context.Context, token, account string) ([]string, error) {
	if c.http.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.http.Timeout)
		defer cancel()
	}
	resp, err := c.invoke(ctx, token, account, "GET", "/v1/models", nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&out); err != nil {
		return nil, fmt.Errorf("platform API GET /v1/models: decode: %w", err)
	}
	names := make([]string, 0, len(out.Data))
	for _, m := range out.Data {
		names = append(names, m.ID)
	}
	return names, nil
}

// chatBody is a one-message chat request.
func chatBody(model, prompt string, stream bool) map[string]any {
	return map[string]any{"model": model, "stream": stream, "messages": []map[string]string{{"role": "user", "content": prompt}}}
}

// Ask sends prompt to model and returns the whole answer.
func (c *Client) Ask(ctx context.Context, token, account, model, prompt string) (string, error) {
	resp, err := c.invoke(ctx, token, account, "POST", "/v1/chat/completions", chatBody(model, prompt, false))
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var out struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&out); err != nil || len(out.Choices) == 0 {
		return "", errors.New("platform API POST /v1/chat/completions: the answer is not a chat completion")
	}
	return out.Choices[0].Message.Content, nil
}

// AskStreaming sends prompt to model as a stream and returns muse's
// server-sent events as they arrive; the caller closes them.
func (c *Client) AskStreaming(ctx context.Context, token, account, model, prompt string) (io.ReadCloser, error) {
	resp, err := c.invoke(ctx, token, account, "POST", "/v1/chat/completions", chatBody(model, prompt, true))
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// modelsData is the Models page.
type modelsData struct {
	Credentials []ProviderCredential
	Aliases     []modelAliasRow
	Budget      ModelBudget
	Usage       []ModelUsageDay
	Models      []string
	// Writer is an owner or admin: the forms that change things show.
	Writer bool
	// Model, Prompt and Answer are the playground's last question and the
	// answer (without script).
	Model, Prompt, Answer string
	AnswerError           string
}

// modelAliasRow is an alias with its targets' credentials named.
type modelAliasRow struct {
	Alias   string
	Targets []string
}

// maxPrompt bounds the playground's prompt.
const maxPrompt = 8000

// playgroundTimeout bounds a playground answer, streamed or not.
const playgroundTimeout = 2 * time.Minute

func (s *server) models(w http.ResponseWriter, r *http.Request, sess *session) {
	s.renderModels(w, r, sess, &page{Notice: notice(r)}, http.StatusOK, modelsData{})
}

// renderModels reads everything the page shows and renders it with p and
// the playground's state in d.
func (s *server) renderModels(w http.ResponseWriter, r *http.Request, sess *session, p *page, status int, d modelsData) {
	id := r.PathValue("id")
	a, creds, ok := withAccount(s, w, r, sess, s.api.ProviderCredentials)
	if !ok {
		return
	}
	var (
		aliases []ModelAlias
		errs    [4]error
		wg      sync.WaitGroup
	)
	wg.Go(func() { aliases, errs[0] = s.api.ModelAliases(r.Context(), sess.Token, id) })
	wg.Go(func() { d.Budget, errs[1] = s.api.ModelBudget(r.Context(), sess.Token, id) })
	wg.Go(func() { d.Usage, errs[2] = s.api.ModelUsage(r.Context(), sess.Token, id) })
	wg.Go(func() { d.Models, errs[3] = s.api.ModelNames(r.Context(), sess.Token, id) })
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		s.fail(w, r, &sess.Me, err)
		return
	}
	names := map[string]string{}
	for _, c := range creds {
		names[c.ID] = c.Name
	}
	for _, al := range aliases {
		row := modelAliasRow{Alias: al.Alias}
		for _, t := range al.Targets {
			cred := names[t.CredentialID]
			if cred == "" {
				cred = "a platform credential"
			}
			target := t.Model + " via " + cred
			if t.Weight > 0 {
				target += " (weight " + strconv.Itoa(t.Weight) + ")"
			}
			row.Targets = append(row.Targets, target)
		}
		d.Aliases = append(d.Aliases, row)
	}
	d.Credentials, d.Writer = creds, a.Role == "owner" || a.Role == "admin"
	if d.Model == "" && len(d.Models) > 0 {
		d.Model = d.Models[0]
	}
	p.Title, p.User, p.Account, p.Tab, p.Data = "Models · "+a.Name, &sess.Me, a, "models", d
	s.render(w, r, status, "models", p)
}

func (s *server) modelsPath(r *http.Request, done string) string {
	return "/app/accounts/" + url.PathEscape(r.PathValue("id")) + "/models?done=" + done
}

// modelsRefused renders the page again with a form's refusal, or the
// failure page for what a form cannot show.
func (s *server) modelsRefused(w http.ResponseWriter, r *http.Request, sess *session, err error, form map[string]string) {
	if st := StatusOf(err); st == http.StatusNotFound || st == http.StatusUnauthorized || st == http.StatusForbidden {
		s.fail(w, r, &sess.Me, err)
		return
	}
	p := &page{Form: form}
	status := formFailure(p, err)
	if status == http.StatusServiceUnavailable {
		s.unavailable(w, r, &sess.Me)
		return
	}
	s.renderModels(w, r, sess, p, status, modelsData{})
}

func (s *server) addProviderCredential(w http.ResponseWriter, r *http.Request, sess *session) {
	f := r.PostForm
	form := map[string]string{"provider": f.Get("provider"), "name": f.Get("name"), "base_url": f.Get("base_url")}
	err := s.api.AddProviderCredential(r.Context(), sess.Token, r.PathValue("id"), f.Get("provider"),
		strings.TrimSpace(f.Get("name")), strings.TrimSpace(f.Get("base_url")), strings.TrimSpace(f.Get("api_key")))
	if err != nil {
		// The key is never echoed back into the form.
		s.modelsRefused(w, r, sess, err, form)
		return
	}
	http.Redirect(w, r, s.modelsPath(r, "credential-added"), http.StatusSeeOther)
}

func (s *server) removeProviderCredential(w http.ResponseWriter, r *http.Request, sess *session) {
	if err := s.api.RemoveProviderCredential(r.Context(), sess.Token, r.PathValue("id"), r.PathValue("cred")); err != nil {
		if StatusOf(err) == http.StatusConflict {
			s.modelsRefused(w, r, sess, err, nil)
			return
		}
		s.fail(w, r, &sess.Me, err)
		return
	}
	http.Redirect(w, r, s.modelsPath(r, "credential-removed"), http.StatusSeeOther)
}

func (s *server) putModelAlias(w http.ResponseWriter, r *http.Request, sess *session) {
	f := r.PostForm
	alias, cred, model := strings.TrimSpace(f.Get("alias")), f.Get("credential_id"), strings.TrimSpace(f.Get("model"))
	form := map[string]string{"alias": alias, "credential_id": cred, "model": model}
	if alias == "" {
		s.modelsRefused(w, r, sess, &APIError{Status: http.StatusUnprocessableEntity, Code: "validation_failed",
			Fields: map[string]string{"alias": "invalid"}}, form)
		return
	}
	if err := s.api.PutModelAlias(r.Context(), sess.Token, r.PathValue("id"), alias, cred, model); err != nil {
		s.modelsRefused(w, r, sess, err, form)
		return
	}
	http.Redirect(w, r, s.modelsPath(r, "alias-saved"), http.StatusSeeOther)
}

func (s *server) deleteModelAlias(w http.ResponseWriter, r *http.Request, sess *session) {
	if err := s.api.DeleteModelAlias(r.Context(), sess.Token, r.PathValue("id"), r.PathValue("alias")); err != nil {
		s.fail(w, r, &sess.Me, err)
		return
	}
	http.Redirect(w, r, s.modelsPath(r, "alias-removed"), http.StatusSeeOther)
}

func (s *server) setModelBudget(w http.ResponseWriter, r *http.Request, sess *session) {
	raw := strings.TrimSpace(r.PostForm.Get("monthly_tokens"))
	var monthly int64
	if raw != "" {
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || n < 0 {
			s.modelsRefused(w, r, sess, &APIError{Status: http.StatusUnprocessableEntity, Code: "validation_failed",
				Fields: map[string]string{"monthly_tokens": "invalid"}}, map[string]string{"monthly_tokens": raw})
			return
		}
		monthly = n
	}
	if err := s.api.SetModelBudget(r.Context(), sess.Token, r.PathValue("id"), monthly); err != nil {
		s.modelsRefused(w, r, sess, err, map[string]string{"monthly_tokens": raw})
		return
	}
	http.Redirect(w, r, s.modelsPath(r, "budget-set"), http.StatusSeeOther)
}

// playground asks a model. The page's script sends Accept:
// text/event-stream and gets muse's events passed on as they arrive,
// flushed one by one; without script the form posts and the page shows
// the whole answer.
func (s *server) playground(w http.ResponseWriter, r *http.Request, sess *session) {
	id := r.PathValue("id")
	model, prompt := strings.TrimSpace(r.PostForm.Get("model")), strings.TrimSpace(r.PostForm.Get("prompt"))
	streaming := strings.Contains(r.Header.Get("Accept"), "text/event-stream")
	var refusal string
	switch {
	case model == "":
		refusal = "Choose a model."
	case prompt == "":
		refusal = "Write a question for the model."
	case len(prompt) > maxPrompt:
		refusal = "The question is longer than " + strconv.Itoa(maxPrompt) + " characters."
	}
	if streaming {
		s.playgroundStream(w, r, sess, id, model, prompt, refusal)
		return
	}
	d := modelsData{Model: model, Prompt: prompt}
	status := http.StatusOK
	if refusal != "" {
		d.AnswerError, status = refusal, http.StatusUnprocessableEntity
	} else {
		ctx, cancel := context.WithTimeout(r.Context(), playgroundTimeout)
		answer, err := s.api.Ask(ctx, sess.Token, id, model, prompt)
		cancel()
		switch {
		case err == nil:
			d.Answer = answer
		case StatusOf(err) == http.StatusUnauthorized && CodeOf(err) != "provider_credential_unreadable":
			s.fail(w, r, &sess.Me, err)
			return
		default:
			d.AnswerError, status = playgroundRefusal(err), answerStatus(err)
		}
	}
	s.renderModels(w, r, sess, &page{}, status, d)
}

// playgroundRefusal is a refusal of the playground's question in words.
func playgroundRefusal(err error) string {
	var ae *APIError
	if errors.As(err, &ae) && ae.Status < 500 && ae.Message != "" {
		return "The model was not asked: " + ae.Message
	}
	var message string
	if errors.As(err, &ae) && ae.Message != "" {
		message = ": " + ae.Message
	}
	return "The model could not answer" + message + ". Try again shortly."
}

func answerStatus(err error) int {
	if st := StatusOf(err); st >= 400 {
		return st
	}
	return http.StatusServiceUnavailable
}

// playgroundStream passes muse's events to the page's script unbuffered.
// A refusal before the first event is a plain-text answer with its
// status, which the script shows.
func (s *server) playgroundStream(w http.ResponseWriter, r *http.Request, sess *session, id, model, prompt, refusal string) {
	plain := func(status int, text string) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, text)
	}
	if refusal != "" {
		plain(http.StatusUnprocessableEntity, refusal)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), playgroundTimeout)
	defer cancel()
	body, err := s.api.AskStreaming(ctx, sess.Token, id, model, prompt)
	if err != nil {
		plain(answerStatus(err), playgroundRefusal(err))
		return
	}
	defer body.Close()
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Now().Add(playgroundTimeout))
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	buf := make([]byte, 16<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			if rc.Flush() != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
