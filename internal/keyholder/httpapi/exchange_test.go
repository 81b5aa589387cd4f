package httpapi_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/platformco/platform/internal/keyholder"
	"github.com/platformco/platform/internal/keyholder/keyholdertest"
	"github.com/platformco/platform/internal/keyholder/sqlstore"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
	"github.com/platformco/platform/internal/testutil"
)

type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func count(t *testing.T, url, q string) int {
	t.Helper()
	db, err := sqldb.Open(context.Background(), url)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(context.Background(), q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

func TestExchange(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		p := keyholdertest.Start(t, engine, keyholdertest.Options{})
		c := p.NewCustomer("buyer@example.com")
		p.Grant(c, "platform", "^1.2.0")
		capability := p.Capability(c, "platform", "^1.2.0")

		cred := p.Exchange(capability)
		if !strings.HasPrefix(cred.Username, "cap_") || cred.Password == "" || cred.Repository != "platform" ||
			cred.VersionRange == nil || *cred.VersionRange != "^1.2.0" || !strings.HasPrefix(p.KeyholderURL, "http://"+cred.Registry) {
			t.Errorf("got %+v, want a cap_ credential for platform ^1.2.0 at %s", cred, p.KeyholderURL)
		}
		if d := time.Until(cred.ExpiresAt); d < 59*time.Minute || d > time.Hour+time.Minute {
			t.Errorf("expires in %s, want about 1h", d)
		}
		// Only a digest is stored.
		if n := count(t, p.KeyholderDB, `SELECT count(*) FROM credentials WHERE password_digest LIKE '%`+cred.Password[4:12]+`%'`); n != 0 {
			t.Errorf("the password is stored in the clear")
		}

		tests := []struct {
			name       string
			body       any
			wantStatus int
			wantCode   string
		}{
			{"UsedCapability", map[string]string{"capability": capability}, http.StatusGone, "capability_used"},
			{"UnknownCapability", map[string]string{"capability": "boxcap_nope"}, http.StatusNotFound, "not_found"},
			{"BlankCapability", map[string]string{"capability": "  "}, http.StatusUnprocessableEntity, "unprocessable"},
			{"MissingCapability", map[string]string{}, http.StatusUnprocessableEntity, "unprocessable"},
			{"UnknownField", map[string]string{"capability": "x", "token": "y"}, http.StatusBadRequest, "malformed_json"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				var e errorBody
				st, raw := p.Call("POST", p.KeyholderURL+"/v1/exchange", "", tt.body, &e)
				if st != tt.wantStatus || e.Error.Code != tt.wantCode {
					t.Errorf("got %d %s, want %d %s", st, raw, tt.wantStatus, tt.wantCode)
				}
			})
		}
		if n := count(t, p.KeyholderDB, `SELECT count(*) FROM credentials`); n != 1 {
			t.Errorf("credentials: got %d, want 1 (refusals store nothing)", n)
		}
	})
}

// TestExchangeRace: 50 concurrent exchanges of one capability → one 201,
// the rest box's 410, one credential stored.
func TestExchangeRace(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		p := keyholdertest.Start(t, engine, keyholdertest.Options{})
		c := p.NewCustomer("racer@example.com")
		p.Grant(c, "kit", "")
		capability := p.Capability(c, "kit", "")
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			statuses = map[int]int{}
		)
		for range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				st, _ := p.Call("POST", p.KeyholderURL+"/v1/exchange", "", map[string]string{"capability": capability}, nil)
				mu.Lock()
				statuses[st]++
				mu.Unlock()
			}()
		}
		wg.Wait()
		if statuses[http.StatusCreated] != 1 || statuses[http.StatusGone] != 49 {
			t.Errorf("statuses: got %v, want one 201 and 49 410", statuses)
		}
		if n := count(t, p.KeyholderDB, `SELECT count(*) FROM credentials`); n != 1 {
			t.Errorf("credentials: got %d, want 1", n)
		}
	})
}

func TestExchangeWhenBoxIsDown(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		p := keyholdertest.Start(t, engine, keyholdertest.Options{BoxURL: "http://127.0.0.1:1"})
		var e errorBody
		st, raw := p.Call("POST", p.KeyholderURL+"/v1/exchange", "", map[string]string{"capability": "boxcap_anything"}, &e)
		if st != http.StatusServiceUnavailable || e.Error.Code != "unavailable" {
			t.Errorf("got %d %s, want 503 unavailable", st, raw)
		}
		if n := count(t, p.KeyholderDB, `SELECT count(*) FROM credentials`); n != 0 {
			t.Errorf("credentials: got %d, want none", n)
		}
	})
}

func basic(t *testing.T, method, url, user, pass string) int {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	if user != "" {
		req.SetBasicAuth(user, pass)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestDeleteCredential(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		p := keyholdertest.Start(t, engine, keyholdertest.Options{})
		_, cred := p.Entitled("leaver@example.com", "platform", "")
		_, other := p.Entitled("other@example.com", "platform", "")
		url := p.KeyholderURL + "/v1/credentials/" + cred.Username
		tests := []struct {
			name, user, pass string
			want             int
		}{
			{"NoCredential", "", "", http.StatusUnauthorized},
			{"WrongPassword", cred.Username, other.Password, http.StatusUnauthorized},
			{"AnotherCredential", other.Username, other.Password, http.StatusUnauthorized},
			{"Own", cred.Username, cred.Password, http.StatusNoContent},
			{"AlreadyEnded", cred.Username, cred.Password, http.StatusUnauthorized},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if got := basic(t, "DELETE", url, tt.user, tt.pass); got != tt.want {
					t.Errorf("got %d, want %d", got, tt.want)
				}
			})
		}
		if got := basic(t, "GET", p.KeyholderURL+"/v2/", cred.Username, cred.Password); got != http.StatusUnauthorized {
			t.Errorf("/v2/ with an ended credential: got %d, want 401", got)
		}
		if got := basic(t, "GET", p.KeyholderURL+"/v2/", other.Username, other.Password); got != http.StatusOK {
			t.Errorf("/v2/ with the other credential: got %d, want 200", got)
		}
	})
}

func TestCredentialExpires(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) { credentialExpires(t, engine) })
}

func credentialExpires(t *testing.T, engine sqldb.Engine) {
	p := keyholdertest.Start(t, engine, keyholdertest.Options{Env: map[string]string{"KEYHOLDER_CREDENTIAL_TTL": "1s"}})
	_, cred := p.Entitled("brief@example.com", "kit", "")
	if got := basic(t, "GET", p.KeyholderURL+"/v2/", cred.Username, cred.Password); got != http.StatusOK {
		t.Fatalf("fresh credential: got %d, want 200", got)
	}
	testutil.Eventually(t, 10*time.Second, "the credential to be refused after its 1s TTL", func() bool {
		return basic(t, "GET", p.KeyholderURL+"/v2/", cred.Username, cred.Password) == http.StatusUnauthorized
	})
}

func TestPullsNeedMembership(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		p := keyholdertest.Start(t, engine, keyholdertest.Options{})
		c, _ := p.Entitled("member@example.com", "kit", "")
		stranger := p.NewCustomer("stranger@example.com")
		url := p.KeyholderURL + "/v1/accounts/" + c.AccountID + "/pulls"
		tests := []struct {
			name, token string
			want        int
			wantCode    string
		}{
			{"Member", c.Token, http.StatusOK, ""},
			{"Stranger", stranger.Token, http.StatusNotFound, "not_found"},
			{"NoToken", "", http.StatusUnauthorized, "unauthenticated"},
			{"BadToken", "garbage", http.StatusUnauthorized, "unauthenticated"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				var e errorBody
				st, raw := p.Call("GET", url, tt.token, nil, &e)
				if st != tt.want || e.Error.Code != tt.wantCode {
					t.Errorf("got %d %s, want %d %q", st, raw, tt.want, tt.wantCode)
				}
			})
		}
		if st, _ := p.Call("GET", p.KeyholderURL+"/v1/accounts/not-a-uuid/pulls", c.Token, nil, nil); st != http.StatusNotFound {
			t.Errorf("malformed account id: got %d, want 404", st)
		}
	})
}

// TestExchangeWhenDatabaseIsDown: keyholder does not spend a capability it
// could not turn into a stored credential; box still redeems it afterwards.
func TestExchangeWhenDatabaseIsDown(t *testing.T) {
	admin := os.Getenv("TEST_DATABASE_URL")
	if admin == "" {
		t.Skip("TEST_DATABASE_URL not set: stopping a database needs PostgreSQL")
	}
	p := keyholdertest.Start(t, sqldb.Postgres, keyholdertest.Options{})
	c := p.NewCustomer("nodb@example.com")
	p.Grant(c, "kit", "")
	capability := p.Capability(c, "kit", "")
	u, _ := url.Parse(p.KeyholderDB)
	db, err := sql.Open("pgx", admin)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("DROP DATABASE " + strings.TrimPrefix(u.Path, "/") + " WITH (FORCE)"); err != nil {
		t.Fatalf("drop: %v", err)
	}
	var e errorBody
	if st, raw := p.Call("POST", p.KeyholderURL+"/v1/exchange", "", map[string]string{"capability": capability}, &e); st != http.StatusServiceUnavailable || e.Error.Code != "unavailable" {
		t.Errorf("exchange: got %d %s, want 503 unavailable", st, raw)
	}
	if st, raw := p.Call("POST", p.BoxURL+"/v1/capabilities/redeem", "", map[string]string{"token": capability}, nil); st != http.StatusOK {
		t.Errorf("the capability was spent: box answers %d %s, want 200", st, raw)
	}
}

// TestExchangeExpiredCapability: box's capability_expired passes on.
func TestExchangeExpiredCapability(t *testing.T) {
	p := keyholdertest.Start(t, sqldb.SQLite, keyholdertest.Options{BoxEnv: map[string]string{"BOX_CAPABILITY_TTL": "1s"}})
	c := p.NewCustomer("late@example.com")
	p.Grant(c, "kit", "")
	var issued struct {
		Capability struct {
			Token     string    `json:"token"`
			ExpiresAt time.Time `json:"expires_at"`
		} `json:"capability"`
	}
	if st, raw := p.Call("POST", p.BoxURL+"/v1/accounts/"+c.AccountID+"/artifact_fetches", c.Token, map[string]any{"artifact": "kit"}, &issued); st != http.StatusCreated {
		t.Fatalf("artifact fetch: %d %s", st, raw)
	}
	capability := issued.Capability.Token
	// Wait, without redeeming it (a redemption spends it), until the
	// clock is past the expiry box stated: box's own expiry is the state
	// under test.
	testutil.Eventually(t, 10*time.Second, "the capability's expires_at to pass", func() bool {
		return time.Now().After(issued.Capability.ExpiresAt)
	})
	var e errorBody
	st, raw := p.Call("POST", p.KeyholderURL+"/v1/exchange", "", map[string]string{"capability": capability}, &e)
	if st != http.StatusGone || e.Error.Code != "capability_expired" {
		t.Errorf("got %d %s, want 410 capability_expired", st, raw)
	}
	if n := count(t, p.KeyholderDB, `SELECT count(*) FROM credentials`); n != 0 {
		t.Errorf("credentials: got %d, want none", n)
	}
}

// TestPullsPaged: the record is read 100 pulls a page, newest first, the
// member's and the staff's read alike; a cursor not given is 422.
func TestPullsPaged(t *testing.T) {
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		p := keyholdertest.Start(t, engine, keyholdertest.Options{})
		c := p.NewCustomer("pager@example.com")
		db, err := sqldb.Open(context.Background(), p.KeyholderDB)
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		defer db.Close()
		store := sqlstore.New(db)
		for i := range keyholder.MaxPulls + 1 {
			if err := store.RecordPull(context.Background(), keyholder.Pull{AccountID: c.AccountID, Repository: "kit",
				Tag: fmt.Sprintf("1.0.%d", i), Digest: "sha256:" + strings.Repeat("a", 64), PulledAt: store.Now(), File: "kit.tar.gz"}); err != nil {
				t.Fatalf("RecordPull: %v", err)
			}
		}
		type page struct {
			Pulls []struct {
				Tag string `json:"tag"`
			} `json:"pulls"`
			NextCursor *string `json:"next_cursor"`
		}
		for _, tt := range []struct{ name, path, token string }{
			{"Member", "/v1/accounts/" + c.AccountID + "/pulls", c.Token},
			{"Staff", "/v1/operator/accounts/" + c.AccountID + "/pulls", p.StaffToken},
		} {
			t.Run(tt.name, func(t *testing.T) {
				var first, second page
				if st, raw := p.Call("GET", p.KeyholderURL+tt.path, tt.token, nil, &first); st != http.StatusOK ||
					len(first.Pulls) != keyholder.MaxPulls || first.Pulls[0].Tag != "1.0.100" || first.NextCursor == nil {
					t.Fatalf("first page: %d %.200s", st, raw)
				}
				if st, raw := p.Call("GET", p.KeyholderURL+tt.path+"?cursor="+*first.NextCursor, tt.token, nil, &second); st != http.StatusOK ||
					len(second.Pulls) != 1 || second.Pulls[0].Tag != "1.0.0" || second.NextCursor != nil {
					t.Fatalf("second page: %d %s", st, raw)
				}
				var e errorBody
				if st, raw := p.Call("GET", p.KeyholderURL+tt.path+"?cursor=not-ours", tt.token, nil, &e); st != http.StatusUnprocessableEntity || e.Error.Code != "unprocessable" {
					t.Errorf("a cursor not given: %d %s, want 422 unprocessable", st, raw)
				}
			})
		}
	})
}
