package providers

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/ssestream"
	"github.com/tidwall/gjson"

	"github.com/platformco/platform/internal/muse"
)

// DefaultMaxTokens is max_tokens for a request that names none (the
// Messages API requires one).
const DefaultMaxTokens = 4096

// Anthropic speaks the Messages API through the official SDK, translating
// chat completions to messages and the answers (streams included) back.
// The SDK's own retries are off: failover is muse's.
type Anthropic struct {
	Client *http.Client
}

var _ muse.Provider = (*Anthropic)(nil)

func (p *Anthropic) client(up muse.Upstream) anthropic.Client {
	opts := []option.RequestOption{option.WithAPIKey(up.APIKey), option.WithHTTPClient(p.Client), option.WithMaxRetries(0)}
	if up.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(strings.TrimRight(up.BaseURL, "/")+"/"))
	}
	return anthropic.NewClient(opts...)
}

// params translates a chat request: system and developer messages become
// the system prompt, tool results user turns.
func params(up muse.Upstream, req muse.ChatRequest) (anthropic.MessageNewParams, []option.RequestOption) {
	p := anthropic.MessageNewParams{Model: anthropic.Model(up.Model), MaxTokens: req.MaxTokens, StopSequences: req.Stop}
	if p.MaxTokens == 0 {
		p.MaxTokens = DefaultMaxTokens
	}
	for _, m := range req.Messages {
		switch m.Role {
		case "system", "developer":
			p.System = append(p.System, anthropic.TextBlockParam{Text: m.Content})
		case "assistant":
			if m.Content != "" {
				p.Messages = append(p.Messages, anthropic.NewAssistantMessage(anthropic.NewTextBlock(m.Content)))
			}
		default:
			p.Messages = append(p.Messages, anthropic.NewUserMessage(anthropic.NewTextBlock(m.Content)))
		}
	}
	var opts []option.RequestOption
	if req.Temperature != nil {
		opts = append(opts, option.WithJSONSet("temperature", *req.Temperature))
	}
	if req.TopP != nil {
		opts = append(opts, option.WithJSONSet("top_p", *req.TopP))
	}
	return p, opts
}

// finishReason maps a stop reason to chat completions' finish_reason.
func finishReason(r anthropic.StopReason) string {
	switch r {
	case anthropic.StopReasonMaxTokens:
		return "length"
	case anthropic.StopReasonToolUse:
		return "tool_calls"
	case anthropic.StopReasonRefusal:
		return "content_filter"
	default:
		return "stop"
	}
}

// translateError turns the SDK's API error into an upstream refusal in
// OpenAI's shape; anything else (a connection failure) stays as it is.
func translateError(err error) error {
	var ae *anthropic.Error
	if !errors.As(err, &ae) {
		return err
	}
	msg := gjson.Get(ae.RawJSON(), "error.message").String()
	if msg == "" {
		msg = http.StatusText(ae.StatusCode)
	}
	typ := gjson.Get(ae.RawJSON(), "error.type").String()
	if typ == "" {
		typ = "api_error"
	}
	return &muse.UpstreamError{Status: ae.StatusCode, Body: errorBody(msg, typ), Message: msg}
}

func inputTokens(u anthropic.Usage) int64 {
	return u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
}

// Complete implements muse.Provider.
func (p *Anthropic) Complete(ctx context.Context, up muse.Upstream, req muse.ChatRequest) (muse.Reply, error) {
	params, opts := params(up, req)
	c := p.client(up)
	msg, err := c.Messages.New(ctx, params, opts...)
	if err != nil {
		return muse.Reply{}, translateError(err)
	}
	var text strings.Builder
	for _, b := range msg.Content {
		if b.Type == "text" {
			text.WriteString(b.Text)
		}
	}
	return muse.Reply{Body: whole("chatcmpl-"+msg.ID, string(msg.Model), text.String(), finishReason(msg.StopReason),
		newUsage(inputTokens(msg.Usage), msg.Usage.OutputTokens))}, nil
}

// Stream implements muse.Provider.
func (p *Anthropic) Stream(ctx context.Context, up muse.Upstream, req muse.ChatRequest) (muse.Stream, error) {
	params, opts := params(up, req)
	c := p.client(up)
	return &anthropicStream{s: c.Messages.NewStreaming(ctx, params, opts...), model: up.Model}, nil
}

// anthropicStream turns message events into chat.completion.chunks: the
// start into the assistant's role, text deltas into content, the message
// delta into the finish reason, and the stop into the usage chunk.
type anthropicStream struct {
	s             *ssestream.Stream[anthropic.MessageStreamEventUnion]
	model         string
	c             chunker
	input, output int64
	done          bool
}

func (a *anthropicStream) Next() ([]byte, error) {
	for !a.done {
		if !a.s.Next() {
			if err := a.s.Err(); err != nil {
				return nil, translateError(err)
			}
			return nil, io.ErrUnexpectedEOF
		}
		switch ev := a.s.Current().AsAny().(type) {
		case anthropic.MessageStartEvent:
			a.c = newChunker("chatcmpl-"+ev.Message.ID, a.model)
			a.input, a.output = inputTokens(ev.Message.Usage), ev.Message.Usage.OutputTokens
			return a.c.chunk(&message{Role: "assistant", Content: ptr("")}, nil, nil), nil
		case anthropic.ContentBlockDeltaEvent:
			if ev.Delta.Type == "text_delta" && ev.Delta.Text != "" {
				return a.c.chunk(&message{Content: ptr(ev.Delta.Text)}, nil, nil), nil
			}
		case anthropic.MessageDeltaEvent:
			if ev.Usage.OutputTokens > 0 {
				a.output = ev.Usage.OutputTokens
			}
			if ev.Usage.InputTokens > 0 {
				a.input = ev.Usage.InputTokens + ev.Usage.CacheCreationInputTokens + ev.Usage.CacheReadInputTokens
			}
			return a.c.chunk(nil, ptr(finishReason(ev.Delta.StopReason)), nil), nil
		case anthropic.MessageStopEvent:
			a.done = true
			return a.c.chunk(nil, nil, newUsage(a.input, a.output)), nil
		}
	}
	return nil, io.EOF
}

func (a *anthropicStream) Close() error { return a.s.Close() }
