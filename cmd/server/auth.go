package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/waystation/waystation/api"
	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/idempotency"
	"github.com/waystation/waystation/internal/llm"
	"github.com/waystation/waystation/internal/memory"
	"github.com/waystation/waystation/internal/outbound"
	"github.com/waystation/waystation/internal/payment"
	"github.com/waystation/waystation/internal/postgres"
	"github.com/waystation/waystation/internal/protect"
	"github.com/waystation/waystation/internal/request"
	"github.com/waystation/waystation/internal/session"
	"github.com/waystation/waystation/internal/vault"
	"github.com/waystation/waystation/internal/webhook"
)

// errNoPepper is the key command's answer when AUTH_PEPPER is unset.
var errNoPepper = errors.New("AUTH_PEPPER is not set (make key and make run generate one into var/; in production set a random secret of at least 32 bytes)")

// loadPepper reads AUTH_PEPPER, the server-wide secret that API keys are hashed
// with; nil when it is unset.
func loadPepper(getenv func(string) string) ([]byte, error) {
	p := getenv("AUTH_PEPPER")
	if p == "" {
		return nil, nil
	}
	if len(p) < auth.MinPepperLen {
		return nil, fmt.Errorf("AUTH_PEPPER must be at least %d bytes", auth.MinPepperLen)
	}
	return []byte(p), nil
}

// loadSecrets reads SECRETS_KEY, the keys that values people provide through
// requests are sealed with ("id:base64[,id:base64...]", the first current). It is
// required with AUTH_PEPPER: a server that can take such values must keep them sealed.
func loadSecrets(getenv func(string) string, pepper []byte) (*vault.Vault, error) {
	spec := getenv("SECRETS_KEY")
	if spec == "" {
		if pepper != nil {
			return nil, errors.New("SECRETS_KEY is not set (make run generates one into var/; in production set id:base64 of 32 random bytes)")
		}
		return nil, nil
	}
	v, err := vault.Parse(spec)
	if err != nil {
		return nil, fmt.Errorf("SECRETS_KEY: %w", err)
	}
	return v, nil
}

// loadPublicURL reads PUBLIC_URL, the origin approval links are given under.
func loadPublicURL(getenv func(string) string) (string, error) {
	v := getenv("PUBLIC_URL")
	if v == "" {
		return "", nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" {
		return "", fmt.Errorf("PUBLIC_URL %q: want an origin such as https://waystation.example", v)
	}
	return u.Scheme + "://" + u.Host, nil
}

// loadSecurityContact reads SECURITY_CONTACT, security.txt's Contact: URIs (mailto:,
// https: or tel:) separated by commas, a bare address read as mailto:. Unset, it is
// security@ the host of PUBLIC_URL, or of localhost when that is unset too.
func loadSecurityContact(getenv func(string) string, publicURL string) ([]string, error) {
	v := strings.TrimSpace(getenv("SECURITY_CONTACT"))
	if v == "" {
		host := "localhost"
		if u, err := url.Parse(publicURL); err == nil && u.Hostname() != "" {
			host = u.Hostname()
		}
		return []string{"mailto:security@" + host}, nil
	}
	var out []string
	for _, c := range strings.Split(v, ",") {
		c = strings.TrimSpace(c)
		if !strings.Contains(c, ":") && strings.Contains(c, "@") {
			c = "mailto:" + c
		}
		u, err := url.Parse(c)
		ok := err == nil && !strings.ContainsAny(c, " \t\r\n")
		switch {
		case !ok:
		case u.Scheme == "mailto":
			ok = strings.Contains(u.Opaque, "@")
		case u.Scheme == "https":
			ok = u.Host != ""
		case u.Scheme == "tel":
			ok = u.Opaque != ""
		default:
			ok = false
		}
		if !ok {
			return nil, fmt.Errorf("SECURITY_CONTACT %q: want mailto:, https: or tel: URIs separated by commas, such as mailto:security@waystation.example", c)
		}
		out = append(out, c)
	}
	return out, nil
}

// loadLoopbackHTTP reads LOOPBACK_HTTP: "true" when the server is reached over
// plain HTTP on loopback during development, so that the approval pages' cookies go
// there without Secure (browsers drop Secure cookies sent over plain HTTP).
func loadLoopbackHTTP(getenv func(string) string) (bool, error) {
	switch v := getenv("LOOPBACK_HTTP"); v {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	default:
		return false, fmt.Errorf("LOOPBACK_HTTP %q: want true or false", v)
	}
}

// loadCaps reads MAX_KEYS_PER_USER and MAX_AGENTS_PER_USER, the most unrevoked keys
// and the most agents one user may hold (0 when unset: the auth service's
// defaults), so that minting keys or agents buys no more of what is shared.
func loadCaps(getenv func(string) string) (keys, agents int, err error) {
	for _, c := range []struct {
		name string
		dst  *int
	}{{"MAX_KEYS_PER_USER", &keys}, {"MAX_AGENTS_PER_USER", &agents}} {
		if v := getenv(c.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return 0, 0, fmt.Errorf("%s %q: want a whole number of at least 1", c.name, v)
			}
			*c.dst = n
		}
	}
	return keys, agents, nil
}

// loadDetections reads DETECTION_BUDGET (how many requests holding a protected value
// an agent was never given, or a flood of candidates, pause it; default 3),
// DETECTION_WINDOW (how far back they count; default 24h) and CANDIDATE_LIMIT (how
// many strings of one of a value's shapes a request may carry; default 32).
func loadDetections(getenv func(string) string) (protect.Config, error) {
	var c protect.Config
	for _, n := range []struct {
		name string
		dst  *int
	}{{"DETECTION_BUDGET", &c.Budget}, {"CANDIDATE_LIMIT", &c.CandidateLimit}} {
		if v := getenv(n.name); v != "" {
			k, err := strconv.Atoi(v)
			if err != nil || k < 1 {
				return c, fmt.Errorf("%s %q: want a whole number of at least 1", n.name, v)
			}
			*n.dst = k
		}
	}
	if v := getenv("DETECTION_WINDOW"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Minute {
			return c, fmt.Errorf("DETECTION_WINDOW %q: want a duration of at least 1m, such as 24h", v)
		}
		c.Window = d
	}
	return c, nil
}

// LLMConfig is the upstreams of the LLM proxy.
type LLMConfig struct {
	URL, Key                   string
	AnthropicURL, AnthropicKey string
	Timeout                    time.Duration
}

// loadLLM reads LLM_UPSTREAM_URL (an OpenAI-compatible base URL; unset: no proxy of
// OpenAI's routes), LLM_UPSTREAM_KEY, LLM_ANTHROPIC_URL (Anthropic's base URL; unset:
// no proxy of the Messages route), LLM_ANTHROPIC_KEY and LLM_TIMEOUT (unset: the
// API's default).
func loadLLM(getenv func(string) string) (LLMConfig, error) {
	c := LLMConfig{URL: getenv("LLM_UPSTREAM_URL"), Key: getenv("LLM_UPSTREAM_KEY"),
		AnthropicURL: getenv("LLM_ANTHROPIC_URL"), AnthropicKey: getenv("LLM_ANTHROPIC_KEY")}
	for _, b := range []struct{ name, value, example string }{
		{"LLM_UPSTREAM_URL", c.URL, "https://api.openai.com/v1"}, {"LLM_ANTHROPIC_URL", c.AnthropicURL, "https://api.anthropic.com"},
	} {
		if b.value == "" {
			continue
		}
		u, err := url.Parse(b.value)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.RawQuery != "" {
			return c, fmt.Errorf("%s: want a base URL such as %s, without credentials or a query", b.name, b.example)
		}
	}
	if v := getenv("LLM_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second || d > time.Hour {
			return c, fmt.Errorf("LLM_TIMEOUT %q: want a duration from 1s to 1h", v)
		}
		c.Timeout = d
	}
	return c, nil
}

// loadSessionLimits reads MAX_OPEN_SESSIONS_PER_AGENT (100), MAX_EVENTS_PER_SESSION
// (10000) and SESSION_RETENTION (90 days; 0 keeps closed sessions for good), so that
// what agents leave behind does not grow without bound.
func loadSessionLimits(getenv func(string) string) (session.Limits, time.Duration, error) {
	l := session.Limits{OpenSessions: 100, Events: 10000}
	for _, c := range []struct {
		name string
		dst  *int
	}{{"MAX_OPEN_SESSIONS_PER_AGENT", &l.OpenSessions}, {"MAX_EVENTS_PER_SESSION", &l.Events}} {
		if v := getenv(c.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return l, 0, fmt.Errorf("%s %q: want a whole number of at least 1", c.name, v)
			}
			*c.dst = n
		}
	}
	keep := 90 * 24 * time.Hour
	if v := getenv("SESSION_RETENTION"); v != "" {
		d, err := parseDays(v)
		if err != nil || (d != 0 && d < session.MinRetention) {
			return l, 0, fmt.Errorf("SESSION_RETENTION %q: want 0 (keep for good) or a duration of at least 24h, such as 2160h or 90d", v)
		}
		keep = d
	}
	return l, keep, nil
}

// withAuthenticated starts the event listener and the expiry of requests, and
// returns the option serving the authenticated API. Without a pepper the API fails
// closed: it refuses every key.
func withAuthenticated(ctx context.Context, cfg Config, log *slog.Logger, store *postgres.Store, svc services) api.Option {
	if cfg.AuthPepper == nil {
		log.Warn("AUTH_PEPPER is not set: the authenticated API refuses every key")
		return api.WithAuthenticated(api.Authenticated{})
	}
	listener := store.NewListener(log)
	go listener.Run(ctx)
	go request.Expirer{Store: store, Every: requestExpiryEvery, Log: log}.Run(ctx)
	go idempotency.Sweeper{Store: store, Every: idempotencySweepEvery, Log: log}.Run(ctx)
	go session.Retention{Store: store, Keep: cfg.SessionRetention, Every: retentionSweepEvery, Log: log}.Run(ctx)
	a := api.Authenticated{Services: svc.Services, Idempotency: store, Pepper: cfg.AuthPepper, Events: listener, PublicURL: cfg.PublicURL,
		Limits: api.Limits{SessionRetention: cfg.SessionRetention}, Prober: svc.prober}
	if cfg.Secrets != nil {
		a.Protected = memory.Protected{Store: store, Opener: cfg.Secrets}
	}
	a.LLM = llm.Config{URL: cfg.LLM.URL, Key: cfg.LLM.Key, AnthropicURL: cfg.LLM.AnthropicURL, AnthropicKey: cfg.LLM.AnthropicKey, Timeout: cfg.LLM.Timeout}
	if cfg.Probe.Interval > 0 {
		go svc.Origins.Run(ctx, cfg.Probe.Interval) // the manifests, fetched with each probe round
	}
	if cfg.Secrets != nil {
		go webhook.Deliverer{Store: store, Opener: cfg.Secrets, Sender: svc.webhooks, Every: webhookEvery, Log: log,
			Protected: memory.Protected{Store: store, Opener: cfg.Secrets}}.Run(ctx)
	}
	if svc.Payments.Payer != nil {
		go svc.Payments.Run(ctx, paymentEvery)
		p := svc.Payments.Payer
		log.Info("paying sellers", "payer", p.Address(), "networks", p.Networks, "chains", cfg.Payment.Chains.Networks(),
			"solana_payer", p.AddressOn("solana"), "solana_networks", p.SolanaNetworks)
	}
	return api.WithAuthenticated(a)
}

// newPayments is the payment service, sending payments through the sellers' client.
func newPayments(cfg Config, log *slog.Logger, store *postgres.Store, sellers *outbound.Client) *payment.Service {
	svc := &payment.Service{Store: store, Reports: store, Payer: cfg.Payment.Payer, Sender: sellers, Log: log, Lease: cfg.Payment.Lease,
		MaxAuthorization: cfg.Payment.MaxAuthorization}
	if cfg.Payment.Chains != nil {
		svc.Chain = cfg.Payment.Chains
	}
	return svc
}

// webhookEvery is how often due webhook deliveries are sent: an event reaches its
// receiver within about a second.
const webhookEvery = time.Second

// paymentEvery is how often approved payments made on other replicas, and payments
// whose executor stopped, are looked for; an approval here wakes the executor at once.
const paymentEvery = 2 * time.Second

// requestExpiryEvery is how often requests whose time ran out are expired, so that
// agents waiting on them hear of it; reads expire a due request on the spot anyway.
const requestExpiryEvery = 5 * time.Second

// idempotencySweepEvery is how often expired idempotency records are deleted; any
// replica may, each deletion is one statement.
const idempotencySweepEvery = time.Minute

// retentionSweepEvery is how often closed sessions past SESSION_RETENTION are deleted.
const retentionSweepEvery = time.Hour

// issueKey is the key command: it creates the user (and the agent) if missing and
// prints a new key, the only time its secret is shown.
func issueKey(ctx context.Context, store *postgres.Store, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("key", flag.ContinueOnError)
	fs.SetOutput(stderr)
	user := fs.String("user", "", "name of the user, created if missing")
	agent := fs.String("agent", "", "name of the user's agent, created if missing; without it the key is a user key")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *user == "" || fs.NArg() > 0 {
		return errors.New("usage: key -user NAME [-agent NAME]")
	}
	pepper, err := loadPepper(getenv)
	if err != nil {
		return err
	}
	if pepper == nil {
		return errNoPepper
	}
	if err := store.Migrate(ctx); err != nil {
		return err
	}
	u, err := store.EnsureUser(ctx, *user)
	if err != nil {
		return err
	}
	scope, agentID := auth.ScopeUser, ""
	if *agent != "" {
		a, err := store.EnsureAgent(ctx, u.ID, *agent)
		if err != nil {
			return err
		}
		scope, agentID = auth.ScopeAgent, a.ID
	}
	k, err := auth.Generate(scope, pepper)
	if err != nil {
		return err
	}
	// The operator's command is held to no cap.
	if _, err := store.InsertKey(ctx, k, u.ID, agentID, 0); err != nil {
		return err
	}
	who := "user " + u.Name
	if agentID != "" {
		who = "agent " + *agent + " of user " + u.Name
	}
	fmt.Fprintf(stderr, "new %s key for %s (kid %s); it is shown only now:\n", scope, who, k.KID)
	fmt.Fprintln(stdout, k.Token)
	return nil
}

// reseal is the reseal command: every stored value not sealed under SECRETS_KEY's
// first key is opened and sealed again under it.
func reseal(ctx context.Context, store *postgres.Store, getenv func(string) string, stdout io.Writer) error {
	v, err := loadSecrets(getenv, nil)
	if err != nil {
		return err
	}
	if v == nil {
		return errors.New("reseal: SECRETS_KEY is not set")
	}
	if err := store.Migrate(ctx); err != nil {
		return err
	}
	n, err := store.Reseal(ctx, v)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%d values re-sealed under key %s\n", n, v.Current())
	return nil
}
