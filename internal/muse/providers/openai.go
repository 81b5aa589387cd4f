package providers

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/tidwall/sjson"

	"github.com/platformco/platform/internal/muse"
)

// DefaultOpenAIBaseURL is where a credential without a base URL goes.
const DefaultOpenAIBaseURL = "https://api.openai.com/v1"

// MaxReply bounds a whole completion read from an upstream.
const MaxReply = 32 << 20

// OpenAI forwards to any OpenAI-compatible base URL (OpenAI, vLLM,
// llama.cpp's server, Ollama, OpenRouter): the client's body as it is
// with only model rewritten (and, for a stream, usage asked for in the
// last chunk); the answer back as it came, a stream chunk by chunk.
type OpenAI struct {
	Client *http.Client
}

var _ muse.Provider = (*OpenAI)(nil)

func (p *OpenAI) post(ctx context.Context, up muse.Upstream, body []byte) (*http.Response, error) {
	base := strings.TrimRight(up.BaseURL, "/")
	if base == "" {
		base = DefaultOpenAIBaseURL
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+up.APIKey)
	res, err := p.Client.Do(req)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		defer res.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
		return nil, refusal(res.StatusCode, b)
	}
	return res, nil
}

// refusal keeps an upstream's error body when it is in OpenAI's shape.
func refusal(status int, b []byte) *muse.UpstreamError {
	var e struct {
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(b, &e) == nil && e.Error != nil {
		return &muse.UpstreamError{Status: status, Body: b, Message: e.Error.Message}
	}
	return &muse.UpstreamError{Status: status, Message: http.StatusText(status)}
}

// Complete implements muse.Provider.
func (p *OpenAI) Complete(ctx context.Context, up muse.Upstream, req muse.ChatRequest) (muse.Reply, error) {
	body, err := sjson.SetBytes(req.Body, "model", up.Model)
	if err != nil {
		return muse.Reply{}, err
	}
	res, err := p.post(ctx, up, body)
	if err != nil {
		return muse.Reply{}, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, MaxReply))
	if err != nil {
		return muse.Reply{}, err
	}
	return muse.Reply{Body: b}, nil
}

// Stream implements muse.Provider.
func (p *OpenAI) Stream(ctx context.Context, up muse.Upstream, req muse.ChatRequest) (muse.Stream, error) {
	body, err := sjson.SetBytes(req.Body, "model", up.Model)
	if err == nil {
		body, err = sjson.SetBytes(body, "stream_options.include_usage", true)
	}
	if err != nil {
		return nil, err
	}
	res, err := p.post(ctx, up, body)
	if err != nil {
		return nil, err
	}
	return &sseStream{body: res.Body, r: bufio.NewReaderSize(res.Body, 64<<10)}, nil
}

// sseStream reads server-sent events and yields each event's data.
type sseStream struct {
	body io.Closer
	r    *bufio.Reader
}

// maxEvent bounds one event's data.
const maxEvent = 8 << 20

func (s *sseStream) Next() ([]byte, error) {
	var data []byte
	for {
		line, err := s.r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, errors.New("upstream: an event line is too long")
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				// A stream that ends without [DONE] was cut short.
				return nil, io.ErrUnexpectedEOF
			}
			return nil, err
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
			if data == nil {
				continue
			}
			if bytes.Equal(data, []byte("[DONE]")) {
				return nil, io.EOF
			}
			return data, nil
		case bytes.HasPrefix(line, []byte("data:")):
			v := bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, v...)
			if len(data) > maxEvent {
				return nil, fmt.Errorf("upstream: an event over %d bytes", maxEvent)
			}
		}
	}
}

func (s *sseStream) Close() error { return s.body.Close() }
