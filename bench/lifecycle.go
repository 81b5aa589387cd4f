package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
)

// The credential lifecycle's scenarios (identity-lifecycle.md §4, §5):
// the authenticated read with an API key against the same read with a
// session token, and sign-in through the TOTP step against sign-in with
// the password alone.

// mfaUsers is how many users with TOTP the mfa scenario signs in. A code
// is accepted once per user and time step (30 s; one step of skew lets a
// user sign in twice in a step, then once a step), so the pool must cover
// what identity signs in over a step or two: sign-ins are bound by the
// password hash, a few dozen a second on a small machine. Each user costs
// three hashes to prepare.
const mfaUsers = 320

// apiKeyRead is a read of each customer's team account with an API key
// of that account (scope account:read).
func (b *bench) apiKeyReadOp(keys []string) func(i int) op {
	return func(i int) op {
		u := b.user(i)
		return request{client: b.client, method: "GET", url: b.p.identity.URL + "/v1/accounts/" + u.AccountID, path: "/v1/accounts/{id}", token: keys[i%len(keys)], want: http.StatusOK}.do
	}
}

// createAPIKeys gives each customer's team account a key, in user order.
func (b *bench) createAPIKeys(ctx context.Context) ([]string, error) {
	keys := make([]string, len(b.p.users))
	for i, u := range b.p.users {
		status, body, raw, err := callJSON(ctx, b.client, "POST", b.p.identity.URL+"/v1/accounts/"+u.AccountID+"/api_keys", u.Token,
			map[string]any{"name": "bench", "scopes": []string{"account:read"}})
		keys[i], _ = body["token"].(string)
		if err != nil || status != http.StatusCreated || keys[i] == "" {
			return nil, fmt.Errorf("create API key: %d %s %v", status, raw, err)
		}
	}
	return keys, nil
}

// apiKey: GET /v1/accounts/{id} with a plat_ API key against the same
// read with a session token (JWT), interleaved round by round.
func (b *bench) apiKey(ctx context.Context) (*Scenario, error) {
	s := &Scenario{Name: "apikey", Title: "API key read: GET /v1/accounts/{id} on identity with a plat_ key", Unit: "req/s", BaselineName: "the same read with a session token (JWT)"}
	keys, err := b.createAPIKeys(ctx)
	if err != nil {
		return nil, err
	}
	var jwt, key perRound
	for _, c := range b.cfg.levels {
		total, byRound, err := b.interleaved(ctx, clients(c, b.readOp(b.p.identity.URL)), clients(c, b.apiKeyReadOp(keys)))
		if err != nil {
			return nil, err
		}
		s.Baseline = append(s.Baseline, total[0])
		s.Levels = append(s.Levels, total[1])
		jwt, key = append(jwt, byRound[0]), append(key, byRound[1])
	}
	ratio := peakRatio(key, jwt)
	s.Ratio = ratio.median()
	s.medianTarget("≥ 80% of the JWT read's throughput (peak over levels)", ratio, pct, func(r float64) bool { return r >= 0.8 })
	if lv, ok := levelAt(s.Levels, 32); ok {
		base, _ := levelAt(s.Baseline, 32)
		s.Notes = append(s.Notes, fmt.Sprintf("p99 at 32 clients over all rounds: %s with a key, %s with a JWT", ms(lv.P99), ms(base.P99)))
	}
	s.errorsTarget()
	return s, nil
}

// totpUser is a user with TOTP enabled and the last time step the
// harness used a code of.
type totpUser struct {
	email  string
	secret string
	mu     sync.Mutex
	last   int64
}

// totpPool hands out users whose next code identity will accept.
type totpPool struct {
	users     []*totpUser
	next      atomic.Uint64
	exhausted atomic.Int64
}

// code returns a user and a code identity accepts for them now: the
// current step's, or the next step's (one step of skew) once the current
// one is spent. When every user has spent both it waits for the next step
// and counts the wait, which a note reports (the figures are then
// understated, and mfaUsers too small for the machine).
func (p *totpPool) code(ctx context.Context) (*totpUser, string, error) {
	for {
		now := time.Now()
		step := now.Unix() / 30
		start := p.next.Add(1)
		for k := range uint64(len(p.users)) {
			u := p.users[(start+k)%uint64(len(p.users))]
			u.mu.Lock()
			use := max(step, u.last+1)
			if use <= step+1 {
				u.last = use
				u.mu.Unlock()
				c, err := totp.GenerateCodeCustom(u.secret, time.Unix(use*30, 0), totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
				return u, c, err
			}
			u.mu.Unlock()
		}
		p.exhausted.Add(1)
		select {
		case <-ctx.Done():
			return nil, "", ctx.Err()
		case <-time.After(time.Unix((step+1)*30, 0).Sub(now)):
		}
	}
}

// enrolTOTP registers n users and turns TOTP on for each, through the
// API as a person would.
func (b *bench) enrolTOTP(ctx context.Context, n int) (*totpPool, error) {
	id := b.p.identity.URL
	pool := &totpPool{users: make([]*totpUser, n)}
	errs := make(chan error, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			u, err := b.enrolOne(ctx, id, fmt.Sprintf("mfa%04d@bench.example.com", i))
			if err != nil {
				errs <- err
				return
			}
			pool.users[i] = u
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	return pool, nil
}

func (b *bench) enrolOne(ctx context.Context, id, email string) (*totpUser, error) {
	creds := map[string]any{"email": email, "password": benchPassword}
	if status, _, raw, err := callJSON(ctx, b.client, "POST", id+"/v1/users", "", creds); err != nil || status != http.StatusCreated {
		return nil, fmt.Errorf("register %s: %d %s %v", email, status, raw, err)
	}
	status, body, raw, err := callJSON(ctx, b.client, "POST", id+"/v1/session", "", creds)
	token, _ := body["token"].(string)
	if err != nil || status != http.StatusCreated || token == "" {
		return nil, fmt.Errorf("login %s: %d %s %v", email, status, raw, err)
	}
	status, body, raw, err = callJSON(ctx, b.client, "POST", id+"/v1/me/mfa/totp", token, map[string]any{"password": benchPassword})
	secret, _ := body["secret"].(string)
	if err != nil || status != http.StatusCreated || secret == "" {
		return nil, fmt.Errorf("enrol %s: %d %s %v", email, status, raw, err)
	}
	u := &totpUser{email: email, secret: secret}
	step := time.Now().Unix() / 30
	code, err := totp.GenerateCodeCustom(secret, time.Unix(step*30, 0), totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		return nil, err
	}
	if status, _, raw, err := callJSON(ctx, b.client, "POST", id+"/v1/me/mfa/totp/confirm", token, map[string]any{"code": code}); err != nil || status != http.StatusOK {
		return nil, fmt.Errorf("confirm TOTP of %s: %d %s %v", email, status, raw, err)
	}
	u.last = step
	return u, nil
}

// mfaLoginOp signs a pool user in: the password answers 401 mfa_required
// with a challenge, which a fresh code turns into a session.
func (b *bench) mfaLoginOp(pool *totpPool) func(i int) op {
	id := b.p.identity.URL
	return func(int) op {
		return func(ctx context.Context) error {
			u, code, err := pool.code(ctx)
			if err != nil {
				return err
			}
			first := request{client: b.client, method: "POST", url: id + "/v1/session", path: "/v1/session",
				body: mustJSON(map[string]string{"email": u.email, "password": benchPassword}), want: http.StatusUnauthorized}
			var ch struct {
				Code      string `json:"code"`
				Challenge string `json:"challenge"`
			}
			if _, err := first.read(ctx, &ch); err != nil {
				return err
			}
			if ch.Code != "mfa_required" || ch.Challenge == "" {
				return errors.New("POST /v1/session: 401 without an mfa_required challenge")
			}
			second := request{client: b.client, method: "POST", url: id + "/v1/session/mfa", path: "/v1/session/mfa",
				body: mustJSON(map[string]string{"challenge": ch.Challenge, "code": code}), want: http.StatusCreated}
			return second.do(ctx)
		}
	}
}

// mfa: sign-in with TOTP (POST /v1/session, then POST /v1/session/mfa)
// against sign-in with the password alone, interleaved round by round.
func (b *bench) mfa(ctx context.Context) (*Scenario, error) {
	s := &Scenario{Name: "mfa", Title: "MFA sign-in: POST /v1/session, then POST /v1/session/mfa with a TOTP code", Unit: "sign-ins/s", BaselineName: "sign-in without MFA (POST /v1/session)"}
	began := time.Now()
	pool, err := b.enrolTOTP(ctx, mfaUsers)
	if err != nil {
		return nil, err
	}
	s.Notes = append(s.Notes, fmt.Sprintf("%d users with TOTP enrolled through the API in %s", mfaUsers, time.Since(began).Round(100*time.Millisecond)))
	var plain, twoStep perRound
	for _, c := range b.cfg.levels {
		total, byRound, err := b.interleaved(ctx, clients(c, b.loginOp), clients(c, b.mfaLoginOp(pool)))
		if err != nil {
			return nil, err
		}
		s.Baseline = append(s.Baseline, total[0])
		s.Levels = append(s.Levels, total[1])
		plain, twoStep = append(plain, byRound[0]), append(twoStep, byRound[1])
	}
	ratio := peakRatio(twoStep, plain)
	s.Ratio = ratio.median()
	s.medianTarget("≥ 90% of sign-in without MFA (peak over levels)", ratio, pct, func(r float64) bool { return r >= 0.9 })
	if n := pool.exhausted.Load(); n > 0 {
		s.Notes = append(s.Notes, fmt.Sprintf("the pool of %d TOTP users ran out %d times (each waited for the next 30 s step): the MFA figures are understated", mfaUsers, n))
	}
	s.errorsTarget()
	return s, nil
}
