package webhooks_test

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/platformco/platform/internal/courier"
	"github.com/platformco/platform/internal/courier/webhooks"
)

// TestAddressGuardRanges walks every range of IANA's special-purpose
// registries that is not globally reachable, and each way an IPv6
// address embeds an IPv4 one. A refused address is refused three times:
// by courier.PublicAddress, by endpoint validation when the URL names it,
// and by the delivery client's dialer when a connection is about to reach
// it (so a host name that resolves to it is refused the same way). An
// admitted address is checked without a connection.
func TestAddressGuardRanges(t *testing.T) {
	for _, tt := range []struct {
		name, addr string
		public     bool
	}{
		{"ThisNetwork", "0.0.0.0", false},
		{"ThisNetworkHost", "0.1.2.3", false},
		{"Private10", "10.1.2.3", false},
		{"SharedCGNAT", "100.64.0.1", false},
		{"Loopback", "127.0.0.1", false},
		{"LinkLocalMetadata", "169.254.169.254", false},
		{"Private172", "172.16.0.1", false},
		{"IETFProtocol", "192.0.0.1", false},
		{"TestNet1", "192.0.2.1", false},
		{"Private192", "192.168.1.1", false},
		{"Benchmarking", "198.18.0.1", false},
		{"BenchmarkingTop", "198.19.255.254", false},
		{"TestNet2", "198.51.100.1", false},
		{"TestNet3", "203.0.113.1", false},
		{"Multicast", "224.0.0.1", false},
		{"Reserved240", "240.0.0.1", false},
		{"Broadcast", "255.255.255.255", false},
		{"Unspecified6", "::", false},
		{"Loopback6", "::1", false},
		{"IPv4MappedMetadata", "::ffff:169.254.169.254", false},
		{"IPv4MappedPrivate", "::ffff:10.0.0.1", false},
		{"IPv4CompatibleMetadata", "::a9fe:a9fe", false},
		{"IPv4CompatiblePublic", "::808:808", false},
		{"NAT64Metadata", "64:ff9b::a9fe:a9fe", false},
		{"NAT64Private", "64:ff9b::a00:1", false},
		{"NAT64Loopback", "64:ff9b::7f00:1", false},
		{"NAT64Benchmarking", "64:ff9b::c612:1", false},
		{"NAT64LocalUse", "64:ff9b:1::808:808", false},
		{"DiscardOnly", "100::1", false},
		{"Teredo", "2001::1", false},
		{"Documentation6", "2001:db8::1", false},
		{"SixToFourMetadata", "2002:a9fe:a9fe::1", false},
		{"SixToFourPublic", "2002:808:808::1", false},
		{"UniqueLocal", "fd00::1", false},
		{"SiteLocal", "fec0::1", false},
		{"LinkLocal6", "fe80::1", false},
		{"Multicast6", "ff02::1", false},
		{"Public4", "8.8.8.8", true},
		{"Public6", "2606:4700:4700::1111", true},
		{"IPv4MappedPublic", "::ffff:8.8.8.8", true},
		{"NAT64Public", "64:ff9b::808:808", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ip := netip.MustParseAddr(tt.addr)
			if got := courier.PublicAddress(ip); got != tt.public {
				t.Fatalf("PublicAddress(%s) = %v, want %v", ip, got, tt.public)
			}
			url := "https://" + netip.AddrPortFrom(ip, 443).String() + "/hook"
			want := ""
			if !tt.public {
				want = "private_address"
			}
			if got := courier.CheckEndpointURL(url, false); got != want {
				t.Errorf("CheckEndpointURL(%s) = %q, want %q", url, got, want)
			}
			if tt.public {
				return
			}
			_, err := webhooks.NewClient(false).Get("http://" + netip.AddrPortFrom(ip, 80).String() + "/")
			if !errors.Is(err, webhooks.ErrAddressRefused) {
				t.Errorf("GET %s = %v, want the address refusal before connecting", ip, err)
			}
		})
	}
}
