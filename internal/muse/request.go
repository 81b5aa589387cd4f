package muse

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/platformco/platform/internal/errs"
)

// ChatRequest is what muse reads of a chat completion request; Body is the
// request as the client sent it, which the openai provider forwards with
// only model rewritten.
type ChatRequest struct {
	Model             string
	Stream            bool
	IncludeUsage      bool // stream_options.include_usage
	Messages          []Message
	MaxTokens         int64 // max_completion_tokens, or max_tokens; 0 when absent
	Temperature, TopP *float64
	Stop              []string
	Body              []byte
}

// Message is one chat message with its text content flattened.
type Message struct {
	Role    string
	Content string
}

type wireRequest struct {
	Model               *string          `json:"model"`
	Messages            []wireMessage    `json:"messages"`
	Stream              *bool            `json:"stream"`
	StreamOptions       *json.RawMessage `json:"stream_options"`
	MaxTokens           *int64           `json:"max_tokens"`
	MaxCompletionTokens *int64           `json:"max_completion_tokens"`
	Temperature         *float64         `json:"temperature"`
	TopP                *float64         `json:"top_p"`
	Stop                json.RawMessage  `json:"stop"`
}

type wireMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type contentPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func invalid(msg string) error { return errs.New(CodeInvalidRequest, msg) }

var roles = map[string]bool{"system": true, "developer": true, "user": true, "assistant": true, "tool": true}

// ParseChat reads a chat completion request. Errors: invalid_request
// (not JSON, no model, no messages, a message without a role or with
// content that is neither text nor parts).
func ParseChat(body []byte) (ChatRequest, error) {
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return ChatRequest{}, invalid("the body is not a chat completion request: " + jsonProblem(err))
	}
	if w.Model == nil || strings.TrimSpace(*w.Model) == "" {
		return ChatRequest{}, invalid("you must provide a model parameter")
	}
	if len(w.Messages) == 0 {
		return ChatRequest{}, invalid("messages must hold at least one message")
	}
	r := ChatRequest{Model: *w.Model, Body: body, Temperature: w.Temperature, TopP: w.TopP}
	if w.Stream != nil {
		r.Stream = *w.Stream
	}
	if w.StreamOptions != nil {
		var so struct {
			IncludeUsage bool `json:"include_usage"`
		}
		if err := json.Unmarshal(*w.StreamOptions, &so); err != nil {
			return ChatRequest{}, invalid("stream_options must be an object")
		}
		r.IncludeUsage = so.IncludeUsage
	}
	switch {
	case w.MaxCompletionTokens != nil:
		r.MaxTokens = *w.MaxCompletionTokens
	case w.MaxTokens != nil:
		r.MaxTokens = *w.MaxTokens
	}
	if r.MaxTokens < 0 {
		return ChatRequest{}, invalid("max_tokens must not be negative")
	}
	if len(w.Stop) > 0 && !bytes.Equal(w.Stop, []byte("null")) {
		var one string
		if json.Unmarshal(w.Stop, &one) == nil {
			r.Stop = []string{one}
		} else if json.Unmarshal(w.Stop, &r.Stop) != nil {
			return ChatRequest{}, invalid("stop must be a string or an array of strings")
		}
	}
	for i, m := range w.Messages {
		if !roles[m.Role] {
			return ChatRequest{}, invalid("messages[" + strconv.Itoa(i) + "].role must be system, developer, user, assistant or tool")
		}
		text, ok := flatten(m.Content)
		if !ok {
			return ChatRequest{}, invalid("messages[" + strconv.Itoa(i) + "].content must be a string or an array of content parts")
		}
		r.Messages = append(r.Messages, Message{Role: m.Role, Content: text})
	}
	return r, nil
}

// flatten returns a message content's text: a string, or the text parts
// of an array, or nothing (null, as an assistant's tool call has).
func flatten(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", true
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var parts []contentPart
	if json.Unmarshal(raw, &parts) != nil {
		return "", false
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), true
}

func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return te.Field + " has the wrong type"
	}
	return "malformed JSON"
}
