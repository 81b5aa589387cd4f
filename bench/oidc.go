package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The OpenID Provider's two hot endpoints against identity's own
// authenticated read, interleaved round by round:
//
//   - userinfo: GET /oauth2/userinfo with an access token (one per
//     client, minted before each level);
//   - code exchange: POST /oauth2/token, grant authorization_code with
//     PKCE and the client's secret, one fresh code per call. The codes
//     are made before each round, outside the measured stretches, through
//     the whole flow over HTTP (authorize, the web app's allow with the
//     user's session, the callback): the figure counts exchanges alone.

const (
	oidcRedirect = "http://127.0.0.1:9/cb"
	oidcVerifier = "bench-verifier-0123456789-0123456789-0123456789-abcdef"
)

// oidcBench is one registered client and its stock of codes.
type oidcBench struct {
	b        *bench
	noFollow *http.Client
	clientID string
	secret   string
	codes    chan string
	// inline counts exchanges whose code had to be made inside the
	// measured stretch (the stock ran out): they slow the figure down.
	inline atomic.Int64
}

func (b *bench) oidc(ctx context.Context) (*Scenario, error) {
	s := &Scenario{Name: "oidc", Title: "OpenID Provider: userinfo (main) and token-endpoint code exchanges (side)", Unit: "req/s",
		BaselineName: "authenticated read GET /v1/accounts/{id} on identity", SideName: "code exchanges (POST /oauth2/token, fresh codes made outside the stretches)"}
	o, err := b.newOIDCBench(ctx)
	if err != nil {
		return nil, err
	}
	d := b.cfg.duration / time.Duration(b.cfg.rounds)
	var reads, infos, exchanges perRound
	for _, c := range b.cfg.levels {
		tokens, err := o.accessTokens(ctx, c)
		if err != nil {
			return nil, err
		}
		sets := [][]op{clients(c, b.readOp(b.p.identity.URL)), clients(c, o.userinfoOp(tokens)), clients(c, o.exchangeOp)}
		// The first stock is a guess; each later one is sized on the
		// rate the last stretch reached, with room to spare.
		stock := 400 * max(1, c/8)
		if b.cfg.warmup > 0 {
			if err := o.fill(ctx, stock); err != nil {
				return nil, err
			}
			for k, ops := range sets {
				st := loop(ops, b.cfg.warmup, 0)
				if k == 2 && st.seconds > 0 {
					// The guess is sized from the warm-up's rate, so the
					// first measured stretch does not run out of codes
					// (making them inline would slow the figure).
					rate := float64(summarize(st).Requests) / st.seconds
					stock = max(stock, int(rate*d.Seconds()*1.5)+c)
				}
			}
			o.inline.Store(0)
		}
		runs := make([][]stretch, len(sets))
		for r := range b.cfg.rounds {
			if err := o.fill(ctx, stock); err != nil {
				return nil, err
			}
			for k := range sets {
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				i := (r + k) % len(sets)
				runs[i] = append(runs[i], loop(sets[i], d, 0))
				if i == 2 {
					used := summarize(runs[i][len(runs[i])-1]).Requests
					stock = max(stock, int(float64(used)*1.5)+c)
				}
			}
		}
		var byRound [3][]Level
		for i, rs := range runs {
			for _, st := range rs {
				byRound[i] = append(byRound[i], summarize(st))
			}
		}
		s.Baseline = append(s.Baseline, summarize(runs[0]...))
		s.Levels = append(s.Levels, summarize(runs[1]...))
		s.Side = append(s.Side, summarize(runs[2]...))
		reads, infos, exchanges = append(reads, byRound[0]), append(infos, byRound[1]), append(exchanges, byRound[2])
	}
	info := peakRatio(infos, reads)
	s.Ratio = info.median()
	s.medianTarget("userinfo ≥ 70% of the authenticated read's throughput (peak over levels)", info, pct, func(r float64) bool { return r >= 0.7 })
	s.medianTarget("code exchanges ≥ 30% of the authenticated read's throughput (peak over levels)", peakRatio(exchanges, reads), pct, func(r float64) bool { return r >= 0.3 })
	n := errorsOf(s.Levels) + errorsOf(s.Side) + errorsOf(s.Baseline)
	s.target("no error", fmt.Sprint(n), n == 0)
	perLevel := make([]string, len(s.Side))
	for i, l := range s.Side {
		perLevel[i] = fmt.Sprintf("%d: %.0f/s", l.Concurrency, l.RPS)
	}
	s.Notes = append(s.Notes, "code exchanges by clients: "+strings.Join(perLevel, ", "),
		fmt.Sprintf("codes made inside a measured stretch (stock ran out): %d", o.inline.Load()),
		"each code is made by authorize → POST /oauth2/requests/{id}/allow (the user's session) → the callback, before its round")
	return s, nil
}

// newOIDCBench registers a confidential client in the first user's
// account.
func (b *bench) newOIDCBench(ctx context.Context) (*oidcBench, error) {
	u := b.user(0)
	var c struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
	}
	reg := request{client: b.client, method: "POST", url: b.p.identity.URL + "/v1/accounts/" + u.AccountID + "/oidc_clients",
		path: "/v1/accounts/{id}/oidc_clients", token: u.Token, want: http.StatusCreated,
		body: mustJSON(map[string]any{"name": "Bench", "redirect_uris": []string{oidcRedirect}, "scopes": []string{"openid", "email", "profile"}})}
	if _, err := reg.read(ctx, &c); err != nil {
		return nil, fmt.Errorf("register a client: %w", err)
	}
	noFollow := *b.client
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &oidcBench{b: b, noFollow: &noFollow, clientID: c.ClientID, secret: c.ClientSecret, codes: make(chan string, 1<<20)}, nil
}

// settle is the rest after making codes: the database's checkpoint of
// their writes is theirs, not the next stretch's.
const settle = 500 * time.Millisecond

// fill makes codes until the stock holds n, on a few goroutines.
func (o *oidcBench) fill(ctx context.Context, n int) error {
	need := n - len(o.codes)
	if need <= 0 {
		return nil
	}
	defer time.Sleep(settle)
	var (
		wg    sync.WaitGroup
		left  atomic.Int64
		first error
		once  sync.Once
	)
	left.Store(int64(need))
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				code, err := o.code(ctx, w)
				if err != nil {
					once.Do(func() { first = err })
					return
				}
				o.codes <- code
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return fmt.Errorf("make codes: %w", first)
	}
	return nil
}

// code runs the flow once as user i and returns the code.
func (o *oidcBench) code(ctx context.Context, i int) (string, error) {
	base := o.b.p.identity.URL
	sum := sha256.Sum256([]byte(oidcVerifier))
	q := url.Values{"client_id": {o.clientID}, "redirect_uri": {oidcRedirect}, "response_type": {"code"}, "scope": {"openid email"},
		"state": {"s"}, "code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}}
	loc, err := o.redirect(ctx, "GET", base+"/oauth2/authorize?"+q.Encode())
	if err != nil {
		return "", err
	}
	id := loc.Query().Get("authRequestID")
	var answer struct {
		RedirectTo string `json:"redirect_to"`
	}
	allow := request{client: o.b.client, method: "POST", url: base + "/oauth2/requests/" + id + "/allow", path: "/oauth2/requests/{id}/allow",
		token: o.b.user(i).Token, want: http.StatusOK}
	if _, err := allow.read(ctx, &answer); err != nil {
		return "", err
	}
	cb, err := url.Parse(answer.RedirectTo)
	if err != nil {
		return "", err
	}
	// The issuer's host may be a name the bench does not dial.
	if loc, err = o.redirect(ctx, "GET", base+cb.Path+"?"+cb.RawQuery); err != nil {
		return "", err
	}
	code := loc.Query().Get("code")
	if code == "" {
		return "", fmt.Errorf("callback: no code in %s", loc)
	}
	return code, nil
}

// redirect makes a request and returns where it is redirected.
func (o *oidcBench) redirect(ctx context.Context, method, u string) (*url.URL, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return nil, err
	}
	res, err := o.noFollow.Do(req)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusFound && res.StatusCode != http.StatusSeeOther {
		return nil, fmt.Errorf("%s %s: status %d, want a redirect", method, strings.SplitN(u, "?", 2)[0], res.StatusCode)
	}
	return url.Parse(res.Header.Get("Location"))
}

// exchange redeems code and returns the access token.
func (o *oidcBench) exchange(ctx context.Context, code string) (string, error) {
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {oidcRedirect}, "code_verifier": {oidcVerifier}}
	req, err := http.NewRequestWithContext(ctx, "POST", o.b.p.identity.URL+"/oauth2/token", strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(o.clientID), url.QueryEscape(o.secret))
	res, err := o.b.client.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, res.Body)
		return "", statusError{"POST", "/oauth2/token", res.StatusCode, http.StatusOK}
	}
	var out struct {
		AccessToken string `json:"access_token"`
	}
	err = json.NewDecoder(res.Body).Decode(&out)
	return out.AccessToken, err
}

func (o *oidcBench) exchangeOp(i int) op {
	return func(ctx context.Context) error {
		var code string
		select {
		case code = <-o.codes:
		default:
			o.inline.Add(1)
			var err error
			if code, err = o.code(ctx, i); err != nil {
				return err
			}
		}
		_, err := o.exchange(ctx, code)
		return err
	}
}

// accessTokens mints one access token per client.
func (o *oidcBench) accessTokens(ctx context.Context, n int) ([]string, error) {
	if err := o.fill(ctx, n); err != nil {
		return nil, err
	}
	tokens := make([]string, n)
	for i := range tokens {
		t, err := o.exchange(ctx, <-o.codes)
		if err != nil {
			return nil, fmt.Errorf("mint an access token: %w", err)
		}
		tokens[i] = t
	}
	return tokens, nil
}

func (o *oidcBench) userinfoOp(tokens []string) func(i int) op {
	return func(i int) op {
		return request{client: o.b.client, method: "GET", url: o.b.p.identity.URL + "/oauth2/userinfo", path: "/oauth2/userinfo",
			token: tokens[i], want: http.StatusOK}.do
	}
}
