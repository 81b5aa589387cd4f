// Package musetest holds loopback upstreams for muse's tests, speaking
// OpenAI's chat completions and Anthropic's Messages API as documented,
// server-sent events included, with the faults the tests need.
package musetest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Fault is how an upstream misbehaves.
type Fault int

// The faults.
const (
	OK          Fault = iota
	RateLimited       // 429 with OpenAI's (or Anthropic's) error body
	ServerError       // 500
	Hang              // no answer until the request is cancelled
	MidStream         // a stream that breaks after its second chunk
	NoUsage           // an answer without usage (OpenAI only)
	BadRequest        // 400: the request's own fault
)

// Upstream is one fake provider.
type Upstream struct {
	*httptest.Server
	Name string
	mu   sync.Mutex
	// Fault applies to every request until changed.
	fault  Fault
	bodies [][]byte
	calls  int
	// Words are the answer's words.
	Words []string
	// Pause, when set, holds a stream after its second word until it is
	// closed or the request ends.
	Pause chan struct{}
}

// SetFault changes how the upstream answers.
func (u *Upstream) SetFault(f Fault) {
	u.mu.Lock()
	u.fault = f
	u.mu.Unlock()
}

// Calls returns how many requests arrived.
func (u *Upstream) Calls() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.calls
}

// LastBody returns the last request's body as received.
func (u *Upstream) LastBody() []byte {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.bodies) == 0 {
		return nil
	}
	return u.bodies[len(u.bodies)-1]
}

func (u *Upstream) arrive(r *http.Request) (Fault, []byte) {
	b, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	defer u.mu.Unlock()
	u.calls++
	u.bodies = append(u.bodies, b)
	return u.fault, b
}

// Text is the whole answer.
func (u *Upstream) Text() string { return strings.Join(u.Words, "") }

func newUpstream(t testing.TB, name string, h func(u *Upstream) http.Handler) *Upstream {
	u := &Upstream{Name: name, Words: []string{"Hello", " from", " " + name}}
	u.Server = httptest.NewServer(h(u))
	t.Cleanup(u.Server.Close)
	return u
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func event(w http.ResponseWriter, name string, v any) {
	b, _ := json.Marshal(v)
	if name != "" {
		fmt.Fprintf(w, "event: %s\n", name)
	}
	fmt.Fprintf(w, "data: %s\n\n", b)
	w.(http.Flusher).Flush()
}

// NewOpenAI starts an OpenAI-compatible upstream: POST
// /v1/chat/completions, as OpenAI documents it. Its BaseURL is URL+"/v1".
func NewOpenAI(t testing.TB, name string) *Upstream {
	return newUpstream(t, name, func(u *Upstream) http.Handler {
		mux := http.NewServeMux()
		mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
			fault, body := u.arrive(r)
			var req struct {
				Model         string `json:"model"`
				Stream        bool   `json:"stream"`
				StreamOptions *struct {
					IncludeUsage bool `json:"include_usage"`
				} `json:"stream_options"`
			}
			if r.Header.Get("Authorization") == "" || json.Unmarshal(body, &req) != nil {
				writeJSON(w, 401, map[string]any{"error": map[string]any{"message": "no key", "type": "invalid_request_error", "code": "invalid_api_key"}})
				return
			}
			switch fault {
			case RateLimited:
				writeJSON(w, 429, map[string]any{"error": map[string]any{"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}})
				return
			case ServerError:
				writeJSON(w, 500, map[string]any{"error": map[string]any{"message": "The server had an error", "type": "server_error", "code": nil}})
				return
			case BadRequest:
				writeJSON(w, 400, map[string]any{"error": map[string]any{"message": "max_tokens is too large", "type": "invalid_request_error", "param": "max_tokens", "code": nil}})
				return
			case Hang:
				<-r.Context().Done()
				return
			}
			usage := map[string]any{"prompt_tokens": 11, "completion_tokens": len(u.Words), "total_tokens": 11 + len(u.Words)}
			if !req.Stream {
				body := map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000, "model": req.Model,
					"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": u.Text()}, "finish_reason": "stop"}}}
				if fault != NoUsage {
					body["usage"] = usage
				}
				writeJSON(w, 200, body)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			chunk := func(delta map[string]any, finish any) map[string]any {
				return map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1700000000, "model": req.Model,
					"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
			}
			event(w, "", chunk(map[string]any{"role": "assistant", "content": ""}, nil))
			for i, word := range u.Words {
				if fault == MidStream && i == 1 {
					panic(http.ErrAbortHandler) // the connection drops mid-stream
				}
				if u.Pause != nil && i == 2 {
					select {
					case <-u.Pause:
					case <-r.Context().Done():
						return
					}
				}
				event(w, "", chunk(map[string]any{"content": word}, nil))
			}
			event(w, "", chunk(map[string]any{}, "stop"))
			if req.StreamOptions != nil && req.StreamOptions.IncludeUsage && fault != NoUsage {
				event(w, "", map[string]any{"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1700000000,
					"model": req.Model, "choices": []any{}, "usage": usage})
			}
			fmt.Fprint(w, "data: [DONE]\n\n")
		})
		return mux
	})
}

// NewAnthropic starts an upstream speaking Anthropic's Messages API: POST
// /v1/messages, streaming with its named events. Its BaseURL is URL.
func NewAnthropic(t testing.TB, name string) *Upstream {
	return newUpstream(t, name, func(u *Upstream) http.Handler {
		mux := http.NewServeMux()
		mux.HandleFunc("POST /v1/messages", func(w http.ResponseWriter, r *http.Request) {
			fault, body := u.arrive(r)
			var req struct {
				Model     string `json:"model"`
				MaxTokens int    `json:"max_tokens"`
				Stream    bool   `json:"stream"`
				Messages  []any  `json:"messages"`
			}
			if (r.Header.Get("X-Api-Key") == "" && !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ")) || r.Header.Get("Anthropic-Version") == "" || json.Unmarshal(body, &req) != nil ||
				req.MaxTokens == 0 || len(req.Messages) == 0 {
				writeJSON(w, 400, map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": "bad request"}})
				return
			}
			switch fault {
			case RateLimited:
				writeJSON(w, 429, map[string]any{"type": "error", "error": map[string]any{"type": "rate_limit_error", "message": "Number of request tokens has exceeded your per-minute rate limit"}})
				return
			case ServerError:
				writeJSON(w, 529, map[string]any{"type": "error", "error": map[string]any{"type": "overloaded_error", "message": "Overloaded"}})
				return
			case BadRequest:
				writeJSON(w, 400, map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": "max_tokens: too large"}})
				return
			case Hang:
				<-r.Context().Done()
				return
			}
			msg := map[string]any{"id": "msg_01", "type": "message", "role": "assistant", "model": req.Model, "content": []any{},
				"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 13, "output_tokens": 1}}
			if !req.Stream {
				msg["content"] = []any{map[string]any{"type": "text", "text": u.Text()}}
				msg["stop_reason"] = "end_turn"
				msg["usage"] = map[string]any{"input_tokens": 13, "output_tokens": len(u.Words)}
				writeJSON(w, 200, msg)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			event(w, "message_start", map[string]any{"type": "message_start", "message": msg})
			event(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
			event(w, "ping", map[string]any{"type": "ping"})
			for i, word := range u.Words {
				if fault == MidStream && i == 1 {
					panic(http.ErrAbortHandler)
				}
				event(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": word}})
			}
			event(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
			event(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil},
				"usage": map[string]any{"output_tokens": len(u.Words)}})
			event(w, "message_stop", map[string]any{"type": "message_stop"})
		})
		return mux
	})
}
