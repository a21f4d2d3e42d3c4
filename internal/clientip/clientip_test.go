package clientip

import "testing"

func TestTheClientIsThePeerOrWhatATrustedProxySaw(t *testing.T) {
	proxies, err := ParseProxies("10.0.0.0/8, 192.0.2.7 2001:db8:ffff::/48")
	if err != nil || len(proxies) != 3 {
		t.Fatalf("%v %v", proxies, err)
	}
	for _, bad := range []string{"10.0.0.0/33", "proxy.example", "10.0.0"} {
		if _, err := ParseProxies(bad); err == nil {
			t.Errorf("%q was read", bad)
		}
	}
	for _, c := range []struct {
		remote string
		xff    []string
		want   string
	}{
		{"203.0.113.9:4000", nil, "203.0.113.9"},
		{"203.0.113.9:4000", []string{"198.51.100.1"}, "203.0.113.9"},                  // not a proxy: its header names no one
		{"10.1.2.3:4000", []string{"198.51.100.1"}, "198.51.100.1"},                    // through a proxy
		{"10.1.2.3:4000", []string{"6.6.6.6, 198.51.100.1, 10.9.9.9"}, "198.51.100.1"}, // a client's own hop is left of the real one
		{"10.1.2.3:4000", []string{"6.6.6.6", "198.51.100.1"}, "198.51.100.1"},         // header sent twice
		{"192.0.2.7:4000", []string{"10.0.0.1"}, "10.0.0.1"},                           // proxies all the way: the leftmost
		{"10.1.2.3:4000", []string{"garbage, 198.51.100.1"}, "198.51.100.1"},
		{"10.1.2.3:4000", []string{"198.51.100.1, garbage"}, "10.1.2.3"}, // unreadable hop: the proxy itself
		{"[2001:db8:1:2:3:4:5:6]:4000", nil, "2001:db8:1:2::/64"},
		{"[2001:db8:ffff::1]:4000", []string{"2001:db8:aaaa:bbbb::9"}, "2001:db8:aaaa:bbbb::/64"},
		{"[::ffff:203.0.113.9]:4000", nil, "203.0.113.9"},
		{"not-an-address", nil, "not-an-address"},
	} {
		if got := proxies.Of(c.remote, c.xff); got != c.want {
			t.Errorf("Of(%s, %q) = %s, want %s", c.remote, c.xff, got, c.want)
		}
	}
	if got := Proxies(nil).Of("10.1.2.3:1", []string{"198.51.100.1"}); got != "10.1.2.3" {
		t.Errorf("without proxies: %s", got)
	}
}
