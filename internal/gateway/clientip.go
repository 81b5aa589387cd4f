package gateway

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// proxyTrust is the TRUSTED_PROXIES rule: a count of proxies in front
// (platform.md section 8), or the addresses of the proxies themselves.
type proxyTrust struct {
	hops int
	nets []netip.Prefix
}

func (g *Gateway) trust() proxyTrust {
	return proxyTrust{hops: g.opts.TrustedProxies, nets: g.opts.TrustedNets}
}

// trusts reports whether addr is one of the trusted proxies.
func (t proxyTrust) trusts(addr string) bool {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return false
	}
	for _, n := range t.nets {
		if n.Contains(ip.Unmap()) {
			return true
		}
	}
	return false
}

// believes reports whether r's forwarding headers come from a trusted
// proxy.
func (t proxyTrust) believes(r *http.Request) bool {
	if len(t.nets) > 0 {
		return t.trusts(peerIP(r.RemoteAddr))
	}
	return t.hops > 0
}

// clientIP is the caller's address under the TRUSTED_PROXIES rule
// (platform.md section 8). By count: with 0 trusted proxies no forwarding
// header is believed and the socket peer is the caller; with n, the
// address n hops from the end of X-Forwarded-For (the one the outermost
// trusted proxy saw) is; a shorter chain, or an entry that is not an
// address, falls back to the socket peer. By address: the chain is
// believed only from a trusted peer, and the caller is the rightmost entry
// that is not a trusted proxy (each proxy appends the address it was
// reached from, so entries left of it may be anyone's); an entry that is
// not an address stops the walk at the last good one.
func clientIP(r *http.Request, t proxyTrust) string {
	peer := peerIP(r.RemoteAddr)
	if !t.believes(r) {
		return peer
	}
	var hops []string
	for _, h := range r.Header.Values("X-Forwarded-For") {
		for _, part := range strings.Split(h, ",") {
			hops = append(hops, strings.TrimSpace(part))
		}
	}
	if len(t.nets) > 0 {
		client := peer
		for i := len(hops) - 1; i >= 0 && t.trusts(client); i-- {
			ip, ok := parseHop(hops[i])
			if !ok {
				break
			}
			client = ip
		}
		return client
	}
	if len(hops) < t.hops {
		return peer
	}
	if ip, ok := parseHop(hops[len(hops)-t.hops]); ok {
		return ip
	}
	return peer
}

func peerIP(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip.Unmap().String()
	}
	return host
}

// parseHop reads one X-Forwarded-For entry: an address, possibly with a
// port or in brackets.
func parseHop(s string) (string, bool) {
	if ip, err := netip.ParseAddr(s); err == nil {
		return ip.Unmap().WithZone("").String(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap().WithZone("").String(), true
	}
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		if ip, err := netip.ParseAddr(s[1 : len(s)-1]); err == nil {
			return ip.Unmap().WithZone("").String(), true
		}
	}
	return "", false
}

// requestProto is the scheme the caller used: from the connection, or, when
// proxies are trusted, from the X-Forwarded-Proto they set.
func requestProto(r *http.Request, t proxyTrust) string {
	if t.believes(r) {
		// The first value is the one the outermost proxy received.
		first, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ",")
		switch p := strings.ToLower(strings.TrimSpace(first)); p {
		case "http", "https":
			return p
		}
	}
	if r.TLS != nil {
		return "https"
	}
	return "http"
}
