package gateway

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// clientIP is the caller's address under the TRUSTED_PROXIES rule
// (platform.md section 8): with 0 trusted proxies no forwarding header is
// believed and the socket peer is the caller; with n, the address n hops
// from the end of X-Forwarded-For (the one the outermost trusted proxy saw)
// is; a shorter chain, or an entry that is not an address, falls back to the
// socket peer.
func clientIP(r *http.Request, trusted int) string {
	peer := peerIP(r.RemoteAddr)
	if trusted <= 0 {
		return peer
	}
	var hops []string
	for _, h := range r.Header.Values("X-Forwarded-For") {
		for _, part := range strings.Split(h, ",") {
			hops = append(hops, strings.TrimSpace(part))
		}
	}
	if len(hops) < trusted {
		return peer
	}
	if ip, ok := parseHop(hops[len(hops)-trusted]); ok {
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
func requestProto(r *http.Request, trusted int) string {
	if trusted > 0 {
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
