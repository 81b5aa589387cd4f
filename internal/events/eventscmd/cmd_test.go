package eventscmd

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/platformco/platform/internal/cli"
	"github.com/platformco/platform/internal/events"
	"github.com/platformco/platform/internal/events/eventstest"
	"github.com/platformco/platform/internal/identity/sqlstore"
	"github.com/platformco/platform/internal/logtest"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
	"github.com/platformco/platform/internal/testutil"
)

func testEnv(vars map[string]string) (cli.Env, *logtest.Buffer, *logtest.Buffer) {
	out, errOut := &logtest.Buffer{}, &logtest.Buffer{}
	return cli.Env{Getenv: func(k string) string { return vars[k] }, Stdout: out, Stderr: errOut}, out, errOut
}

func TestCheckOK(t *testing.T) {
	env, out, errOut := testEnv(nil)
	if err := Run(context.Background(), []string{"check"}, env); err != nil {
		t.Fatalf("check: %v\n%s", err, errOut)
	}
	if !regexp.MustCompile(`^events check: ok: \d+ declared types`).MatchString(out.String()) {
		t.Errorf("stdout %q", out)
	}
}

// TestCheckOutsideTheRepository: without --dir the check runs on the
// schemas built into the binary, wherever it is run from.
func TestCheckOutsideTheRepository(t *testing.T) {
	t.Chdir(t.TempDir())
	env, out, errOut := testEnv(nil)
	if err := Run(context.Background(), []string{"check"}, env); err != nil {
		t.Fatalf("check outside the repository: %v\n%s", err, errOut)
	}
	if !regexp.MustCompile(`^events check: ok: \d+ declared types agree with the schemas built into this binary`).MatchString(out.String()) {
		t.Errorf("stdout %q", out)
	}
	if err := Run(context.Background(), []string{"check", "--dir", "."}, env); err == nil {
		t.Error("check --dir on a directory without schemas succeeded")
	}
}

func TestCheckNamesEachDisagreement(t *testing.T) {
	src, err := events.LocateSchemas(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	err = filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "identity/member/removed.schema.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "identity/member/joined.invalid.json"), []byte(`{"account_id":"0b7e2a4c-6f1d-4c5e-9a8b-1d2e3f405162","user_id":"0b7e2a4c-6f1d-4c5e-9a8b-1d2e3f405162","role":"member","invitation_id":"0b7e2a4c-6f1d-4c5e-9a8b-1d2e3f405162"}`), 0o644); err != nil {
		t.Fatal(err)
	}

	env, _, errOut := testEnv(nil)
	err = Run(context.Background(), []string{"check", "--dir", dir}, env)
	if err == nil || cli.ExitCode(err) != 1 {
		t.Fatalf("check of a broken directory: got %v, want exit 1", err)
	}
	for _, want := range []string{
		"events check: identity.member.removed: no payload schema at identity/member/removed.schema.json",
		"events check: identity.member.joined: negative example identity/member/joined.invalid.json passes its schema",
	} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	tests := [][]string{
		nil,
		{"frobnicate"},
		{"publish"},
		{"publish", "--service", "nonesuch"},
		{"check", "extra"},
		{"tail", "--old"},
	}
	for _, args := range tests {
		env, _, _ := testEnv(map[string]string{"DATABASE_URL": "sqlite:x.db", "EVENTS_URL": "nats://127.0.0.1:1"})
		if err := Run(context.Background(), args, env); !cli.IsUsage(err) {
			t.Errorf("%v: got %v, want a usage error", args, err)
		}
	}
}

func TestPublishConfigNamesTheVariable(t *testing.T) {
	tests := []struct {
		vars map[string]string
		want string
	}{
		{map[string]string{"EVENTS_URL": "nats://127.0.0.1:4222"}, "DATABASE_URL"},
		{map[string]string{"DATABASE_URL": "mysql://x"}, "DATABASE_URL"},
		{map[string]string{"DATABASE_URL": "sqlite:x.db"}, "EVENTS_URL"},
		{map[string]string{"DATABASE_URL": "sqlite:x.db", "EVENTS_URL": "http://127.0.0.1:4222"}, "EVENTS_URL"},
	}
	for _, tt := range tests {
		env, _, _ := testEnv(tt.vars)
		err := Run(context.Background(), []string{"publish", "--service", "identity"}, env)
		if err == nil || !strings.HasPrefix(err.Error(), tt.want+":") {
			t.Errorf("%v: got %v, want an error naming %s", tt.vars, err, tt.want)
		}
	}
}

func TestPublishRefusesUnmigratedDatabase(t *testing.T) {
	b := eventstest.Embedded(t)
	env, _, _ := testEnv(map[string]string{"DATABASE_URL": sqltest.URL(t, sqldb.SQLite), "EVENTS_URL": b.URL})
	err := Run(context.Background(), []string{"publish", "--service", "identity"}, env)
	if err == nil || !strings.Contains(err.Error(), "platform identity migrate") {
		t.Fatalf("got %v", err)
	}
}

func TestPublishDeliversTheOutbox(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		ctx := context.Background()
		b := eventstest.Embedded(t)
		url := sqltest.URL(t, engine)
		db, err := sqldb.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Migrate(ctx, sqlstore.Migrations); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 5; i++ {
			id, user := uuid.NewString(), uuid.NewString()
			now := sqldb.Timestamp(time.Now())
			if _, err := db.Exec(ctx, `INSERT INTO outbox (id, type, source, subject, time, data, created_at, next_attempt_at)
				VALUES ($1, 'identity.user.created', 'identity', $2, $3, $4, $3, $3)`,
				id, user, now, fmt.Sprintf(`{"user_id":%q,"email":"u%d@example.com"}`, user, i)); err != nil {
				t.Fatal(err)
			}
		}

		runCtx, cancel := context.WithCancel(ctx)
		env, _, _ := testEnv(map[string]string{"DATABASE_URL": url, "EVENTS_URL": b.URL})
		done := make(chan error, 1)
		go func() { done <- Run(runCtx, []string{"publish", "--service", "identity"}, env) }()
		testutil.Eventually(t, 30*time.Second, "outbox published", func() bool {
			var n int
			if err := db.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE published_at IS NULL`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			return n == 0
		})
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("publish: %v", err)
		}
		_, js := eventstest.Connect(t, b)
		if got := len(eventstest.ReadStream(t, js, b)); got != 5 {
			t.Errorf("stream holds %d events, want 5", got)
		}
	})
}

func publishEnvelope(t *testing.T, js jetstream.JetStream, e events.Envelope, msgID string) {
	t.Helper()
	body, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(context.Background(), events.Stream{}.Subject(e.Type), body, jetstream.WithMsgID(msgID)); err != nil {
		t.Fatal(err)
	}
}

func newEnvelope() events.Envelope {
	id := uuid.NewString()
	return events.Envelope{SpecVersion: "1.0", ID: uuid.NewString(), Type: "identity.account.deleted", Source: "identity",
		Subject: id, Time: time.Now().UTC(), Data: []byte(fmt.Sprintf(`{"account_id":%q}`, id))}
}

func startTail(t *testing.T, url string, args ...string) (*logtest.Buffer, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	env, out, _ := testEnv(map[string]string{"EVENTS_URL": url})
	done := make(chan error, 1)
	go func() { done <- Run(ctx, append([]string{"tail"}, args...), env) }()
	return out, func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("tail: %v", err)
		}
	}
}

func TestTailPrintsEachEnvelopeOnce(t *testing.T) {
	b := eventstest.Embedded(t)
	_, js := eventstest.Connect(t, b)
	eventstest.EnsureStream(t, js, b)
	first, second := newEnvelope(), newEnvelope()
	publishEnvelope(t, js, first, first.ID)
	publishEnvelope(t, js, first, uuid.NewString()) // the same event stored twice
	if _, err := js.Publish(context.Background(), "events.identity.account.deleted", []byte(`not an envelope`)); err != nil {
		t.Fatal(err)
	}
	publishEnvelope(t, js, second, second.ID)

	out, stop := startTail(t, b.URL)
	testutil.Eventually(t, 20*time.Second, "two lines", func() bool { return len(out.Lines()) >= 2 })
	stop()
	lines := out.Lines()
	if len(lines) != 2 {
		t.Fatalf("tail printed %d lines, want 2:\n%s", len(lines), out)
	}
	for i, want := range []events.Envelope{first, second} {
		got, err := events.Decode([]byte(lines[i]))
		if err != nil {
			t.Fatalf("line %d %q: %v", i, lines[i], err)
		}
		if got.ID != want.ID {
			t.Errorf("line %d: id %s, want %s", i, got.ID, want.ID)
		}
	}
}

func TestTailNewSkipsTheBacklog(t *testing.T) {
	b := eventstest.Embedded(t)
	_, js := eventstest.Connect(t, b)
	eventstest.EnsureStream(t, js, b)
	old := newEnvelope()
	publishEnvelope(t, js, old, old.ID)

	out, stop := startTail(t, b.URL, "--new")
	// The tail subscribes in the background; publish until it reports.
	testutil.Eventually(t, 20*time.Second, "a new event printed", func() bool {
		e := newEnvelope()
		publishEnvelope(t, js, e, e.ID)
		time.Sleep(50 * time.Millisecond)
		return len(out.Lines()) > 0
	})
	stop()
	if strings.Contains(out.String(), old.ID) {
		t.Errorf("--new printed the backlog:\n%s", out)
	}
}
