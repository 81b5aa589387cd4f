package courier_test

import (
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net"
	"net/netip"
	"testing"

	"github.com/google/uuid"

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/courier/sqlstore"
	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/seal"
	"github.com/platformco/platform/internal/sqldb"
	"github.com/platformco/platform/internal/sqldb/sqltest"
)

// TestSubscribeGuardsTheEndpointsHost: an endpoint's host name passes
// the webhooks' address guard on every address it resolves to (the
// resolver is given the answers a DNS server would give), and a
// resolver that cannot answer is a 503, never a subscription.
func TestSubscribeGuardsTheEndpointsHost(t *testing.T) {
	answers := map[string][]netip.Addr{
		"push.example.com":     {netip.MustParseAddr("93.184.215.14")},
		"private.example.com":  {netip.MustParseAddr("10.1.2.3")},
		"metadata.example.com": {netip.MustParseAddr("169.254.169.254")},
		"mixed.example.com":    {netip.MustParseAddr("93.184.215.14"), netip.MustParseAddr("192.168.0.7")},
		"mapped.example.com":   {netip.MustParseAddr("::ffff:127.0.0.1")},
		"ula.example.com":      {netip.MustParseAddr("fd00::1")},
		"cgnat.example.com":    {netip.MustParseAddr("100.64.0.1")},
		"nat64.example.com":    {netip.MustParseAddr("64:ff9b::a9fe:a9fe")},
	}
	lookup := func(_ context.Context, host string) ([]netip.Addr, error) {
		switch host {
		case "nxdomain.example.com":
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		case "servfail.example.com":
			return nil, &net.DNSError{Err: "server misbehaving", Name: host, IsTemporary: true}
		}
		return answers[host], nil
	}
	k, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p256dh := base64.RawURLEncoding.EncodeToString(k.PublicKey().Bytes())
	auth := base64.RawURLEncoding.EncodeToString(make([]byte, 16))
	sqltest.Run(t, func(t *testing.T, engine sqldb.Engine) {
		sealer, err := seal.New(testKey)
		if err != nil {
			t.Fatal(err)
		}
		pm := courier.NewPush(sqlstore.New(sqltest.Open(t, engine, sqlstore.Migrations)), sealer, false, lookup)
		u := courier.User{ID: uuid.NewString(), Email: "guard@example.com"}
		for _, tt := range []struct {
			name, host string
			// code is the error's; rule the endpoint's field rule.
			code, rule string
		}{
			{"Public", "push.example.com", "", ""},
			{"Private", "private.example.com", courier.CodeValidation, "private_address"},
			{"Metadata", "metadata.example.com", courier.CodeValidation, "private_address"},
			{"OnePrivateAmongPublic", "mixed.example.com", courier.CodeValidation, "private_address"},
			{"MappedLoopback", "mapped.example.com", courier.CodeValidation, "private_address"},
			{"UniqueLocal", "ula.example.com", courier.CodeValidation, "private_address"},
			{"SharedAddressSpace", "cgnat.example.com", courier.CodeValidation, "private_address"},
			{"NAT64Metadata", "nat64.example.com", courier.CodeValidation, "private_address"},
			{"NoAddresses", "empty.example.com", courier.CodeValidation, courier.RuleInvalid},
			{"NoSuchHost", "nxdomain.example.com", courier.CodeValidation, courier.RuleInvalid},
			{"ResolverDown", "servfail.example.com", courier.CodeUnavailable, ""},
		} {
			t.Run(tt.name, func(t *testing.T) {
				_, err := pm.Subscribe(context.Background(), u, courier.SubscriptionInput{
					Endpoint: "https://" + tt.host + "/wpush/" + tt.name, P256dh: p256dh, Auth: auth})
				if tt.code == "" {
					if err != nil {
						t.Fatalf("Subscribe: %v", err)
					}
					return
				}
				var e *errs.Error
				if !errors.As(err, &e) || e.Code != tt.code {
					t.Fatalf("Subscribe = %v, want %s", err, tt.code)
				}
				if tt.rule != "" && (len(e.Fields) != 1 || e.Fields[0] != (errs.FieldError{Field: "endpoint", Code: tt.rule})) {
					t.Errorf("fields = %+v, want endpoint %s", e.Fields, tt.rule)
				}
			})
		}
		subs, err := pm.Subscriptions(context.Background(), u)
		if err != nil || len(subs) != 1 {
			t.Errorf("%d subscriptions (%v), want only the public one", len(subs), err)
		}
	})
}
