package muse

import (
	"context"
	"fmt"
)

// Upstream is one target opened for a call: the provider, its base URL
// and key (out of the vault), and the model the upstream knows.
type Upstream struct {
	Provider string
	BaseURL  string
	APIKey   string
	Model    string
}

// TokenUsage is what an upstream reported for a completion.
type TokenUsage struct {
	Prompt, Completion int64
}

// Reply is a whole completion in OpenAI's chat.completion shape.
type Reply struct {
	Body []byte
}

// Stream yields a streamed completion's chunks, each one OpenAI
// chat.completion.chunk object as JSON, and io.EOF after the last.
type Stream interface {
	Next() ([]byte, error)
	Close() error
}

// Provider is one kind of upstream (openai, anthropic, echo). Both calls
// return an *UpstreamError when the upstream refused; any other error is
// a failure to reach it.
type Provider interface {
	// Complete asks for a whole completion.
	Complete(ctx context.Context, up Upstream, req ChatRequest) (Reply, error)
	// Stream starts a streamed completion; the chunks arrive through Next.
	Stream(ctx context.Context, up Upstream, req ChatRequest) (Stream, error)
}

// UpstreamError is an upstream's refusal: its status, and its body when
// that is already in OpenAI's error shape (the openai provider's) or
// translated to it.
type UpstreamError struct {
	Status  int
	Body    []byte
	Message string
}

func (e *UpstreamError) Error() string {
	return fmt.Sprintf("upstream answered %d: %s", e.Status, e.Message)
}

// Retryable reports whether another target should be tried: a 429 or a
// 5xx (muse.md section 2).
func (e *UpstreamError) Retryable() bool { return e.Status == 429 || e.Status >= 500 }
