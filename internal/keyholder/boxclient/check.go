package boxclient

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/keyholder"
)

// Check asks box, with the caller's own bearer token, whether the caller
// may fetch artifact at exactly version for accountID (box's artifact
// check, which also checks membership and an API key's artifacts:fetch),
// and spends the capability box issues at once, so none stays live; the
// redemption is box's word for what was checked. Box's refusals pass on
// with box's codes (unauthenticated, not_found, forbidden,
// insufficient_scope, entitlement_required, version_not_granted); an
// answer it cannot trust is CodeUnavailable. The token is never logged.
func (c *Client) Check(ctx context.Context, token, accountID, artifact, version string) (keyholder.Redemption, error) {
	capability, err := c.artifactFetch(ctx, token, accountID, artifact, version)
	if err != nil {
		return keyholder.Redemption{}, err
	}
	red, err := c.Redeem(ctx, capability)
	if err != nil {
		// Just issued, so any refusal here is box misbehaving.
		if errs.Code(err) != keyholder.CodeUnavailable {
			return keyholder.Redemption{}, c.unavailable(ctx, "redeem_refused", "code", errs.Code(err))
		}
		return keyholder.Redemption{}, err
	}
	if red.AccountID != accountID || red.Artifact != artifact || red.VersionRange == nil || *red.VersionRange != version {
		return keyholder.Redemption{}, c.unavailable(ctx, "redeemed_other")
	}
	return red, nil
}

// artifactFetch is POST /v1/accounts/{id}/artifact_fetches: the capability
// token on 201.
func (c *Client) artifactFetch(ctx context.Context, token, accountID, artifact, version string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	body, _ := json.Marshal(map[string]string{"artifact": artifact, "version_range": version})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost,
		c.base+"/v1/accounts/"+url.PathEscape(accountID)+"/artifact_fetches", bytes.NewReader(body))
	if err != nil {
		return "", c.unavailable(ctx, "bad_request")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set(httpx.TraceparentHeader, httpx.TraceFrom(ctx).Traceparent())
	resp, err := c.http.Do(req)
	if err != nil {
		return "", c.unavailable(ctx, "transport", "error", redact(err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil || len(raw) > maxBody {
		return "", c.unavailable(ctx, "read", "status", resp.StatusCode)
	}
	if resp.StatusCode == http.StatusCreated {
		var out struct {
			Capability struct {
				Token string `json:"token"`
			} `json:"capability"`
		}
		if err := json.Unmarshal(raw, &out); err != nil || out.Capability.Token == "" {
			return "", c.unavailable(ctx, "malformed_body")
		}
		return out.Capability.Token, nil
	}
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(raw, &e)
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return "", errs.New(keyholder.CodeUnauthenticated, "valid bearer token required")
	case resp.StatusCode == http.StatusNotFound:
		return "", keyholder.ErrNoDownload
	case resp.StatusCode == http.StatusForbidden:
		switch e.Error.Code {
		case keyholder.CodeEntitlementRequired, keyholder.CodeVersionNotGranted, keyholder.CodeInsufficientScope:
			return "", errs.New(e.Error.Code, e.Error.Message)
		}
		return "", errs.New(keyholder.CodeForbidden, "forbidden")
	}
	return "", c.unavailable(ctx, "unexpected_status", "status", resp.StatusCode, "code", e.Error.Code)
}
