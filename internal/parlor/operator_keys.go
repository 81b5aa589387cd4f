package parlor

import (
	"context"
	"net/http"
	"net/url"
	"strings"
)

// The release pipelines' keys (licensing.md section 4): staff issue
// releases:publish keys in the company's own account, so a pipeline runs
// `platform keyholder publish` without a person's session. The operator
// Releases page lists them, issues one and revokes one.

// StaffAPIKey is a publishing key as the console lists it.
type StaffAPIKey struct {
	APIKey
	AccountID string `json:"account_id"`
}

// StaffAPIKeys lists every live publishing key (staff).
func (c *Client) StaffAPIKeys(ctx context.Context, token string) ([]StaffAPIKey, error) {
	var out struct {
		APIKeys []StaffAPIKey `json:"api_keys"`
	}
	err := c.do(ctx, token, "GET", "/v1/operator/api_keys", nil, &out)
	return out.APIKeys, err
}

// CreateStaffAPIKey issues a publishing key in accountID; the token is in
// the answer only.
func (c *Client) CreateStaffAPIKey(ctx context.Context, token, accountID, name string) (StaffAPIKey, string, error) {
	var out struct {
		APIKey StaffAPIKey `json:"api_key"`
		Token  string      `json:"token"`
	}
	err := c.do(ctx, token, "POST", "/v1/operator/api_keys", map[string]string{"name": name, "account_id": accountID}, &out)
	return out.APIKey, out.Token, err
}

// RevokeStaffAPIKey revokes a publishing key (staff).
func (c *Client) RevokeStaffAPIKey(ctx context.Context, token, keyID string) error {
	return c.do(ctx, token, "DELETE", "/v1/operator/api_keys/"+url.PathEscape(keyID), nil, nil)
}

// publishKeysData is the Releases page's keys section: the live keys with
// their account's name where the staff member belongs to it, the accounts
// a key may be issued in (those the staff member administers), and the
// token of a key just issued.
type publishKeysData struct {
	Keys     []publishKeyRow
	Accounts []Account
	Token    string
}

type publishKeyRow struct {
	StaffAPIKey
	AccountName string
}

// publishKeys reads the keys section; a failure leaves it empty and sets
// the page's error.
func (s *server) publishKeys(ctx context.Context, sess *session) (publishKeysData, error) {
	var d publishKeysData
	keys, err := s.api.StaffAPIKeys(ctx, sess.Token)
	if err != nil {
		return d, err
	}
	accounts, err := s.api.Accounts(ctx, sess.Token)
	if err != nil {
		return d, err
	}
	names := map[string]string{}
	for _, a := range accounts {
		names[a.ID] = a.Name
		if a.Role == "owner" || a.Role == "admin" {
			d.Accounts = append(d.Accounts, a)
		}
	}
	for _, k := range keys {
		d.Keys = append(d.Keys, publishKeyRow{k, names[k.AccountID]})
	}
	return d, nil
}

func (s *server) createPublishKey(w http.ResponseWriter, r *http.Request, sess *session) {
	name := strings.TrimSpace(r.PostFormValue("key_name"))
	account := r.PostFormValue("key_account")
	_, token, err := s.api.CreateStaffAPIKey(r.Context(), sess.Token, account, name)
	if err != nil {
		p := &page{Form: map[string]string{"product": "platform", "key_name": name, "key_account": account}}
		status := formFailure(p, err)
		for from, to := range map[string]string{"name": "key_name", "account_id": "key_account"} {
			if msg, ok := p.Errors[from]; ok {
				p.Errors[to] = msg
				delete(p.Errors, from)
			}
		}
		s.renderOperatorReleasesWith(w, r, sess, p, status, "")
		return
	}
	s.renderOperatorReleasesWith(w, r, sess, &page{Form: map[string]string{"product": "platform"},
		Notice: "The publishing key was created. Copy it now: it is shown only once."}, http.StatusOK, token)
}

func (s *server) revokePublishKey(w http.ResponseWriter, r *http.Request, sess *session) {
	if err := s.api.RevokeStaffAPIKey(r.Context(), sess.Token, r.PathValue("kid")); err != nil {
		s.fail(w, r, &sess.Me, err)
		return
	}
	http.Redirect(w, r, "/operator/releases?done=publish_key_gone", http.StatusSeeOther)
}
