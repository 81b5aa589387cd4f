// Package localmail is the development mail adapter: each message is
// written as an .eml file (and a JSON summary beside it) under one
// directory, and listed at GET /dev/mail (HTML) and GET /dev/mail.json.
// It never delivers anything; courier refuses it outside development.
package localmail

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/courier/smtp"
	"github.com/platformco/platform/internal/httpx"
)

// Mailbox writes and lists messages under Dir.
type Mailbox struct {
	dir    string
	logger *slog.Logger
}

var _ courier.Mailer = (*Mailbox)(nil)

// New returns a mailbox over dir, creating it (0700) if needed.
func New(dir string, logger *slog.Logger) (*Mailbox, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	return &Mailbox{dir: dir, logger: logger}, nil
}

// Entry is one message in /dev/mail.json.
type Entry struct {
	ID        string    `json:"id"`
	To        string    `json:"to"`
	Subject   string    `json:"subject"`
	Text      string    `json:"text"`
	HTML      string    `json:"html"`
	CreatedAt time.Time `json:"created_at"`
}

// Deliver writes m as <email id>.eml and <email id>.json (0600). Files are
// written under a temporary name and renamed, so a listing never reads a
// half-written one; a repeated attempt replaces the same files.
func (b *Mailbox) Deliver(_ context.Context, m courier.Message) error {
	msg, err := smtp.Build(m)
	if err != nil {
		return &courier.DeliveryError{Permanent: true, Detail: err.Error()}
	}
	var eml bytes.Buffer
	if _, err := msg.WriteTo(&eml); err != nil {
		return err
	}
	summary, err := json.Marshal(Entry{ID: m.ID, To: m.To, Subject: m.Subject, Text: m.Text, HTML: m.HTML, CreatedAt: m.CreatedAt.UTC()})
	if err != nil {
		return err
	}
	if err := b.write(m.ID+".eml", eml.Bytes()); err != nil {
		return err
	}
	return b.write(m.ID+".json", summary)
}

func (b *Mailbox) write(name string, data []byte) error {
	tmp, err := os.CreateTemp(b.dir, ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(b.dir, name))
}

// List returns every message, newest first.
func (b *Mailbox) List() ([]Entry, error) {
	names, err := filepath.Glob(filepath.Join(b.dir, "*.json"))
	if err != nil {
		return nil, err
	}
	out := []Entry{}
	for _, n := range names {
		raw, err := os.ReadFile(n)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return nil, err
		}
		var e Entry
		if err := json.Unmarshal(raw, &e); err != nil {
			b.logger.Warn("mailbox: unreadable summary", "file", filepath.Base(n), "err", err.Error())
			continue
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(x, y Entry) int {
		if c := y.CreatedAt.Compare(x.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(y.ID, x.ID)
	})
	return out, nil
}

// JSON answers GET /dev/mail.json: {messages: [...]}, newest first.
func (b *Mailbox) JSON() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		list, err := b.List()
		if err != nil {
			b.logger.Error("mailbox: list failed", "err", err.Error())
			httpx.WriteProblem(w, r, http.StatusInternalServerError, "internal", "the mailbox could not be read", nil)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		httpx.WriteJSON(w, http.StatusOK, map[string]any{"messages": list})
	})
}

var page = template.Must(template.New("mail").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Local mailbox</title>
<style>body{font-family:sans-serif;margin:2rem;max-width:60rem}article{border:1px solid #ccc;border-radius:6px;padding:1rem;margin:1rem 0}
pre{white-space:pre-wrap;background:#f6f6f6;padding:.5rem}iframe{width:100%;height:14rem;border:1px solid #ddd}small{color:#666}</style>
</head><body>
<h1>Local mailbox</h1>
<p><small>{{len .}} message(s), newest first. Courier's <code>local</code> adapter writes here instead of sending; <a href="/dev/mail.json">JSON</a>.</small></p>
{{range .}}<article id="{{.ID}}">
<h2>{{.Subject}}</h2>
<p><small>to {{.To}} · {{.CreatedAt.Format "2006-01-02 15:04:05 MST"}} · {{.ID}}</small></p>
<pre>{{.Text}}</pre>
<iframe sandbox="" srcdoc="{{.HTML}}" title="HTML part"></iframe>
</article>{{else}}<p>No mail yet.</p>{{end}}
</body></html>
`))

// Page answers GET /dev/mail: every message as HTML, the HTML parts in
// sandboxed frames so a message's markup cannot script the page.
func (b *Mailbox) Page() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		list, err := b.List()
		if err != nil {
			b.logger.Error("mailbox: list failed", "err", err.Error())
			httpx.WriteProblem(w, r, http.StatusInternalServerError, "internal", "the mailbox could not be read", nil)
			return
		}
		var buf bytes.Buffer
		if err := page.Execute(&buf, list); err != nil {
			b.logger.Error("mailbox: render failed", "err", err.Error())
			httpx.WriteProblem(w, r, http.StatusInternalServerError, "internal", "the mailbox could not be shown", nil)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-src 'self'")
		w.Header().Set("Content-Length", fmt.Sprint(buf.Len()))
		_, _ = w.Write(buf.Bytes())
	})
}
