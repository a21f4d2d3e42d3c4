package catalog

import (
	"errors"
	"net/url"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// ErrInvalidHostname is what every NormalizeHostname error matches with errors.Is.
var ErrInvalidHostname = errors.New("invalid hostname")

type hostnameError struct {
	msg string
	err error
}

func (e *hostnameError) Error() string {
	if e.err != nil {
		return e.msg + ": " + e.err.Error()
	}
	return e.msg
}

func (e *hostnameError) Is(target error) bool { return target == ErrInvalidHostname }
func (e *hostnameError) Unwrap() error        { return e.err }

var (
	errHostEmpty    = &hostnameError{msg: "empty hostname"}
	errHostTooLong  = &hostnameError{msg: "hostname longer than 253 characters"}
	errHostPort     = &hostnameError{msg: "a port or IPv6 address is not allowed"}
	errHostLabel    = &hostnameError{msg: "empty label"}
	errHostLabelLen = &hostnameError{msg: "label longer than 63 characters"}
	errHostChar     = &hostnameError{msg: "only letters, digits, hyphens and dots are allowed"}
	errHostHyphen   = &hostnameError{msg: "a label starts or ends with a hyphen"}
	errHostIP       = &hostnameError{msg: "an IP address is not a hostname"}
	errHostUTF8     = &hostnameError{msg: "not valid UTF-8"}
)

// maxHostnameInput bounds the input NormalizeHostname looks at: an internationalised
// name longer than this cannot map to 253 ASCII characters.
const maxHostnameInput = 1024

// NormalizeHostname returns the canonical form of a DNS hostname: lower case, without
// a trailing dot, internationalised labels in punycode (IDNA lookup profile). It
// rejects an empty name, a port, IP addresses, empty labels, labels of more than 63
// characters, names of more than 253 and any character other than letters, digits
// and hyphens (hyphens not at either end of a label). An already canonical name is
// returned without allocating. Errors match ErrInvalidHostname.
func NormalizeHostname(s string) (string, error) {
	if s == "" {
		return "", errHostEmpty
	}
	if len(s) > maxHostnameInput {
		return "", errHostTooLong
	}
	upper, ascii := false, true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
		if c == ':' {
			return "", errHostPort
		}
		if 'A' <= c && c <= 'Z' {
			upper = true
		}
	}
	if ascii {
		t := strings.TrimSuffix(s, ".")
		punycode, err := checkHostname(t, true)
		if err != nil {
			return "", err
		}
		if !punycode {
			if upper {
				return strings.ToLower(t), nil
			}
			return t, nil
		}
		// Punycode labels are checked by the IDNA profile below.
	}
	if !ascii && !utf8.ValidString(s) {
		return "", errHostUTF8
	}
	out, err := idna.Lookup.ToASCII(s)
	if err != nil {
		return "", &hostnameError{msg: "not a valid internationalised hostname", err: err}
	}
	out = strings.TrimSuffix(out, ".")
	if _, err := checkHostname(out, false); err != nil {
		return "", err
	}
	if out != s {
		// The result must be its own normal form: the profile maps some input to
		// punycode it would not accept back.
		if again, err := idna.Lookup.ToASCII(out); err != nil || again != out {
			return "", &hostnameError{msg: "not a valid internationalised hostname"}
		}
	}
	return out, nil
}

// HostnameFromPath returns the normalised hostname a URL path segment names, so that
// the API's merchant route and the merchant page find the same merchant however the
// name is written: percent-encoded or not, in Unicode or punycode, in any case, with
// a trailing dot. A segment that is not valid percent-encoding is checked as it
// stands, and fails. A canonical name without escapes is returned without allocating,
// as the API's allocation-free merchant route needs.
func HostnameFromPath(segment string) (string, error) {
	if strings.Contains(segment, "%") {
		if s, err := url.PathUnescape(segment); err == nil {
			segment = s
		}
	}
	return NormalizeHostname(segment)
}

// checkHostname checks an ASCII hostname without its trailing dot; upper-case letters
// are allowed when foldCase is set. It reports whether a label is punycode ("xn--").
func checkHostname(s string, foldCase bool) (punycode bool, err error) {
	if s == "" {
		return false, errHostEmpty
	}
	if len(s) > 253 {
		return false, errHostTooLong
	}
	start := 0
	digitsOnly := true
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '.' {
			n := i - start
			switch {
			case n == 0:
				return false, errHostLabel
			case n > 63:
				return false, errHostLabelLen
			case s[start] == '-' || s[i-1] == '-':
				return false, errHostHyphen
			}
			if n >= 4 && (s[start] == 'x' || s[start] == 'X') && (s[start+1] == 'n' || s[start+1] == 'N') && s[start+2] == '-' && s[start+3] == '-' {
				punycode = true
			}
			if i == len(s) && digitsOnly {
				return false, errHostIP
			}
			start, digitsOnly = i+1, true
			continue
		}
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', c == '-':
			digitsOnly = false
		case '0' <= c && c <= '9':
		case foldCase && 'A' <= c && c <= 'Z':
			digitsOnly = false
		case c == ':':
			return false, errHostPort
		default:
			return false, errHostChar
		}
	}
	return punycode, nil
}
