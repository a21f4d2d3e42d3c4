package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/postgres"
	"github.com/waystation/waystation/internal/postgres/pgtest"
)

// TestKeyCommandIssuesAWorkingKeyOnce runs the key command as make key does: the
// user and agent are created on first use, and each run prints a new key whose
// secret the database holds only as a hash.
func TestKeyCommandIssuesAWorkingKeyOnce(t *testing.T) {
	t.Parallel()
	dbURL := pgtest.URL(t)
	pepper := "test-pepper-of-at-least-32-bytes!!"
	env := map[string]string{"DATABASE_URL": dbURL, "AUTH_PEPPER": pepper, "SITE_DIR": t.TempDir()}
	getenv := func(k string) string { return env[k] }
	ctx := context.Background()

	keys := map[string]bool{}
	for _, args := range [][]string{{"-user", "ada"}, {"-user", "ada", "-agent", "scout"}, {"-user", "ada", "-agent", "scout"}} {
		var out strings.Builder
		if err := run(ctx, append([]string{"server", "key"}, args...), getenv, &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		token := strings.TrimSpace(out.String())
		scope, kid, secret, err := auth.Parse(token)
		if err != nil || keys[token] {
			t.Fatalf("key %q: %v", token, err)
		}
		keys[token] = true
		store, err := postgres.Open(ctx, dbURL)
		if err != nil {
			t.Fatal(err)
		}
		stored, err := store.StoredKey(ctx, kid)
		store.Close()
		if err != nil || !auth.Verify([]byte(pepper), secret, stored.SecretHash) || stored.Scope != scope {
			t.Fatalf("stored key %+v: %v", stored, err)
		}
		if (len(args) == 4) != (scope == auth.ScopeAgent && stored.AgentID != "") {
			t.Errorf("args %v gave a %s key", args, scope)
		}
	}

	for name, e := range map[string]map[string]string{
		"no pepper":    {"DATABASE_URL": dbURL},
		"short pepper": {"DATABASE_URL": dbURL, "AUTH_PEPPER": "short"},
	} {
		err := run(ctx, []string{"server", "key", "-user", "ada"}, func(k string) string { return e[k] }, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "AUTH_PEPPER") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := run(ctx, []string{"server", "key"}, getenv, io.Discard, io.Discard); err == nil {
		t.Error("key without -user ran")
	}
}

func TestSecretsKeyIsRequiredWithAPepperAndChecked(t *testing.T) {
	t.Parallel()
	pepper := []byte("test-pepper-of-at-least-32-bytes!!")
	env := func(v string) func(string) string {
		return func(k string) string { return map[string]string{"SECRETS_KEY": v}[k] }
	}
	if v, err := loadSecrets(env(""), nil); v != nil || err != nil {
		t.Errorf("no pepper, no key: %v %v", v, err)
	}
	if _, err := loadSecrets(env(""), pepper); err == nil || !strings.Contains(err.Error(), "SECRETS_KEY") {
		t.Errorf("pepper without a key: %v", err)
	}
	if _, err := loadSecrets(env("k1:c2hvcnQ="), pepper); err == nil || !strings.Contains(err.Error(), "SECRETS_KEY") {
		t.Errorf("short key: %v", err)
	}
	if v, err := loadSecrets(env(testSecretsKey), pepper); v == nil || err != nil {
		t.Errorf("good key: %v", err)
	}
}

func TestPublicURLIsAnOrigin(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]string{"": "", "https://waystation.example": "https://waystation.example",
		"https://waystation.example/": "https://waystation.example", "http://127.0.0.1:8080": "http://127.0.0.1:8080"} {
		got, err := loadPublicURL(func(string) string { return v })
		if err != nil || got != want {
			t.Errorf("%q: %q %v", v, got, err)
		}
	}
	for _, v := range []string{"waystation.example", "ftp://x.example", "https://x.example/app", "https://x.example/?a=1", "https://"} {
		if _, err := loadPublicURL(func(string) string { return v }); err == nil {
			t.Errorf("%q was taken", v)
		}
	}
}

func TestCapsAreReadFromTheEnvironment(t *testing.T) {
	t.Parallel()
	keys, agents, err := loadCaps(func(string) string { return "" })
	if keys != 0 || agents != 0 || err != nil { // unset: the auth service's defaults
		t.Errorf("defaults: %d keys, %d agents, %v", keys, agents, err)
	}
	env := map[string]string{"MAX_KEYS_PER_USER": "5", "MAX_AGENTS_PER_USER": "3"}
	if keys, agents, err = loadCaps(func(k string) string { return env[k] }); keys != 5 || agents != 3 || err != nil {
		t.Errorf("set: %d keys, %d agents, %v", keys, agents, err)
	}
	for _, v := range []string{"0", "-1", "x"} {
		if _, _, err := loadCaps(func(k string) string { return map[string]string{"MAX_AGENTS_PER_USER": v}[k] }); err == nil || !strings.Contains(err.Error(), "MAX_AGENTS_PER_USER") {
			t.Errorf("MAX_AGENTS_PER_USER=%q: %v", v, err)
		}
	}
}

func TestCallerShareIsReadFromTheEnvironment(t *testing.T) {
	t.Parallel()
	c, err := loadSearchConfig(func(string) string { return "" })
	if c.CallerShare != 0.1 || err != nil {
		t.Errorf("default caller share %v %v", c.CallerShare, err)
	}
	if c, err := loadSearchConfig(func(k string) string { return map[string]string{"SEARCH_CALLER_SHARE": "0.25"}[k] }); c.CallerShare != 0.25 || err != nil {
		t.Errorf("caller share 0.25: %v %v", c.CallerShare, err)
	}
	for _, v := range []string{"0", "1.5", "-0.1", "ten", "NaN"} {
		if _, err := loadSearchConfig(func(k string) string { return map[string]string{"SEARCH_CALLER_SHARE": v}[k] }); err == nil {
			t.Errorf("SEARCH_CALLER_SHARE=%q was taken", v)
		}
	}
}

func TestLoopbackHTTPIsExplicit(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]bool{"": false, "false": false, "true": true} {
		if got, err := loadLoopbackHTTP(func(string) string { return v }); err != nil || got != want {
			t.Errorf("%q: %v %v", v, got, err)
		}
	}
	for _, v := range []string{"1", "yes", "TRUE", "loopback"} {
		if _, err := loadLoopbackHTTP(func(string) string { return v }); err == nil {
			t.Errorf("%q accepted", v)
		}
	}
}

func TestSessionLimitsAreReadFromTheEnvironment(t *testing.T) {
	t.Parallel()
	l, keep, err := loadSessionLimits(func(string) string { return "" })
	if err != nil || l.OpenSessions != 100 || l.Events != 10000 || keep != 90*24*time.Hour {
		t.Fatalf("defaults: %+v %s %v", l, keep, err)
	}
	env := map[string]string{"MAX_OPEN_SESSIONS_PER_AGENT": "3", "MAX_EVENTS_PER_SESSION": "50", "SESSION_RETENTION": "30d"}
	l, keep, err = loadSessionLimits(func(k string) string { return env[k] })
	if err != nil || l.OpenSessions != 3 || l.Events != 50 || keep != 30*24*time.Hour {
		t.Fatalf("set: %+v %s %v", l, keep, err)
	}
	if _, keep, err := loadSessionLimits(func(k string) string { return map[string]string{"SESSION_RETENTION": "0"}[k] }); err != nil || keep != 0 {
		t.Errorf("0: %s %v", keep, err)
	}
	for _, bad := range []map[string]string{
		{"MAX_OPEN_SESSIONS_PER_AGENT": "0"}, {"MAX_EVENTS_PER_SESSION": "many"},
		{"SESSION_RETENTION": "1h"}, {"SESSION_RETENTION": "-5d"}, {"SESSION_RETENTION": "soon"},
	} {
		if _, _, err := loadSessionLimits(func(k string) string { return bad[k] }); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

func TestLLMConfigIsReadFromTheEnvironment(t *testing.T) {
	t.Parallel()
	c, err := loadLLM(func(k string) string {
		return map[string]string{"LLM_UPSTREAM_URL": "https://api.openai.com/v1", "LLM_UPSTREAM_KEY": "sk-x", "LLM_TIMEOUT": "30s",
			"LLM_ANTHROPIC_URL": "https://api.anthropic.com", "LLM_ANTHROPIC_KEY": "sk-ant-x"}[k]
	})
	if err != nil || c.URL != "https://api.openai.com/v1" || c.Key != "sk-x" || c.Timeout != 30*time.Second ||
		c.AnthropicURL != "https://api.anthropic.com" || c.AnthropicKey != "sk-ant-x" {
		t.Fatalf("%+v %v", c, err)
	}
	if c, err := loadLLM(func(string) string { return "" }); err != nil || c.URL != "" || c.Timeout != 0 { // the API's default
		t.Errorf("unset: %+v %v", c, err)
	}
	for _, bad := range []map[string]string{
		{"LLM_UPSTREAM_URL": "ftp://x.example"}, {"LLM_UPSTREAM_URL": "https://user:pw@x.example/v1"},
		{"LLM_UPSTREAM_URL": "https://x.example/v1?key=1"}, {"LLM_TIMEOUT": "forever"}, {"LLM_TIMEOUT": "10ms"},
		{"LLM_ANTHROPIC_URL": "api.anthropic.com"}, {"LLM_ANTHROPIC_URL": "https://k:s@api.anthropic.com"},
	} {
		if _, err := loadLLM(func(k string) string { return bad[k] }); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// SECURITY_CONTACT takes URIs security.txt may name, a bare address as mailto:, and
// defaults to security@ the public host.
func TestSecurityContactIsAURIOrRefused(t *testing.T) {
	t.Parallel()
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "SECURITY_CONTACT" {
				return v
			}
			return ""
		}
	}
	for v, want := range map[string]string{
		"":                "mailto:security@waystation.example",
		"sec@example.org": "mailto:sec@example.org",
		"mailto:a@b.example, https://b.example/report": "mailto:a@b.example https://b.example/report",
		"tel:+1-201-555-0123":                          "tel:+1-201-555-0123",
	} {
		got, err := loadSecurityContact(env(v), "https://waystation.example")
		if err != nil || strings.Join(got, " ") != want {
			t.Errorf("%q: %v %v, want %s", v, got, err, want)
		}
	}
	if got, _ := loadSecurityContact(env(""), ""); strings.Join(got, "") != "mailto:security@localhost" {
		t.Errorf("no PUBLIC_URL: %v", got)
	}
	for _, v := range []string{"http://insecure.example/", "javascript:alert(1)", "nobody", "mailto:", "https://", "a@b.example\nExpires: 1999"} {
		if got, err := loadSecurityContact(env(v), ""); err == nil {
			t.Errorf("%q taken: %v", v, got)
		}
	}
}
