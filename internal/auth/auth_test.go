package auth

import (
	"strings"
	"testing"
)

func TestGeneratedKeysParseAndVerifyOnlyWithTheirPepper(t *testing.T) {
	pepper := []byte(strings.Repeat("p", 32))
	for _, s := range []Scope{ScopeAgent, ScopeUser} {
		k, err := Generate(s, pepper)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(k.Token, "sk_"+string(s)+"_"+k.KID+"_") || len(k.KID) != 16 {
			t.Fatalf("token %q kid %q", k.Token, k.KID)
		}
		scope, kid, secret, err := Parse(k.Token)
		if err != nil || scope != s || kid != k.KID || len(secret) != 32 {
			t.Fatalf("parse: %v %v %v", scope, kid, err)
		}
		if !Verify(pepper, secret, k.Hash) {
			t.Fatal("the key does not verify")
		}
		if Verify([]byte(strings.Repeat("q", 32)), secret, k.Hash) {
			t.Fatal("the key verifies under another pepper")
		}
		secret[0] ^= 1
		if Verify(pepper, secret, k.Hash) {
			t.Fatal("a changed secret verifies")
		}
	}
}

func TestParseRefusesMalformedKeys(t *testing.T) {
	good, _ := Generate(ScopeAgent, []byte(strings.Repeat("p", 32)))
	for _, tok := range []string{
		"", "sk_", "sk_agent_", "sk_admin_" + good.Token[9:], "pk_" + good.Token[3:],
		good.Token + "0", good.Token[:len(good.Token)-1], strings.ToUpper(good.Token),
		strings.Replace(good.Token, "_", "-", 3),
	} {
		if _, _, _, err := Parse(tok); err == nil {
			t.Errorf("Parse(%q) accepted", tok)
		}
	}
}

// Bearer takes exactly one Authorization value of the Bearer scheme, in any case.
func TestBearer(t *testing.T) {
	for _, c := range []struct {
		values []string
		token  string
		ok     bool
	}{
		{[]string{"Bearer sk_agent_x"}, "sk_agent_x", true},
		{[]string{"bearer sk_user_y"}, "sk_user_y", true},
		{[]string{"Basic dXNlcjpwYXNz"}, "", false},
		{[]string{"sk_agent_x"}, "", false},
		{[]string{"Bearer a", "Bearer b"}, "", false},
		{nil, "", false},
	} {
		if token, ok := Bearer(c.values); token != c.token || ok != c.ok {
			t.Errorf("Bearer(%q) = %q, %v; want %q, %v", c.values, token, ok, c.token, c.ok)
		}
	}
}

// RequestKey takes one key, from Authorization as a Bearer key or from X-Api-Key where the
// route takes it, or the same key from both, never two.
func TestRequestKey(t *testing.T) {
	for _, c := range []struct {
		authorization, apiKey []string
		token                 string
		sent, ok              bool
	}{
		{nil, nil, "", false, false},
		{[]string{"Bearer sk_agent_x"}, nil, "sk_agent_x", true, true},
		{[]string{"Basic dXNlcjpwYXNz"}, nil, "", true, false},
		{nil, []string{"sk_agent_x"}, "sk_agent_x", true, true},
		{nil, []string{""}, "", true, false},
		{nil, []string{"sk_agent_x", "sk_agent_y"}, "", true, false},
		{[]string{"Bearer sk_agent_x"}, []string{"sk_agent_x"}, "sk_agent_x", true, true},
		{[]string{"Bearer sk_agent_x"}, []string{"sk_agent_y"}, "", true, false},
		{[]string{"Basic sk_agent_x"}, []string{"sk_agent_x"}, "", true, false},
		{[]string{"Bearer "}, []string{""}, "", true, false},
		{[]string{"Bearer sk_agent_x", "Bearer sk_agent_x"}, []string{"sk_agent_x"}, "", true, false},
	} {
		if token, sent, ok := RequestKey(c.authorization, c.apiKey); token != c.token || sent != c.sent || ok != c.ok {
			t.Errorf("RequestKey(%q, %q) = %q, %v, %v; want %q, %v, %v", c.authorization, c.apiKey, token, sent, ok, c.token, c.sent, c.ok)
		}
	}
}
