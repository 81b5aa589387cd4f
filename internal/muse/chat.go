package muse

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/ids"
)

// ChatWriter is where a completion goes: the HTTP response. Once Reply or
// the first Chunk is written the answer is the client's; a later failure
// goes to Fail, never to another target.
type ChatWriter interface {
	// Reply writes a whole chat.completion body.
	Reply(body []byte) error
	// Chunk writes one chat.completion.chunk and flushes it.
	Chunk(chunk []byte) error
	// End closes a stream ([DONE]).
	End() error
	// Fail tells a stream's client that the upstream failed mid-stream.
	Fail(err error)
}

// errFirstByte is the cause of an attempt cancelled by the first-byte
// timeout.
var errFirstByte = errors.New("no first byte within MUSE_UPSTREAM_TIMEOUT")

// route is one target ready to call.
type route struct {
	target   Target
	provider string
	up       Upstream
}

// Chat routes a chat completion for c and meters it. The budget, the
// alias and its targets' credentials come in one read (Store.Plan). It returns an error
// only while nothing was written: invalid_request, model_not_found,
// budget_exhausted, provider_credential_unreadable, upstream_failed (an
// *UpstreamError from the last target when it refused for good),
// unavailable.
func (s *Service) Chat(ctx context.Context, c Caller, req ChatRequest, w ChatWriter) error {
	plan, err := s.store.Plan(ctx, c.AccountID, month(s.now()), req.Model)
	if err != nil {
		return err
	}
	b := plan.Budget
	release, ok := s.reserve(c.AccountID, b, PromptTokens(req.Messages)+max(req.MaxTokens, 1))
	if !ok {
		return errs.New(CodeBudgetExhausted, fmt.Sprintf(
			"this account has used its monthly budget of %d tokens; it renews on the first of next month", b.Monthly))
	}
	defer release()
	routes, err := s.routes(plan, req.Model)
	if err != nil {
		return err
	}
	var last error
	for _, r := range routes {
		key := targetKey(r.target)
		if s.health.skipped(key) {
			continue
		}
		p := s.providers[r.provider]
		if p == nil {
			last = fmt.Errorf("provider %q is not configured", r.provider)
			continue
		}
		start := s.now()
		var done bool
		if req.Stream {
			done, err = s.stream(ctx, c, req, r, p, w, start)
		} else {
			done, err = s.complete(ctx, c, req, r, p, w, start)
		}
		if done {
			s.health.succeeded(key)
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var ue *UpstreamError
		if errors.As(err, &ue) && !ue.Retryable() {
			return ue // the request's own fault: another target would refuse it too
		}
		s.health.failed(key)
		last = err
		s.logger().WarnContext(ctx, "upstream failed before the first byte; trying the next target",
			"alias", req.Model, "provider", r.provider, "credential_id", r.target.CredentialID, "err", err.Error())
	}
	if last == nil {
		last = errNoTarget
	}
	var ue *UpstreamError
	if errors.As(last, &ue) {
		return ue
	}
	return errs.New(CodeUpstreamFailed, "every provider behind model "+req.Model+" failed or is resting after failures; try again shortly")
}

func (s *Service) logger() *slog.Logger { return s.log }

// reserve admits a request against the account's budget: the month's
// metered total plus what this process's requests in flight were
// admitted for must stay below it. The reservation (the prompt's
// estimate and max_tokens, or one token) lasts until the request is
// metered, so simultaneous requests cannot all pass on one reading of
// the total; what the admitted ones produce beyond it is the overshoot.
func (s *Service) reserve(account string, b Budget, tokens int64) (release func(), ok bool) {
	if b.Monthly <= 0 {
		return func() {}, true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if b.Used+s.reserved[account] >= b.Monthly {
		return nil, false
	}
	s.reserved[account] += tokens
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.reserved[account] -= tokens; s.reserved[account] <= 0 {
			delete(s.reserved, account)
		}
	}, true
}

// routes returns the alias's targets in the order to try them: the first
// drawn by weight among the weighted ones (the first listed when none
// is), the rest as listed. Errors: model_not_found,
// provider_credential_unreadable.
func (s *Service) routes(p Plan, alias string) ([]route, error) {
	if s.echoAlias != "" && alias == s.echoAlias {
		return []route{{target: Target{CredentialID: "echo", Model: ProviderEcho}, provider: ProviderEcho,
			up: Upstream{Provider: ProviderEcho, Model: ProviderEcho}}}, nil
	}
	if !p.Found {
		return nil, errs.New(CodeModelNotFound, fmt.Sprintf("the model %q does not exist or you do not have access to it", alias))
	}
	order := ordered(p.Alias.Targets)
	out := make([]route, 0, len(order))
	for _, t := range order {
		cred, ok := p.Credentials[t.CredentialID]
		if !ok {
			continue
		}
		key, err := s.openCredential(cred)
		if err != nil {
			return nil, err
		}
		out = append(out, route{target: t, provider: cred.Provider,
			up: Upstream{Provider: cred.Provider, BaseURL: cred.BaseURL, APIKey: key, Model: t.Model}})
	}
	return out, nil
}

// ordered draws the first target by weight and keeps the others in order.
func ordered(ts []Target) []Target {
	total := 0
	for _, t := range ts {
		total += t.Weight
	}
	if total == 0 || len(ts) < 2 {
		return ts
	}
	n := rand.IntN(total)
	first := 0
	for i, t := range ts {
		if n < t.Weight {
			first = i
			break
		}
		n -= t.Weight
	}
	out := append([]Target{ts[first]}, ts[:first]...)
	return append(out, ts[first+1:]...)
}

// attempt bounds a call by the first-byte timeout until firstByte is
// called; the returned context lives on for the rest of a stream.
func (s *Service) attempt(ctx context.Context) (context.Context, func() bool, context.CancelFunc) {
	actx, cancel := context.WithCancelCause(ctx)
	timer := time.AfterFunc(s.timeout, func() { cancel(errFirstByte) })
	return actx, timer.Stop, func() { timer.Stop(); cancel(context.Canceled) }
}

// complete makes one non-streaming attempt; done reports that the answer
// (or the client's departure) ended routing.
func (s *Service) complete(ctx context.Context, c Caller, req ChatRequest, r route, p Provider, w ChatWriter, start time.Time) (bool, error) {
	actx, firstByte, cancel := s.attempt(ctx)
	defer cancel()
	reply, err := p.Complete(actx, r.up, req)
	if !firstByte() {
		return false, errFirstByte
	}
	if err != nil {
		return false, err
	}
	var body struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Usage *wireUsage `json:"usage"`
	}
	if err := json.Unmarshal(reply.Body, &body); err != nil {
		return false, &UpstreamError{Status: 502, Message: "the upstream's answer is not a chat completion"}
	}
	u := s.usage(c, req, r, start)
	if body.Usage != nil {
		u.PromptTokens, u.CompletionTokens = body.Usage.PromptTokens, body.Usage.CompletionTokens
	} else {
		var text strings.Builder
		for _, ch := range body.Choices {
			text.WriteString(ch.Message.Content)
		}
		u.PromptTokens, u.CompletionTokens, u.Estimated = PromptTokens(req.Messages), CountTokens(text.String()), true
	}
	werr := w.Reply(reply.Body)
	if werr != nil {
		u.Status = StatusClientClosed
	}
	s.meter(ctx, u)
	return true, nil
}

type wireUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
}

type wireChunk struct {
	Choices []struct {
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
	} `json:"choices"`
	Usage *wireUsage `json:"usage"`
}

// stream makes one streaming attempt. Until its first chunk arrives it
// may fail over (done false); after that the stream is the client's,
// and whatever happens is metered with what was produced.
func (s *Service) stream(ctx context.Context, c Caller, req ChatRequest, r route, p Provider, w ChatWriter, start time.Time) (bool, error) {
	actx, firstByte, cancel := s.attempt(ctx)
	defer cancel()
	st, err := p.Stream(actx, r.up, req)
	var first []byte
	if err == nil {
		first, err = st.Next()
		if err != nil {
			_ = st.Close()
		}
	}
	if !firstByte() {
		if st != nil && err == nil {
			_ = st.Close()
		}
		return false, errFirstByte
	}
	if errors.Is(err, io.EOF) {
		err = &UpstreamError{Status: 502, Message: "the upstream ended the stream before any chunk"}
	}
	if err != nil {
		return false, err
	}
	defer st.Close()
	u := s.usage(c, req, r, start)
	var (
		text     strings.Builder
		reported *wireUsage
	)
	chunk := first
	for {
		var ch wireChunk
		if json.Unmarshal(chunk, &ch) == nil {
			for _, c := range ch.Choices {
				text.WriteString(c.Delta.Content)
			}
			if ch.Usage != nil {
				reported = ch.Usage
			}
		}
		// The usage-only last chunk muse asked for reaches only a client
		// that asked for it too.
		if req.IncludeUsage || len(ch.Choices) > 0 || ch.Usage == nil {
			if w.Chunk(chunk) != nil {
				u.Status = StatusClientClosed
				break
			}
		}
		chunk, err = st.Next()
		if errors.Is(err, io.EOF) {
			if w.End() != nil {
				u.Status = StatusClientClosed
			}
			break
		}
		if err != nil {
			if ctx.Err() != nil {
				u.Status = StatusClientClosed
			} else {
				u.Status = StatusUpstreamFailed
				w.Fail(err)
			}
			break
		}
	}
	if reported != nil {
		u.PromptTokens, u.CompletionTokens = reported.PromptTokens, reported.CompletionTokens
	} else {
		u.PromptTokens, u.CompletionTokens, u.Estimated = PromptTokens(req.Messages), CountTokens(text.String()), true
	}
	s.meter(ctx, u)
	return true, nil
}

func (s *Service) usage(c Caller, req ChatRequest, r route, start time.Time) Usage {
	return Usage{ID: ids.New(), AccountID: c.AccountID, Caller: c.ID, Alias: req.Model, Provider: r.provider,
		UpstreamModel: r.up.Model, Status: StatusOK, CreatedAt: start}
}

// meterTimeout bounds the metering write, which outlives the request.
const meterTimeout = 10 * time.Second

// meter writes the usage row and its event; a client that left does not
// cancel it.
func (s *Service) meter(ctx context.Context, u Usage) {
	u.LatencyMS = max(0, s.now().Sub(u.CreatedAt).Milliseconds())
	mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), meterTimeout)
	defer cancel()
	if err := s.store.RecordUsage(mctx, u, consumedEvent(u)); err != nil {
		s.logger().ErrorContext(ctx, "metering failed: a completion is unrecorded", "account_id", u.AccountID,
			"alias", u.Alias, "prompt_tokens", u.PromptTokens, "completion_tokens", u.CompletionTokens, "err", err.Error())
	}
}
