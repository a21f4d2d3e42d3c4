// Package clientip names the client a request comes from, for the limits kept per
// client: the peer's address, or, when the peer is a trusted proxy, the address that
// proxy saw.
package clientip

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// Proxies are the networks whose X-Forwarded-For names the client.
type Proxies []netip.Prefix

// ParseProxies reads a list of CIDRs or addresses, separated by commas or spaces.
func ParseProxies(s string) (Proxies, error) {
	var out Proxies
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		p, err := netip.ParsePrefix(f)
		if err != nil {
			a, aerr := netip.ParseAddr(f)
			if aerr != nil {
				return nil, fmt.Errorf("%q is not a CIDR or an address", f)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

func (ps Proxies) trusted(a netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Of is the client of a request from remoteAddr carrying forwardedFor (its
// X-Forwarded-For values): the peer, or when the peer is a trusted proxy the
// rightmost untrusted hop, so that a client cannot pick its own name. An IPv6 client
// is its /64, since a single host usually holds a whole one.
func (ps Proxies) Of(remoteAddr string, forwardedFor []string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	addr = addr.Unmap()
	if !ps.trusted(addr) {
		return key(addr)
	}
	hops := strings.Split(strings.Join(forwardedFor, ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break
		}
		a = a.Unmap()
		if !ps.trusted(a) {
			return key(a)
		}
		addr = a
	}
	return key(addr)
}

func key(a netip.Addr) string {
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

// Loopback tells whether remoteAddr, a connection's host:port, is a loopback address
// (an IPv4-mapped one included).
func Loopback(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		return false
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}
