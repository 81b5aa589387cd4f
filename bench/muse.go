package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The muse scenario (muse.md §6) measures muse as a real process in front
// of an OpenAI-compatible upstream that runs in the bench process, against
// that same upstream called directly: the latency muse adds at one
// client, the throughput 64 clients keep when the upstream takes 50 ms,
// how much later a stream's first byte arrives, and muse's memory with
// 1,000 streams open at once.

// museStreams is how many streams the memory measure holds open at once.
const museStreams = 1000

// museHold is how long the upstream holds each of those streams open
// after its first chunk: long enough for all of them to be open at once.
const museHold = 5 * time.Second

// upstream is an OpenAI-compatible chat endpoint on loopback: it answers
// after delay, and holds a stream open for hold between its first chunk
// and the rest.
type upstream struct {
	srv   *http.Server
	URL   string
	delay time.Duration
	hold  time.Duration
}

func startUpstream(delay, hold time.Duration) (*upstream, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	u := &upstream{URL: "http://" + ln.Addr().String(), delay: delay, hold: hold}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", u.chat)
	u.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = u.srv.Serve(ln) }()
	return u, nil
}

func (u *upstream) stop() { _ = u.srv.Close() }

// The answers are OpenAI's documented shapes; usage arrives in the
// completion and, streamed, in a last chunk without choices.
const (
	upstreamCompletion = `{"id":"chatcmpl-bench","object":"chat.completion","created":1767225600,"model":"local-model",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"Hello from the bench."},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":9,"completion_tokens":5,"total_tokens":14}}`
	upstreamFirst = `{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1767225600,"model":"local-model",` +
		`"choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"},"finish_reason":null}]}`
	upstreamLast = `{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1767225600,"model":"local-model",` +
		`"choices":[{"index":0,"delta":{"content":" from the bench."},"finish_reason":"stop"}]}`
	upstreamUsage = `{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1767225600,"model":"local-model",` +
		`"choices":[],"usage":{"prompt_tokens":9,"completion_tokens":5,"total_tokens":14}}`
)

func (u *upstream) chat(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Stream bool `json:"stream"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":{"message":"bad body","type":"invalid_request_error"}}`, http.StatusBadRequest)
		return
	}
	if u.delay > 0 {
		select {
		case <-time.After(u.delay):
		case <-r.Context().Done():
			return
		}
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, upstreamCompletion)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl := w.(http.Flusher)
	_, _ = io.WriteString(w, "data: "+upstreamFirst+"\n\n")
	fl.Flush()
	if u.hold > 0 {
		select {
		case <-time.After(u.hold):
		case <-r.Context().Done():
			return
		}
	}
	_, _ = io.WriteString(w, "data: "+upstreamLast+"\n\ndata: "+upstreamUsage+"\n\ndata: [DONE]\n\n")
}

// museRig is muse with an account whose aliases route to the upstreams.
type museRig struct {
	svc  *service
	drop func()
	key  string // a plat_ key of the account with models:invoke
	// org names the account, as an OpenAI SDK's organization setting does.
	org http.Header
	ups []*upstream
}

func (r *museRig) stop() {
	if r.svc != nil {
		r.svc.stop()
	}
	for _, u := range r.ups {
		u.stop()
	}
	if r.drop != nil {
		r.drop()
	}
}

// museAliases are the aliases the rig routes, each to its upstream:
// fast answers at once, slow after 50 ms, held keeps a stream open.
var museAliases = []struct {
	name        string
	delay, hold time.Duration
}{{"fast", 0, 0}, {"slow", 50 * time.Millisecond, 0}, {"held", 0, museHold}}

// startMuse starts the upstreams, migrates a fresh database, starts muse
// as a real process against the bench's identity, and routes the first
// user's personal account's aliases to the upstreams.
func (b *bench) startMuse(ctx context.Context) (*museRig, error) {
	rig := &museRig{}
	for _, a := range museAliases {
		u, err := startUpstream(a.delay, a.hold)
		if err != nil {
			rig.stop()
			return nil, err
		}
		rig.ups = append(rig.ups, u)
	}
	dbURL, drop, port, err := b.migrated(ctx, "muse")
	if err != nil {
		rig.stop()
		return nil, err
	}
	rig.drop = drop
	vault := make([]byte, 32)
	_, _ = rand.Read(vault)
	env := map[string]string{
		"PORT": strconv.Itoa(port), "DATABASE_URL": dbURL, "MUSE_VAULT_KEY": base64.StdEncoding.EncodeToString(vault),
		"IDENTITY_ISSUER": b.p.identityEnv["IDENTITY_ISSUER"], "MUSE_IDENTITY_URL": b.p.identity.URL,
	}
	for k, v := range b.cfg.serviceEnv {
		env[k] = v
	}
	logPath := filepath.Join(b.dir, "muse.log")
	if rig.svc, err = startReady(ctx, "muse", port, logPath, b.p.bin, env, "muse", "serve"); err != nil {
		rig.stop()
		return nil, err
	}
	if err := rig.route(ctx, b.p.identity.URL, b.p.users[0]); err != nil {
		rig.stop()
		return nil, err
	}
	return rig, nil
}

// route stores a credential per upstream in the owner's account, points
// each alias at its upstream, and makes the application's key.
func (r *museRig) route(ctx context.Context, identityURL string, owner user) error {
	c := newClient(4)
	for i, a := range museAliases {
		var cred struct {
			Credential struct {
				ID string `json:"id"`
			} `json:"provider_credential"`
		}
		status, _, raw, err := callJSON(ctx, c, "POST", r.svc.URL+"/v1/accounts/"+owner.AccountID+"/provider_credentials", owner.Token,
			map[string]string{"provider": "openai", "name": a.name, "base_url": r.ups[i].URL + "/v1", "api_key": "sk-bench-" + a.name + "-0000"})
		if err != nil || status != http.StatusCreated {
			return fmt.Errorf("muse credential %s: %d %s %v", a.name, status, raw, err)
		}
		if err := json.Unmarshal(raw, &cred); err != nil {
			return err
		}
		status, _, raw, err = callJSON(ctx, c, "PUT", r.svc.URL+"/v1/accounts/"+owner.AccountID+"/models/"+a.name, owner.Token,
			map[string]any{"targets": []map[string]string{{"credential_id": cred.Credential.ID, "model": "local-model"}}})
		if err != nil || status != http.StatusOK {
			return fmt.Errorf("muse alias %s: %d %s %v", a.name, status, raw, err)
		}
	}
	status, _, raw, err := callJSON(ctx, c, "POST", identityURL+"/v1/accounts/"+owner.AccountID+"/api_keys", owner.Token,
		map[string]any{"name": "bench application", "scopes": []string{"models:invoke"}})
	if err != nil || status != http.StatusCreated {
		return fmt.Errorf("api key: %d %s %v", status, raw, err)
	}
	var key struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal(raw, &key); err != nil {
		return err
	}
	r.key = key.Token
	r.org = http.Header{"OpenAI-Organization": {owner.AccountID}}
	return nil
}

// chatBody is the request both sides get, model aside.
func chatBody(model string, stream bool) []byte {
	b, _ := json.Marshal(map[string]any{"model": model, "stream": stream,
		"messages": []map[string]string{{"role": "user", "content": "Say hello to the bench."}}})
	return b
}

// direct and through are one chat completion, from the upstream itself
// and through muse by alias.
func (r *museRig) direct(c *http.Client, up int) op {
	return request{client: c, method: "POST", url: r.ups[up].URL + "/v1/chat/completions", path: "upstream /v1/chat/completions",
		token: "sk-bench-direct", body: chatBody("local-model", false), want: http.StatusOK}.do
}

func (r *museRig) through(c *http.Client, up int) op {
	return request{client: c, method: "POST", url: r.svc.URL + "/v1/chat/completions", path: "muse /v1/chat/completions",
		token: r.key, header: r.org, body: chatBody(museAliases[up].name, false), want: http.StatusOK}.do
}

// firstByte opens a stream and returns how long its first data line took
// to arrive, then reads the stream to its end.
func firstByte(ctx context.Context, c *http.Client, url, token string, header http.Header, body []byte) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	t0 := time.Now()
	res, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("stream %s: %d", url, res.StatusCode)
	}
	sc := bufio.NewScanner(res.Body)
	var first time.Duration
	for sc.Scan() {
		if first == 0 && strings.HasPrefix(sc.Text(), "data: ") {
			first = time.Since(t0)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	if first == 0 {
		return 0, fmt.Errorf("stream %s: no data line", url)
	}
	return first, nil
}

func (b *bench) museScenario(ctx context.Context) (*Scenario, error) {
	s := &Scenario{Name: "muse", Title: "muse: POST /v1/chat/completions against the upstream called directly", Unit: "req/s",
		BaselineName: "the upstream, directly"}
	rig, err := b.startMuse(ctx)
	if err != nil {
		return nil, err
	}
	defer rig.stop()

	// One client, an upstream that answers at once: the p50 muse adds.
	// Beside them, the identity read muse makes for each completion (the
	// key's role in the account), to see what share of the addition it is.
	one := newClient(1)
	role := request{client: one, method: "GET", url: b.p.identity.URL + "/v1/accounts/" + b.p.users[0].AccountID,
		path: "identity /v1/accounts/{id}", token: rig.key, want: http.StatusOK}.do
	total, byRound, err := b.interleaved(ctx, []op{rig.direct(one, 0)}, []op{rig.through(one, 0)}, []op{role})
	if err != nil {
		return nil, err
	}
	s.Baseline, s.Levels = append(s.Baseline, total[0]), append(s.Levels, total[1])
	var added, identityRead rounds
	for r := range byRound[0] {
		added = append(added, byRound[1][r].P50-byRound[0][r].P50)
		identityRead = append(identityRead, byRound[2][r].P50)
	}
	s.medianTarget("muse adds ≤ 0.3 ms p50 at one client (non-streaming)", added, ms, func(v float64) bool { return v <= 0.3 })
	s.medianFigure("of which identity's role read, p50 at one client", identityRead, ms)

	// 64 clients, an upstream that takes 50 ms: the share of the direct
	// throughput muse keeps.
	total, byRound, err = b.interleaved(ctx, clients(64, func(int) op { return rig.direct(b.client, 1) }),
		clients(64, func(int) op { return rig.through(b.client, 1) }))
	if err != nil {
		return nil, err
	}
	s.Baseline, s.Levels = append(s.Baseline, total[0]), append(s.Levels, total[1])
	var share rounds
	for r := range byRound[0] {
		share = append(share, byRound[1][r].RPS/byRound[0][r].RPS)
	}
	s.Ratio = share.median()
	s.medianTarget("≥ 95% of the direct throughput at 64 clients, upstream 50 ms", share, pct, func(v float64) bool { return v >= 0.95 })

	// One client, streams: how much later the first data line arrives.
	// Each round times 200 streams a side, alternating.
	var later rounds
	streamBody := chatBody("local-model", true)
	museBody := chatBody("fast", true)
	for range b.cfg.rounds {
		var d, m []float64
		for range 200 {
			x, err := firstByte(ctx, one, rig.ups[0].URL+"/v1/chat/completions", "sk-bench-direct", nil, streamBody)
			if err != nil {
				return nil, err
			}
			y, err := firstByte(ctx, one, rig.svc.URL+"/v1/chat/completions", rig.key, rig.org, museBody)
			if err != nil {
				return nil, err
			}
			d, m = append(d, float64(x.Microseconds())/1000), append(m, float64(y.Microseconds())/1000)
		}
		slices.Sort(d)
		slices.Sort(m)
		later = append(later, m[len(m)/2]-d[len(d)/2])
	}
	s.medianTarget("a stream's first byte ≤ 1 ms p50 later than direct", later, ms, func(v float64) bool { return v <= 1 })

	// 1,000 streams open at once through muse: its peak RSS.
	resetPeak(rig.svc.pid())
	many := newClient(museStreams)
	many.Timeout = museHold + time.Minute
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed []error
	)
	heldBody := chatBody("held", true)
	for range museStreams {
		wg.Go(func() {
			if _, err := firstByte(ctx, many, rig.svc.URL+"/v1/chat/completions", rig.key, rig.org, heldBody); err != nil {
				mu.Lock()
				failed = append(failed, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(failed) > 0 {
		return nil, fmt.Errorf("%d of %d held streams failed, the first: %w", len(failed), museStreams, failed[0])
	}
	m, err := readMemory(rig.svc.pid())
	if err != nil {
		return nil, err
	}
	s.target(fmt.Sprintf("muse under 256 MiB RSS with %d streams open at once", museStreams),
		fmt.Sprintf("peak %.0f MiB", mib(m.Peak)), mib(m.Peak) < 256)
	s.errorsTarget()
	s.Notes = append(s.Notes, fmt.Sprintf("muse on %s, callers with a plat_ key (models:invoke); the upstream in the bench process, "+
		"streams of two content chunks and a usage chunk; the held streams wait %s after their first chunk", b.cfg.engine, museHold))
	return s, nil
}
