package localmail_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/courier/localmail"
)

func message(id string, at time.Time, html string) courier.Message {
	return courier.Message{ID: id, AttemptID: "a-" + id, From: "Platform <no-reply@example.com>", To: "ann@example.com",
		Subject: "Subject " + id, Text: "text of " + id, HTML: html, CreatedAt: at}
}

func TestMailboxWritesAndListsNewestFirst(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "mail")
	box, err := localmail.New(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	for i, id := range []string{"11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"} {
		if err := box.Deliver(context.Background(), message(id, now.Add(time.Duration(i)*time.Minute), "<p>hi</p>")); err != nil {
			t.Fatalf("Deliver: %v", err)
		}
	}
	// A repeated attempt replaces its files rather than adding a copy.
	if err := box.Deliver(context.Background(), message("11111111-1111-4111-8111-111111111111", now, "<p>hi</p>")); err != nil {
		t.Fatal(err)
	}
	eml, err := os.ReadFile(filepath.Join(dir, "11111111-1111-4111-8111-111111111111.eml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"To: <ann@example.com>", "Subject: Subject 1111", "text/plain", "text/html", "X-Courier-Attempt: a-1111"} {
		if !strings.Contains(string(eml), want) {
			t.Errorf(".eml lacks %q", want)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 4 {
		t.Errorf("mail dir holds %d files, want 4 (.eml and .json per message)", len(entries))
	}
	for _, e := range entries {
		info, _ := e.Info()
		if perm := info.Mode().Perm(); perm != 0o600 {
			t.Errorf("%s mode = %o, want 600", e.Name(), perm)
		}
	}
	rec := httptest.NewRecorder()
	box.JSON().ServeHTTP(rec, httptest.NewRequest("GET", "/dev/mail.json", nil))
	var got struct {
		Messages []localmail.Entry `json:"messages"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Messages) != 2 || got.Messages[0].ID != "22222222-2222-4222-8222-222222222222" {
		t.Fatalf("messages = %+v, want 2, newest first", got.Messages)
	}
	if m := got.Messages[1]; m.To != "ann@example.com" || m.Text != "text of 11111111-1111-4111-8111-111111111111" || m.HTML != "<p>hi</p>" || !m.CreatedAt.Equal(now) {
		t.Errorf("entry = %+v", m)
	}
}

func TestMailboxPageCannotBeScriptedByAMessage(t *testing.T) {
	box, err := localmail.New(t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if err := box.Deliver(context.Background(), message("33333333-3333-4333-8333-333333333333", time.Now(), `<script>alert(1)</script>"><img src=x onerror=alert(2)>`)); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	box.Page().ServeHTTP(rec, httptest.NewRequest("GET", "/dev/mail", nil))
	page := rec.Body.String()
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("GET /dev/mail = %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
	if strings.Contains(page, "<script>") || strings.Contains(page, "<img") {
		t.Errorf("the page carries a message's markup unescaped:\n%s", page)
	}
	if !strings.Contains(page, `sandbox=""`) || !strings.Contains(rec.Header().Get("Content-Security-Policy"), "default-src 'none'") {
		t.Errorf("the HTML part is not sandboxed, or the page has no CSP")
	}
}
