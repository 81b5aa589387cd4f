package sqlstore_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/identity"
	"github.com/platformco/platform/internal/identity/identitytest"
)

var ctx = context.Background()

// wantCode fails unless err carries code.
func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if got := errs.Code(err); got != code {
		t.Fatalf("error = %v (code %q), want code %q", err, got, code)
	}
}

// wantFields fails unless err is a validation error with exactly fields.
func wantFields(t *testing.T, err error, fields ...errs.FieldError) {
	t.Helper()
	e, ok := errs.As(err)
	if !ok {
		t.Fatalf("error = %v, want field errors %v", err, fields)
	}
	if !reflect.DeepEqual(e.Fields, fields) {
		t.Fatalf("field errors = %v, want %v", e.Fields, fields)
	}
}

func field(name, code string) errs.FieldError { return errs.FieldError{Field: name, Code: code} }

// writesNothing runs fn and fails when any identity table changed size.
func writesNothing(t *testing.T, env *identitytest.Env, fn func()) {
	t.Helper()
	before := env.Counts(t)
	fn()
	if after := env.Counts(t); !reflect.DeepEqual(before, after) {
		t.Fatalf("a refused request wrote rows: before %v, after %v", before, after)
	}
}

// eventsOf returns the outbox rows of type typ.
func eventsOf(t *testing.T, env *identitytest.Env, typ string) []identitytest.OutboxRow {
	t.Helper()
	var out []identitytest.OutboxRow
	for _, r := range env.Outbox(t) {
		if r.Type == typ {
			out = append(out, r)
		}
	}
	return out
}

// lastEvent returns the newest outbox row, which must be of type typ and
// about subject.
func lastEvent(t *testing.T, env *identitytest.Env, typ, subject string) identitytest.OutboxRow {
	t.Helper()
	rows := env.Outbox(t)
	if len(rows) == 0 {
		t.Fatalf("outbox is empty, want a %s row", typ)
	}
	r := rows[len(rows)-1]
	if r.Type != typ || r.Subject != subject {
		t.Fatalf("newest outbox row = %s about %s, want %s about %s", r.Type, r.Subject, typ, subject)
	}
	return r
}

// wantData fails unless an outbox row's data is exactly want.
func wantData(t *testing.T, r identitytest.OutboxRow, want map[string]any) {
	t.Helper()
	if !reflect.DeepEqual(r.Data, want) {
		t.Errorf("%s data = %v, want %v", r.Type, r.Data, want)
	}
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }

func errsAs(err error) (*errs.Error, bool) { return errs.As(err) }

// allPage asks for every item a test makes in one page.
var allPage = identity.PageRequest{Limit: identity.MaxPageSize}
