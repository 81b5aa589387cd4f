package events

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
	"testing/fstest"
	"time"
)

// identityManifest mirrors what identity declares (operations.md section 6);
// the command wires the real identity.Manifest().
// courierManifest is courier's declared events (courier.EventTypes).
func courierManifest() Manifest {
	return Manifest{Service: "courier", Types: []string{
		"courier.email.queued", "courier.email.delivered", "courier.email.bounced",
		"courier.email.complained", "courier.notification.suppressed",
	}}
}

// pantryManifest is pantry's declared events (pantry.EventTypes).
func pantryManifest() Manifest {
	return Manifest{Service: "pantry", Types: []string{
		"pantry.project.created", "pantry.project.updated", "pantry.project.deleted",
	}}
}

// museManifest is muse's declared events (muse.EventTypes).
func museManifest() Manifest {
	return Manifest{Service: "muse", Types: []string{"muse.tokens.consumed"}}
}

// billingManifest is billing's declared events (billing.EventTypes).
func billingManifest() Manifest {
	return Manifest{Service: "billing", Types: []string{
		"billing.plan.created", "billing.plan.updated", "billing.customer.created", "billing.subscription.started",
		"billing.subscription.updated", "billing.subscription.canceled", "billing.subscription.past_due",
		"billing.payment.succeeded", "billing.payment.failed", "billing.payment.refunded", "billing.invoice.created",
		"billing.usage.recorded",
	}}
}

func identityManifest() Manifest {
	return Manifest{Service: "identity", Types: []string{
		"identity.user.created",
		"identity.account.created",
		"identity.account.updated",
		"identity.account.deleted",
		"identity.member.invited",
		"identity.member.joined",
		"identity.member.removed",
		"identity.member.role_changed",
		"identity.staff.enabled",
		"identity.staff.disabled",
		"identity.user.email_verified",
		"identity.session.revoked",
		"identity.mfa.enabled",
		"identity.mfa.disabled",
		"identity.api_key.created",
		"identity.api_key.revoked",
		"identity.oidc_client.created",
		"identity.oidc_client.revoked",
	}}
}

func repoSchemas(t *testing.T) fs.FS {
	t.Helper()
	dir, err := LocateSchemas(".")
	if err != nil {
		t.Fatal(err)
	}
	return os.DirFS(dir)
}

// copyFS loads the repository's schemas directory into memory so a test can
// break one thing in it.
func copyFS(t *testing.T) fstest.MapFS {
	t.Helper()
	src := repoSchemas(t)
	m := fstest.MapFS{}
	err := fs.WalkDir(src, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(src, path)
		m[path] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func editJSON(t *testing.T, m fstest.MapFS, path string, fn func(v map[string]any)) {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(m[path].Data, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	fn(v)
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	m[path] = &fstest.MapFile{Data: b}
}

func editRow(t *testing.T, m fstest.MapFS, typ string, fn func(row map[string]any)) {
	t.Helper()
	editJSON(t, m, CatalogFile, func(v map[string]any) {
		for _, r := range v["events"].([]any) {
			if row := r.(map[string]any); row["type"] == typ {
				fn(row)
				return
			}
		}
		t.Fatalf("no row %s", typ)
	})
}

func TestCheckRepositoryAgrees(t *testing.T) {
	if got := Check(repoSchemas(t), []Manifest{identityManifest(), courierManifest(), pantryManifest(), billingManifest(), museManifest()}); len(got) != 0 {
		for _, d := range got {
			t.Error(d)
		}
	}
}

func TestCatalogHoldsPlatformRows(t *testing.T) {
	cat, err := LoadCatalog(repoSchemas(t))
	if err != nil {
		t.Fatal(err)
	}
	// Every row of platform.md section 6 plus this repository's four additions.
	want := map[string]Status{
		"identity.user.created": StatusEmitted, "identity.user.email_verified": StatusEmitted,
		"identity.account.created": StatusEmitted, "identity.account.updated": StatusEmitted,
		"identity.account.deleted": StatusEmitted, "identity.member.invited": StatusEmitted,
		"identity.member.joined": StatusEmitted, "identity.member.removed": StatusEmitted,
		"identity.member.role_changed": StatusEmitted, "identity.mfa.enabled": StatusEmitted,
		"identity.staff.enabled": StatusEmitted, "identity.staff.disabled": StatusEmitted,
		"identity.mfa.disabled": StatusEmitted, "identity.session.revoked": StatusEmitted,
		"identity.api_key.created": StatusEmitted, "identity.api_key.revoked": StatusEmitted,
		"identity.oidc_client.created": StatusEmitted, "identity.oidc_client.revoked": StatusEmitted,
		"billing.plan.created": StatusEmitted, "billing.plan.updated": StatusEmitted,
		"billing.customer.created": StatusEmitted, "billing.subscription.started": StatusEmitted,
		"billing.subscription.updated": StatusEmitted, "billing.subscription.canceled": StatusEmitted,
		"billing.subscription.past_due": StatusEmitted, "billing.payment.succeeded": StatusEmitted,
		"billing.payment.failed": StatusEmitted, "billing.payment.refunded": StatusEmitted,
		"billing.invoice.created": StatusEmitted, "billing.usage.recorded": StatusEmitted,
		"courier.email.queued": StatusEmitted, "courier.email.delivered": StatusEmitted,
		"courier.email.bounced": StatusEmitted, "courier.email.complained": StatusEmitted,
		"courier.notification.suppressed": StatusEmitted, "muse.tokens.consumed": StatusEmitted,
		"pantry.project.created": StatusEmitted, "pantry.project.updated": StatusEmitted,
		"pantry.project.deleted": StatusEmitted,
	}
	if len(cat.Events) != len(want) {
		t.Errorf("catalog has %d rows, want %d", len(cat.Events), len(want))
	}
	for typ, status := range want {
		row, ok := cat.Entry(typ)
		if !ok {
			t.Errorf("%s: no catalog row", typ)
			continue
		}
		if row.Status != status {
			t.Errorf("%s: status %s, want %s", typ, row.Status, status)
		}
	}
}

func TestCheckFindsDisagreements(t *testing.T) {
	tests := []struct {
		name      string
		break_    func(t *testing.T, m fstest.MapFS) []Manifest
		where     string
		wantInMsg string
	}{
		{"ManifestTypeWithoutRow", func(t *testing.T, m fstest.MapFS) []Manifest {
			mf := identityManifest()
			mf.Types = append(mf.Types, "identity.user.deleted")
			return []Manifest{mf}
		}, "identity.user.deleted", "has no catalog row"},
		{"DeclaredRowMissingFromManifest", func(t *testing.T, m fstest.MapFS) []Manifest {
			mf := identityManifest()
			mf.Types = mf.Types[1:]
			return []Manifest{mf}
		}, "identity.user.created", "manifest does not declare it"},
		{"ManifestDeclaresNotEmitted", func(t *testing.T, m fstest.MapFS) []Manifest {
			// Every identity type is built now: mark one row not_emitted
			// while the manifest still declares it.
			row := `"type": "identity.oidc_client.created", "publisher": "identity", "status": "emitted"`
			cat := string(m["catalog.json"].Data)
			if !strings.Contains(cat, row) {
				t.Fatalf("catalog.json has no row %s", row)
			}
			m["catalog.json"] = &fstest.MapFile{Data: []byte(strings.Replace(cat, row, strings.Replace(row, "emitted", "not_emitted", 1), 1))}
			return []Manifest{identityManifest()}
		}, "identity.oidc_client.created", "catalogued as not_emitted, but identity's manifest declares it"},
		{"ManifestOfExternalPublisher", func(t *testing.T, m fstest.MapFS) []Manifest {
			editRow(t, m, "muse.tokens.consumed", func(r map[string]any) { r["status"] = "external"; delete(r, "data_fields") })
			return []Manifest{identityManifest(), {Service: "muse", Types: []string{"muse.tokens.consumed"}}}
		}, "muse.tokens.consumed", "publisher \"muse\" is built in this repository"},
		{"DeclaredRowWithoutManifest", func(t *testing.T, m fstest.MapFS) []Manifest {
			return nil
		}, "identity.account.created", "has no manifest in this repository"},
		{"ManifestTypeBadGrammar", func(t *testing.T, m fstest.MapFS) []Manifest {
			mf := identityManifest()
			mf.Types = append(mf.Types, "identity.user.on_user_created")
			return []Manifest{mf}
		}, "identity.user.on_user_created", "not in the platform's vocabulary"},
		{"ManifestTypeOfOtherService", func(t *testing.T, m fstest.MapFS) []Manifest {
			mf := identityManifest()
			mf.Types = append(mf.Types, "billing.plan.created")
			return []Manifest{mf}
		}, "billing.plan.created", "service segment is \"billing\""},
		{"RowBadGrammar", func(t *testing.T, m fstest.MapFS) []Manifest {
			editRow(t, m, "courier.email.queued", func(r map[string]any) { r["type"] = "courier.Email.queued" })
			return []Manifest{identityManifest()}
		}, "courier.Email.queued", "must be snake_case"},
		{"DeclaredRowOutsideVocabulary", func(t *testing.T, m fstest.MapFS) []Manifest {
			editRow(t, m, "identity.user.email_verified", func(r map[string]any) {
				r["type"], r["status"] = "identity.user.frobbed", "emitted"
			})
			mf := identityManifest()
			mf.Types = append(mf.Types, "identity.user.frobbed")
			return []Manifest{mf}
		}, "identity.user.frobbed", "not in the platform's vocabulary"},
		{"RowPublisherNotService", func(t *testing.T, m fstest.MapFS) []Manifest {
			editRow(t, m, "billing.plan.created", func(r map[string]any) { r["publisher"] = "courier" })
			return []Manifest{identityManifest()}
		}, "billing.plan.created", "not the type's service segment"},
		{"RowDuplicated", func(t *testing.T, m fstest.MapFS) []Manifest {
			editJSON(t, m, CatalogFile, func(v map[string]any) {
				ev := v["events"].([]any)
				v["events"] = append(ev, ev[len(ev)-1])
			})
			return []Manifest{identityManifest()}
		}, "muse.tokens.consumed", "catalogued more than once"},
		{"RowUnknownStatus", func(t *testing.T, m fstest.MapFS) []Manifest {
			editRow(t, m, "billing.plan.created", func(r map[string]any) { r["status"] = "maybe" })
			return []Manifest{identityManifest()}
		}, "billing.plan.created", "status \"maybe\""},
		{"RowUnknownSubjectKind", func(t *testing.T, m fstest.MapFS) []Manifest {
			editRow(t, m, "billing.plan.created", func(r map[string]any) { r["subject"] = "the plan" })
			return []Manifest{identityManifest()}
		}, "billing.plan.created", "subject \"the plan\""},
		{"DeprecationTooShort", func(t *testing.T, m fstest.MapFS) []Manifest {
			editRow(t, m, "billing.plan.created", func(r map[string]any) {
				r["deprecated"] = map[string]any{"since": "2025-01-01", "removal_date": "2025-05-01"}
			})
			return []Manifest{identityManifest()}
		}, "billing.plan.created", "less than 6 months"},
		{"CatalogUnknownField", func(t *testing.T, m fstest.MapFS) []Manifest {
			editRow(t, m, "billing.plan.created", func(r map[string]any) { r["owner"] = "billing" })
			return []Manifest{identityManifest()}
		}, CatalogFile, "unknown field"},
		{"SchemaMissing", func(t *testing.T, m fstest.MapFS) []Manifest {
			delete(m, "identity/member/removed.schema.json")
			return []Manifest{identityManifest()}
		}, "identity.member.removed", "no payload schema at identity/member/removed.schema.json"},
		{"SchemaOpen", func(t *testing.T, m fstest.MapFS) []Manifest {
			editJSON(t, m, "identity/account/updated.schema.json", func(v map[string]any) { delete(v, "additionalProperties") })
			return []Manifest{identityManifest()}
		}, "identity.account.updated", "must be closed"},
		{"SchemaWrongDraft", func(t *testing.T, m fstest.MapFS) []Manifest {
			editJSON(t, m, "identity/account/updated.schema.json", func(v map[string]any) {
				v["$schema"] = "http://json-schema.org/draft-07/schema#"
			})
			return []Manifest{identityManifest()}
		}, "identity.account.updated", "$schema must be"},
		{"SchemaPrefixedID", func(t *testing.T, m fstest.MapFS) []Manifest {
			editJSON(t, m, "identity/user/created.schema.json", func(v map[string]any) {
				v["properties"].(map[string]any)["user_id"] = map[string]any{"type": "string", "pattern": "^user_[0-9a-z]{26}$"}
			})
			return []Manifest{identityManifest()}
		}, "identity.user.created", "an identifier's pattern must be"},
		{"SchemaIDWithoutPattern", func(t *testing.T, m fstest.MapFS) []Manifest {
			editJSON(t, m, "identity/account/deleted.schema.json", func(v map[string]any) {
				delete(v["properties"].(map[string]any)["deleted_by"].(map[string]any), "pattern")
			})
			return []Manifest{identityManifest()}
		}, "identity.account.deleted", "an identifier's pattern must be"},
		{"SchemaIDNotUUID", func(t *testing.T, m fstest.MapFS) []Manifest {
			editJSON(t, m, "identity/member/removed.schema.json", func(v map[string]any) {
				v["properties"].(map[string]any)["removed_by"] = map[string]any{"type": "string"}
			})
			return []Manifest{identityManifest()}
		}, "identity.member.removed", "must be {\"type\": \"string\", \"format\": \"uuid\"}"},
		{"SchemaDoesNotCompile", func(t *testing.T, m fstest.MapFS) []Manifest {
			editJSON(t, m, "identity/account/deleted.schema.json", func(v map[string]any) { v["required"] = "account_id" })
			return []Manifest{identityManifest()}
		}, "identity.account.deleted", "does not compile"},
		{"DataFieldsDiffer", func(t *testing.T, m fstest.MapFS) []Manifest {
			editRow(t, m, "identity.account.updated", func(r map[string]any) { r["data_fields"] = []any{"account_id", "name", "slug"} })
			return []Manifest{identityManifest()}
		}, "identity.account.updated", "differ from the schema's properties"},
		{"ValidExampleFails", func(t *testing.T, m fstest.MapFS) []Manifest {
			editJSON(t, m, "identity/member/joined.valid.json", func(v map[string]any) { v["extra"] = true })
			return []Manifest{identityManifest()}
		}, "identity.member.joined", "valid example identity/member/joined.valid.json fails its schema"},
		{"ValidExamplePrefixedID", func(t *testing.T, m fstest.MapFS) []Manifest {
			editJSON(t, m, "identity/account/updated.valid.json", func(v map[string]any) { v["name"] = "acct_01h455vb4pex5vsknk084sn02q" })
			return []Manifest{identityManifest()}
		}, "identity.account.updated", "holds a prefixed identifier"},
		{"NegativeExamplePasses", func(t *testing.T, m fstest.MapFS) []Manifest {
			m["identity/member/joined.invalid.json"] = m["identity/member/joined.valid.json"]
			return []Manifest{identityManifest()}
		}, "identity.member.joined", "passes its schema; it must fail"},
		{"NegativeExampleMissing", func(t *testing.T, m fstest.MapFS) []Manifest {
			delete(m, "identity/member/joined.invalid.json")
			return []Manifest{identityManifest()}
		}, "identity.member.joined", "example identity/member/joined.invalid.json"},
		{"StrayFile", func(t *testing.T, m fstest.MapFS) []Manifest {
			m["identity/member/left.schema.json"] = &fstest.MapFile{Data: []byte(`{}`)}
			return []Manifest{identityManifest()}
		}, "identity/member/left.schema.json", "not the catalog"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := copyFS(t)
			manifests := tt.break_(t, m)
			got := Check(m, manifests)
			for _, d := range got {
				if d.Where == tt.where && strings.Contains(d.Problem, tt.wantInMsg) {
					return
				}
			}
			t.Errorf("want a disagreement at %q containing %q; got:", tt.where, tt.wantInMsg)
			for _, d := range got {
				t.Errorf("  %s", d)
			}
		})
	}
}

func envelopeFor(t *testing.T, typ, subject string, data []byte) Envelope {
	t.Helper()
	return Envelope{SpecVersion: SpecVersion, ID: "0b7e2a4c-6f1d-4c5e-9a8b-1d2e3f405162", Type: typ,
		Source: strings.SplitN(typ, ".", 2)[0], Subject: subject, Time: time.Now().UTC(), Data: data}
}

func TestContractValidate(t *testing.T) {
	fsys := repoSchemas(t)
	c, err := LoadContract(fsys)
	if err != nil {
		t.Fatal(err)
	}
	const subject = "0b7e2a4c-6f1d-4c5e-9a8b-1d2e3f405162"
	for _, typ := range identityManifest().Types {
		tp, _ := ParseType(typ)
		valid, _ := fs.ReadFile(fsys, tp.ValidExamplePath())
		invalid, _ := fs.ReadFile(fsys, tp.InvalidExamplePath())
		if err := c.Validate(envelopeFor(t, typ, subject, valid)); err != nil {
			t.Errorf("%s valid example: %v", typ, err)
		}
		var ce *ContractError
		if err := c.Validate(envelopeFor(t, typ, subject, invalid)); !errors.As(err, &ce) {
			t.Errorf("%s negative example: got %v, want a *ContractError", typ, err)
		}
	}

	valid, _ := fs.ReadFile(fsys, "identity/user/created.valid.json")
	tests := []struct {
		name string
		env  Envelope
	}{
		{"SubjectNotUUID", envelopeFor(t, "identity.user.created", "platform", valid)},
		{"NotEmitted", envelopeFor(t, "identity.mfa.enabled", subject, []byte(`{}`))},
		{"DataMissingFields", envelopeFor(t, "muse.tokens.consumed", "platform", []byte(`{}`))},
		{"Uncatalogued", envelopeFor(t, "identity.user.deleted", subject, []byte(`{}`))},
	}
	for _, tt := range tests {
		var ce *ContractError
		if err := c.Validate(tt.env); !errors.As(err, &ce) {
			t.Errorf("%s: got %v, want a *ContractError", tt.name, err)
		}
	}
	bad := envelopeFor(t, "identity.user.created", subject, valid)
	bad.Source = "billing"
	var ee *EnvelopeError
	if err := c.Validate(bad); !errors.As(err, &ee) {
		t.Errorf("envelope is checked first: got %v, want an *EnvelopeError", err)
	}
}
