package catalog

import (
	"errors"
	"testing"
)

// TestHostnameFromPathReadsEverySpellingOfAName checks that a path segment names the
// same hostname however it is written, and that a segment naming no hostname fails
// with ErrInvalidHostname.
func TestHostnameFromPathReadsEverySpellingOfAName(t *testing.T) {
	for in, want := range map[string]string{
		"api.weather.example":     "api.weather.example",
		"API.Weather.Example.":    "api.weather.example",
		"api%2Eweather%2Eexample": "api.weather.example",
		"bücher.example":          "xn--bcher-kva.example",
		"b%C3%BCcher.example":     "xn--bcher-kva.example",
		"B%C3%9CCHER.example.":    "xn--bcher-kva.example",
		"xn--bcher-kva.example":   "xn--bcher-kva.example",
		"XN--BCHER-KVA.EXAMPLE":   "xn--bcher-kva.example",
	} {
		if got, err := HostnameFromPath(in); err != nil || got != want {
			t.Errorf("%q: %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "%", "%25", "b%ZZcher.example", "bad_host", "127.0.0.1", "api.example:443", "a%2Fb.example"} {
		if got, err := HostnameFromPath(in); !errors.Is(err, ErrInvalidHostname) {
			t.Errorf("%q: %q, %v; want ErrInvalidHostname", in, got, err)
		}
	}
	if n := testing.AllocsPerRun(100, func() { HostnameFromPath("api.weather.example") }); n != 0 {
		t.Errorf("a canonical name costs %v allocations", n)
	}
}
