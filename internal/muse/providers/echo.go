package providers

import (
	"context"
	"io"
	"strings"

	"github.com/platformco/platform/internal/ids"
	"github.com/platformco/platform/internal/muse"
)

// Echo answers with the last user message, token counts included: the
// development stand-in for a model, needing no key and no network. The
// command refuses it outside development.
type Echo struct{}

var _ muse.Provider = Echo{}

func lastUser(req muse.ChatRequest) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "user" {
			return req.Messages[i].Content
		}
	}
	return ""
}

// Complete implements muse.Provider.
func (Echo) Complete(_ context.Context, up muse.Upstream, req muse.ChatRequest) (muse.Reply, error) {
	text := lastUser(req)
	return muse.Reply{Body: whole("chatcmpl-"+ids.New(), up.Model, text, "stop",
		newUsage(muse.PromptTokens(req.Messages), muse.CountTokens(text)))}, nil
}

// Stream implements muse.Provider: the answer word by word.
func (Echo) Stream(ctx context.Context, up muse.Upstream, req muse.ChatRequest) (muse.Stream, error) {
	text := lastUser(req)
	c := newChunker("chatcmpl-"+ids.New(), up.Model)
	chunks := [][]byte{c.chunk(&message{Role: "assistant", Content: ptr("")}, nil, nil)}
	for _, w := range strings.SplitAfter(text, " ") {
		if w != "" {
			chunks = append(chunks, c.chunk(&message{Content: ptr(w)}, nil, nil))
		}
	}
	chunks = append(chunks, c.chunk(nil, ptr("stop"), nil),
		c.chunk(nil, nil, newUsage(muse.PromptTokens(req.Messages), muse.CountTokens(text))))
	return &listStream{ctx: ctx, chunks: chunks}, nil
}

type listStream struct {
	ctx    context.Context
	chunks [][]byte
}

func (s *listStream) Next() ([]byte, error) {
	if err := s.ctx.Err(); err != nil {
		return nil, err
	}
	if len(s.chunks) == 0 {
		return nil, io.EOF
	}
	c := s.chunks[0]
	s.chunks = s.chunks[1:]
	return c, nil
}

func (s *listStream) Close() error { return nil }
