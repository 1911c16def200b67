package status

import (
	"net"
	"net/http"
	"slices"
	"strings"
)

// hostCheck answers a request only when its Host header names the listener: its address,
// localhost at its port, or one of extra (http.hosts: a name a proxy or the operator's browser
// uses). Anything else gets 421 Misdirected Request. The page has no authentication and
// listens on loopback, but a web page the operator opens elsewhere could rebind its own DNS
// name to 127.0.0.1 and read the page through the browser; such a request carries that name
// as its Host.
func hostCheck(next http.Handler, listen net.Addr, extra []string) http.Handler {
	allowed := allowedHosts(listen, extra)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !slices.Contains(allowed, strings.ToLower(r.Host)) {
			http.Error(w, "misdirected request: this status page answers only to "+strings.Join(allowed, ", ")+" (add the name under http.hosts)", http.StatusMisdirectedRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// allowedHosts lists the Host values the listener at listen answers to, lower case: its
// address, localhost at its port for a loopback address, and extra as given and, without a
// port, at the listener's port.
func allowedHosts(listen net.Addr, extra []string) []string {
	var out []string
	add := func(h string) {
		if h = strings.ToLower(strings.TrimSpace(h)); h != "" && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	addr := listen.String()
	add(addr)
	host, port, err := net.SplitHostPort(addr)
	if err == nil {
		if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
			add(net.JoinHostPort("localhost", port))
		}
		if port == "80" {
			add(host)
		}
	}
	for _, h := range extra {
		add(h)
		if _, _, err := net.SplitHostPort(h); err != nil && port != "" {
			add(net.JoinHostPort(strings.Trim(h, "[]"), port))
		}
	}
	return out
}
