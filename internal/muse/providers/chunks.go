// Package providers holds muse's upstream adapters behind muse.Provider:
// openai (any OpenAI-compatible base URL, forwarded as it is with only
// model rewritten), anthropic (the Messages API through the official
// SDK, translated both ways) and echo (the development stand-in). Every
// answer leaves here in OpenAI's chat completion shapes.
package providers

import (
	"encoding/json"
	"time"
)

// completion is OpenAI's chat.completion object, as the translated
// providers build it.
type completion struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []choice `json:"choices"`
	Usage   *usage   `json:"usage,omitempty"`
}

type choice struct {
	Index        int      `json:"index"`
	Message      *message `json:"message,omitempty"`
	Delta        *message `json:"delta,omitempty"`
	FinishReason *string  `json:"finish_reason"`
}

type message struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

type usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

func newUsage(prompt, completion int64) *usage {
	return &usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
}

func ptr[T any](v T) *T { return &v }

// whole is a complete chat.completion body.
func whole(id, model, text, finish string, u *usage) []byte {
	b, _ := json.Marshal(completion{ID: id, Object: "chat.completion", Created: time.Now().Unix(), Model: model,
		Choices: []choice{{Message: &message{Role: "assistant", Content: &text}, FinishReason: &finish}}, Usage: u})
	return b
}

// chunker builds the chat.completion.chunk objects of one stream.
type chunker struct {
	id, model string
	created   int64
}

func newChunker(id, model string) chunker {
	return chunker{id: id, model: model, created: time.Now().Unix()}
}

func (c chunker) chunk(delta *message, finish *string, u *usage) []byte {
	ch := completion{ID: c.id, Object: "chat.completion.chunk", Created: c.created, Model: c.model, Usage: u, Choices: []choice{}}
	if delta != nil || finish != nil {
		if delta == nil {
			delta = &message{}
		}
		ch.Choices = append(ch.Choices, choice{Delta: delta, FinishReason: finish})
	}
	b, _ := json.Marshal(ch)
	return b
}

// upstreamError is an error body in OpenAI's shape.
func errorBody(message, typ string) []byte {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": message, "type": typ, "param": nil, "code": nil}})
	return b
}
