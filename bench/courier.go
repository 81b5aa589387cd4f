package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gosmtp "github.com/emersion/go-smtp"
	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/wneessen/go-mail"

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/courier/smtp"
	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/events/embeddednats"
	"github.com/platformco/platform/internal/ids"
)

// benchServiceSecret is the harness's service credential at courier
// (COURIER_SERVICE_TOKENS); the secret must be at least 32 characters.
const benchServiceSecret = "bench-service-secret-0123456789abcdef"

const benchMailFrom = "Platform <no-reply@bench.example.com>"

// drainLimit bounds the wait for courier to deliver what it accepted.
const drainLimit = 3 * time.Minute

// smtpSink is the in-process SMTP server both courier and the bare send
// loop deliver to: it accepts every recipient and message, reads each
// message to its end, and counts them.
type smtpSink struct {
	srv  *gosmtp.Server
	addr string
	n    atomic.Int64
}

func startSMTPSink() (*smtpSink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &smtpSink{addr: ln.Addr().String()}
	s.srv = gosmtp.NewServer(sinkBackend{s})
	s.srv.Domain = "sink.bench.localhost"
	s.srv.AllowInsecureAuth = true
	s.srv.MaxMessageBytes = 1 << 20
	s.srv.ReadTimeout, s.srv.WriteTimeout = 30*time.Second, 30*time.Second
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *smtpSink) close() { _ = s.srv.Close() }

type sinkBackend struct{ s *smtpSink }

func (b sinkBackend) NewSession(*gosmtp.Conn) (gosmtp.Session, error) { return sinkSession(b), nil }

type sinkSession struct{ s *smtpSink }

func (sinkSession) Mail(string, *gosmtp.MailOptions) error { return nil }
func (sinkSession) Rcpt(string, *gosmtp.RcptOptions) error { return nil }
func (sinkSession) Reset()                                 {}
func (sinkSession) Logout() error                          { return nil }
func (ss sinkSession) Data(r io.Reader) error {
	if _, err := io.Copy(io.Discard, r); err != nil {
		return err
	}
	ss.s.n.Add(1)
	return nil
}

// courierRig is a courier process the harness started for one scenario,
// with its database and the embedded NATS server it publishes to and
// consumes from.
type courierRig struct {
	svc  *service
	nats *embeddednats.Server
	drop func()
	db   string
}

func (r *courierRig) stop() {
	if r == nil {
		return
	}
	r.svc.stop()
	if r.nats != nil {
		r.nats.Shutdown()
	}
	if r.drop != nil {
		r.drop()
	}
}

// startCourier migrates a fresh database and starts courier on it as a
// real process, with the smtp adapter pointed at sink (no TLS), an
// embedded NATS server of the harness at EVENTS_URL, and identity (the
// running one) for signed-in callers.
func (b *bench) startCourier(ctx context.Context, label string, sink *smtpSink, env map[string]string) (*courierRig, error) {
	rig := &courierRig{}
	var err error
	rig.nats, err = embeddednats.StartServer(ctx, embeddednats.Options{Dir: filepath.Join(b.dir, label+"-nats")})
	if err != nil {
		return nil, err
	}
	rig.db, rig.drop, err = freshDatabase(ctx, b.cfg, filepath.Join(b.dir, label+".db"), label)
	if err != nil {
		rig.stop()
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		rig.stop()
		return nil, err
	}
	full := map[string]string{
		"PORT":                   strconv.Itoa(port),
		"DATABASE_URL":           rig.db,
		"COURIER_SECRET_BOX_KEY": masterKey(),
		"COURIER_MAIL_ADAPTER":   "smtp",
		"COURIER_SMTP_HOST":      sink.addr,
		"COURIER_SMTP_TLS":       "none",
		"COURIER_MAIL_FROM":      benchMailFrom,
		"COURIER_SERVICE_TOKENS": "bench:" + benchServiceSecret,
		"IDENTITY_ISSUER":        b.p.identity.URL,
		"COURIER_IDENTITY_URL":   b.p.identity.URL,
		"EVENTS_URL":             rig.nats.URL(),
	}
	for k, v := range b.cfg.serviceEnv {
		full[k] = v
	}
	for k, v := range env {
		full[k] = v
	}
	if b.cfg.pprofBase > 0 {
		full["DEBUG_ADDR"] = "127.0.0.1:" + strconv.Itoa(b.cfg.pprofBase+3)
		fmt.Fprintf(os.Stderr, "bench: courier's profiling endpoint: 127.0.0.1:%d\n", b.cfg.pprofBase+3)
	}
	if err := runOnce(ctx, b.p.bin, full, "courier", "migrate"); err != nil {
		rig.stop()
		return nil, err
	}
	logPath := filepath.Join(b.dir, label+"-courier.log")
	// Courier starts its loops when its database gate opens: ready means
	// the send loop, the deliverer and the consumer run.
	if rig.svc, err = startReady(ctx, "courier", port, logPath, b.p.bin, full, "courier", "serve"); err != nil {
		rig.stop()
		return nil, err
	}
	return rig, nil
}

// waitCount waits until n() reaches want; it returns when it did, or an
// error after drainLimit.
func waitCount(ctx context.Context, what string, n func() int64, want int64) (time.Time, error) {
	deadline := time.Now().Add(drainLimit)
	for {
		if n() >= want {
			return time.Now(), nil
		}
		if err := ctx.Err(); err != nil {
			return time.Time{}, err
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("%s: %d of %d after %s", what, n(), want, drainLimit)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// email: POST /v1/emails with the service credential, closed-loop, and
// the messages courier delivers to the harness's SMTP server, against a
// bare go-mail send loop of the same message to the same server.
func (b *bench) email(ctx context.Context) (*Scenario, error) {
	s := &Scenario{Name: "email", Title: "email: POST /v1/emails accepted/s, and delivered/s to an in-process SMTP server (accept → SMTP end to end)",
		Unit: "emails/s", BaselineName: "bare go-mail send loop, same message, same server"}
	sink, err := startSMTPSink()
	if err != nil {
		return nil, err
	}
	defer sink.close()
	rig, err := b.startCourier(ctx, "email", sink, map[string]string{"COURIER_ENV": "production"})
	if err != nil {
		return nil, err
	}
	defer rig.stop()

	renderer, err := courier.NewRenderer()
	if err != nil {
		return nil, err
	}
	data := map[string]string{"link": "https://bench.example.com/verify?token=0123456789abcdef0123456789abcdef"}
	rendered, err := renderer.Render("verify_email", data)
	if err != nil {
		return nil, err
	}
	host, portStr, _ := net.SplitHostPort(sink.addr)
	port, _ := strconv.Atoi(portStr)
	// The bare loop: what courier's mailer does per message (a message
	// built with go-mail, sent over the worker's kept session, which is
	// replaced after smtp.SessionMessages messages), and nothing else.
	type bareSession struct {
		client *mail.Client
		sent   int
	}
	sessions := make([]bareSession, slices.Max(b.cfg.levels))
	defer func() {
		for _, s := range sessions {
			if s.client != nil {
				_ = s.client.Close()
			}
		}
	}()
	bare := func(w int) error {
		msg, err := smtp.Build(courier.Message{ID: uuid.NewString(), AttemptID: uuid.NewString(), From: benchMailFrom,
			To: fmt.Sprintf("bench-%02d@bench.example.com", w), Subject: rendered.Subject, Text: rendered.Text, HTML: rendered.HTML})
		if err != nil {
			return err
		}
		s := &sessions[w]
		if s.client == nil || s.sent >= smtp.SessionMessages {
			if s.client != nil {
				_ = s.client.Close()
			}
			c, err := mail.NewClient(host, mail.WithTLSPortPolicy(mail.NoTLS), mail.WithPort(port), mail.WithTimeout(30*time.Second), mail.WithHELO("bench.localhost"), mail.WithoutNoop())
			if err != nil {
				return err
			}
			if err := c.DialWithContext(ctx); err != nil {
				return err
			}
			*s = bareSession{client: c}
		}
		if err := s.client.Send(msg); err != nil {
			_ = s.client.Close()
			s.client = nil
			return err
		}
		s.sent++
		return nil
	}

	var accepted atomic.Int64
	sendOp := func(i int) op {
		body := mustJSON(map[string]any{"template": "verify_email", "to": fmt.Sprintf("bench-%02d@bench.example.com", i), "data": data})
		r := request{client: b.client, method: "POST", url: rig.svc.URL + "/v1/emails", path: "/v1/emails",
			token: "bench:" + benchServiceSecret, body: body, want: http.StatusAccepted}
		return func(ctx context.Context) error {
			if err := r.do(ctx); err != nil {
				return err
			}
			accepted.Add(1)
			return nil
		}
	}
	// Each courier round waits until the sink has every message it
	// accepted, so the next round (or the bare loop) starts from a caught-up
	// courier and a round's figure holds only its own messages.
	var delivered, bareErrors int64
	d := b.cfg.duration / time.Duration(b.cfg.rounds)
	// deliveredBest and ratioByRound hold, per round, the best level's.
	ratioByRound := make(rounds, b.cfg.rounds)
	deliveredBest := make(rounds, b.cfg.rounds)
	for _, c := range b.cfg.levels {
		ops := clients(c, sendOp)
		if b.cfg.warmup > 0 {
			plainLoop(c, b.cfg.warmup, bare)
			before := sink.n.Load()
			accepted.Store(0)
			loop(ops, b.cfg.warmup, 0)
			if _, err := waitCount(ctx, "warm-up emails delivered", sink.n.Load, before+accepted.Load()); err != nil {
				return nil, err
			}
		}
		var runs []stretch
		var bareRate, bareSeconds float64
		var acc, sent int64
		var span float64
		for r := range b.cfg.rounds {
			var rate, dRate float64
			measureBare := func() {
				x, failed := plainLoop(c, d, bare)
				bareErrors += failed
				rate = x
				bareRate += x * d.Seconds()
				bareSeconds += d.Seconds()
			}
			measureCourier := func() error {
				before := sink.n.Load()
				accepted.Store(0)
				start := time.Now()
				st := loop(ops, d, 0)
				runs = append(runs, st)
				n := accepted.Load()
				end, err := waitCount(ctx, "emails delivered", sink.n.Load, before+n)
				if err != nil {
					return err
				}
				el := end.Sub(start).Seconds()
				acc += n
				sent += sink.n.Load() - before
				span += el
				dRate = float64(n) / el
				return nil
			}
			if r%2 == 0 {
				measureBare()
				if err := measureCourier(); err != nil {
					return nil, err
				}
			} else {
				if err := measureCourier(); err != nil {
					return nil, err
				}
				measureBare()
			}
			deliveredBest[r] = max(deliveredBest[r], dRate)
			if rate > 0 {
				ratioByRound[r] = max(ratioByRound[r], dRate/rate)
			}
		}
		lv := summarize(runs...)
		s.Levels = append(s.Levels, lv)
		s.Baseline = append(s.Baseline, Level{Concurrency: c, Duration: bareSeconds, Requests: int64(bareRate), RPS: bareRate / bareSeconds})
		delivered += sent
		s.Notes = append(s.Notes, fmt.Sprintf("%d clients: %.0f accepted/s, %.0f delivered/s (%d accepted, %d reached the SMTP server, last one %.1f s after the first POST on average); bare loop %.0f msgs/s",
			c, lv.RPS, float64(acc)/span, acc, sent, span/float64(b.cfg.rounds), bareRate/bareSeconds))
		if sent != acc {
			s.Notes = append(s.Notes, fmt.Sprintf("%d clients: %d messages reached the SMTP server for %d accepted", c, sent, acc))
		}
	}
	deliveredByRound := deliveredBest
	s.Ratio = ratioByRound.median()
	rate := func(v float64) string { return fmt.Sprintf("%.0f/s", v) }
	if b.cfg.engine == "sqlite" {
		s.medianTarget("≥ 500 delivered/s on SQLite (peak over levels)", deliveredByRound, rate, func(v float64) bool { return v >= 500 })
	} else {
		s.info("≥ 500 delivered/s (judged on SQLite only)", deliveredByRound.figure(rate))
	}
	// The ratio to a do-nothing loop measures the loop on two shared
	// cores more than courier: a figure, not a target.
	s.medianFigure("delivered/s over the bare send loop (peak over levels)", ratioByRound, pct)
	s.errorsTarget()
	s.target("bare send loop without error", strconv.FormatInt(bareErrors, 10), bareErrors == 0)
	s.Notes = append(s.Notes,
		"delivered/s: a round's accepted messages over the time from its first POST to the last one's arrival at the SMTP server",
		"courier runs as a process on "+b.cfg.engine+" with the smtp adapter (no TLS) and EVENTS_URL (its outbox publisher runs); the SMTP server, the clients and the bare loop are the harness's",
		fmt.Sprintf("%d messages delivered in the measured rounds", delivered))
	return s, nil
}

// webhookSink is the local receiver: it verifies each request's Standard
// Webhooks signature with its own code (the secret of the endpoint its
// path names) and counts the verified ones, and the distinct webhook ids
// among them.
type webhookSink struct {
	secrets sync.Map // path → []byte
	total   atomic.Int64
	bad     atomic.Int64
	mu      sync.Mutex
	ids     map[string]int
}

func (ws *webhookSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	key, known := ws.secrets.Load(r.URL.Path)
	if err != nil || !known {
		ws.bad.Add(1)
		http.Error(w, "no", http.StatusBadRequest)
		return
	}
	id, ts := r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp")
	mac := hmac.New(sha256.New, key.([]byte))
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	ok := false
	for _, sig := range strings.Fields(r.Header.Get("webhook-signature")) {
		ok = ok || hmac.Equal([]byte(sig), []byte(want))
	}
	if !ok {
		ws.bad.Add(1)
		http.Error(w, "bad signature", http.StatusBadRequest)
		return
	}
	ws.mu.Lock()
	ws.ids[id]++
	ws.mu.Unlock()
	ws.total.Add(1)
	w.WriteHeader(http.StatusNoContent)
}

// webhookAccounts is how many accounts the webhook scenario's events are
// about, each with its own endpoint (at most the harness's users).
const webhookAccounts = 16

// courierScenario runs the courier scenario name (email or webhook).
func (b *bench) courierScenario(ctx context.Context, name string) (*Scenario, error) {
	if name == "email" {
		return b.email(ctx)
	}
	return b.webhook(ctx)
}

// webhook: events published to the JetStream stream courier consumes,
// through its consumer, delivery table and delivery loop, to a signed POST
// at the harness's receiver; against a bare POST loop of the same body to
// the same receiver.
func (b *bench) webhook(ctx context.Context) (*Scenario, error) {
	s := &Scenario{Name: "webhook", Title: "webhook: events on the stream → courier's consumer → delivery loop → verified POSTs at a local receiver",
		Unit: "deliveries/s", BaselineName: "bare HTTP POST loop, same body and headers, same receiver"}
	sink, err := startSMTPSink()
	if err != nil {
		return nil, err
	}
	defer sink.close()
	// development: the receiver is on loopback, which courier reaches only
	// there (the address guard); nothing else differs.
	rig, err := b.startCourier(ctx, "webhook", sink, map[string]string{"COURIER_ENV": "development"})
	if err != nil {
		return nil, err
	}
	defer rig.stop()

	recv := &webhookSink{ids: map[string]int{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: recv, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	recvURL := "http://" + ln.Addr().String()

	// One endpoint per account, for up to webhookAccounts accounts:
	// courier keeps each (endpoint, subject)'s events in order, so the
	// events of one account go one at a time while different accounts'
	// go side by side, as a platform with many customers has them.
	var owners []user
	taken := map[string]bool{}
	for i := 0; i < len(b.p.users) && len(owners) < webhookAccounts; i++ {
		if u := b.user(i); !taken[u.AccountID] {
			taken[u.AccountID] = true
			owners = append(owners, u)
		}
	}
	var key []byte // the first endpoint's, which the bare loop signs with
	for i, owner := range owners {
		path := "/hook/" + strconv.Itoa(i)
		status, created, raw, err := callJSON(ctx, b.client, "POST", rig.svc.URL+"/v1/accounts/"+owner.AccountID+"/webhook_endpoints", owner.Token,
			map[string]any{"url": recvURL + path, "event_types": []string{"identity.member.joined"}, "description": "bench receiver"})
		secret, _ := created["secret"].(string)
		if err != nil || status != http.StatusCreated || secret == "" {
			return nil, fmt.Errorf("create webhook endpoint %d of %d: %d %s %v", i+1, len(owners), status, raw, err)
		}
		k, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
		if err != nil {
			return nil, err
		}
		recv.secrets.Store(path, k)
		if i == 0 {
			key = k
		}
	}

	nc, err := nats.Connect(rig.nats.URL())
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096))
	if err != nil {
		return nil, err
	}
	stream := events.Stream{}.WithDefaults()
	if _, err := events.EnsureStream(ctx, js, stream); err != nil {
		return nil, err
	}
	sent := 0
	envelope := func() (string, []byte) {
		owner := owners[sent%len(owners)]
		sent++
		id := ids.New() // as identity's outbox issues them
		e := events.Envelope{SpecVersion: "1.0", ID: id, Type: "identity.member.joined", Source: "identity", Subject: owner.AccountID,
			Time: time.Now().UTC(), Data: json.RawMessage(`{"account_id":"` + owner.AccountID + `","user_id":"` + uuid.NewString() + `","role":"member"}`)}
		body, err := json.Marshal(e)
		if err != nil {
			panic(err)
		}
		return id, body
	}
	// publish puts n envelopes on the stream, as identity's outbox
	// publisher would (Nats-Msg-Id = the envelope id), acknowledged.
	publish := func(n int) error {
		for range n {
			id, body := envelope()
			msg := nats.NewMsg(stream.Subject("identity.member.joined"))
			msg.Data = body
			msg.Header.Set("Nats-Msg-Id", id)
			// A long drain outruns the stream's acknowledgements; wait
			// for them rather than give up after the client's 200 ms.
			if _, err := js.PublishMsgAsync(msg, jetstream.WithStallWait(time.Minute)); err != nil {
				return err
			}
		}
		select {
		case <-js.PublishAsyncComplete():
			return nil
		case <-time.After(time.Minute):
			return errors.New("publish: no acknowledgement within a minute")
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// drain publishes n events and times them until the receiver has
	// verified n more deliveries.
	drain := func(n int) (float64, error) {
		before := recv.total.Load()
		start := time.Now()
		if err := publish(n); err != nil {
			return 0, err
		}
		end, err := waitCount(ctx, "webhook deliveries", recv.total.Load, before+int64(n))
		if err != nil {
			return 0, err
		}
		return float64(n) / end.Sub(start).Seconds(), nil
	}

	// The bare loop posts one envelope with fixed, valid headers: the
	// receiver does the same verification for it as for courier's.
	_, body := envelope()
	bareID, bareTS := uuid.NewString(), strconv.FormatInt(time.Now().Unix(), 10)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(bareID + "." + bareTS + "."))
	mac.Write(body)
	bareSig := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
	bareOp := func(int) op {
		return func(ctx context.Context) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, recvURL+"/hook/0", strings.NewReader(string(body)))
			if err != nil {
				return err
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("webhook-id", bareID)
			req.Header.Set("webhook-timestamp", bareTS)
			req.Header.Set("webhook-signature", bareSig)
			res, err := b.client.Do(req)
			if err != nil {
				return err
			}
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusNoContent {
				return statusError{"POST", "/hook/0", res.StatusCode, http.StatusNoContent}
			}
			return nil
		}
	}

	d := b.cfg.duration / time.Duration(b.cfg.rounds)
	// Each round's batch is what the target rate delivers in a round's
	// time, so a courier on target takes about as long as the baseline.
	perRound := max(500, int(2000*d.Seconds()))
	if b.cfg.warmup > 0 {
		if _, err := drain(max(200, int(2000*b.cfg.warmup.Seconds()))); err != nil {
			return nil, err
		}
	}
	var courierRate, ratio rounds
	var bareRuns = make([][]stretch, len(b.cfg.levels))
	if b.cfg.warmup > 0 {
		for _, c := range b.cfg.levels {
			loop(clients(c, bareOp), b.cfg.warmup, 0)
		}
	}
	var order []string
	var total int
	var deliveredSeconds float64
	for r := range b.cfg.rounds {
		var rate, best float64
		measureBare := func() {
			for i, c := range b.cfg.levels {
				st := loop(clients(c, bareOp), d, 0)
				bareRuns[i] = append(bareRuns[i], st)
				best = max(best, summarize(st).RPS)
			}
		}
		measureCourier := func() error {
			var err error
			rate, err = drain(perRound)
			total += perRound
			deliveredSeconds += float64(perRound) / rate
			return err
		}
		if r%2 == 0 {
			measureBare()
			if err := measureCourier(); err != nil {
				return nil, err
			}
		} else {
			if err := measureCourier(); err != nil {
				return nil, err
			}
			measureBare()
		}
		courierRate = append(courierRate, rate)
		if best > 0 {
			ratio = append(ratio, rate/best)
		}
		order = append(order, fmt.Sprintf("%.0f/s against %.0f/s", rate, best))
	}
	for i := range b.cfg.levels {
		s.Baseline = append(s.Baseline, summarize(bareRuns[i]...))
	}
	s.Levels = []Level{{Concurrency: 1, Duration: deliveredSeconds, Requests: int64(total), RPS: float64(total) / deliveredSeconds}}
	s.Ratio = ratio.median()
	rateF := func(v float64) string { return fmt.Sprintf("%.0f/s", v) }
	s.medianTarget("≥ 2,000 deliveries/s", courierRate, rateF, func(v float64) bool { return v >= 2000 })
	s.medianFigure("deliveries/s over the bare POST loop (its peak over levels)", ratio, pct)
	// The bare loop repeats one id; every other id is an event of courier's.
	recv.mu.Lock()
	seen, dups := 0, 0
	for id, n := range recv.ids {
		if id != bareID {
			seen++
			dups += n - 1
		}
	}
	recv.mu.Unlock()
	bad := recv.bad.Load()
	s.target("every event delivered once, its signature verified", fmt.Sprintf("%d events, %d duplicate deliveries, %d bad signatures", seen, dups, bad), dups == 0 && bad == 0)
	s.errorsTarget()
	s.target("bare loop without error", strconv.FormatInt(errorsOf(s.Baseline), 10), errorsOf(s.Baseline) == 0)
	s.Notes = append(s.Notes,
		fmt.Sprintf("each round publishes %d identity.member.joined envelopes, in turn about %d accounts with one subscribed endpoint each (courier orders deliveries per endpoint and subject), to the JetStream stream courier consumes (the harness's embedded NATS), acknowledged, and times them until the receiver has verified as many deliveries", perRound, len(owners)),
		"courier runs as a process on "+b.cfg.engine+" with COURIER_ENV=development (the receiver is on loopback, which the address guard admits only there)",
		"rounds, courier against the bare loop's best level: "+strings.Join(order, "; "),
		"latency columns do not apply to the courier row (one drain per round)")
	return s, nil
}
