package outbound

import (
	"net/netip"
	"testing"
)

// Public unicast addresses pass; every other kind is refused, loopback alone being
// let through by the tests' exception.
func TestPublicAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"93.184.215.14": true, "8.8.8.8": true, "2606:4700:4700::1111": true, "::ffff:93.184.215.14": true,
		"127.0.0.1": false, "127.8.9.10": false, "::1": false, "10.0.0.1": false, "172.31.255.255": false, "192.168.0.1": false,
		"169.254.169.254": false, "fe80::1": false, "fd12:3456::1": false, "100.64.0.1": false, "0.0.0.0": false, "::": false,
		"255.255.255.255": false, "224.0.0.251": false, "ff02::1": false, "192.0.2.1": false, "203.0.113.9": false,
		"2001:db8::1": false, "64:ff9b::7f00:1": false, "2002:7f00:1::": false, "::ffff:10.0.0.1": false,
	} {
		if got := publicAddr(netip.MustParseAddr(addr), false); got != want {
			t.Errorf("publicAddr(%s) = %v", addr, got)
		}
	}
	if !publicAddr(netip.MustParseAddr("127.0.0.1"), true) || !publicAddr(netip.MustParseAddr("::1"), true) ||
		publicAddr(netip.MustParseAddr("10.0.0.1"), true) {
		t.Error("the loopback exception lets through more or less than loopback")
	}
	if publicAddr(netip.Addr{}, false) {
		t.Error("the zero address is public")
	}
}
