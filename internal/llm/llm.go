// Package llm describes the model APIs the LLM gateway proxies, each once: which
// parts of a request are free text to blank and which say what a part is, which
// header carries a client's key, how the API's errors look to its clients and what
// goes upstream with every call. The gateway's routes (package api) read, check and
// relay; every rule that names one API lives here, beside that API.
package llm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/telemetry"
)

// Config is the upstream models the gateway forwards to: an OpenAI-compatible one
// (chat completions, responses, models) and an Anthropic one (messages).
type Config struct {
	// URL is the OpenAI-compatible upstream's base URL (https://api.openai.com/v1);
	// empty: no proxy of OpenAI's routes.
	URL string
	// Key is sent as the upstream's Bearer key; it is never logged or answered.
	Key string
	// AnthropicURL is the Anthropic upstream's base URL (https://api.anthropic.com),
	// to which /v1/messages is added; empty: no proxy of the Messages route.
	AnthropicURL string
	// AnthropicKey is sent to it as x-api-key; it is never logged or answered.
	AnthropicKey string
	// Timeout bounds one upstream call, a stream included (default 120s).
	Timeout time.Duration
	// Client makes the calls (default a client without a timeout of its own).
	Client *http.Client
}

// EventRedacted is the session event of a proxied call that had values blanked: the
// count only.
const EventRedacted = "llm.redacted"

// Provider is a family of model APIs one upstream serves, as its clients speak it:
// where they send their key, how they read an error, and what goes upstream with
// every call. Each provider is one file of this package.
type Provider interface {
	// Name names the provider in messages.
	Name() string
	// KeyHeader is the header, besides Authorization: Bearer, in which the
	// provider's clients send their key; "" when they send it there only.
	KeyHeader() string
	// Endpoint is the provider's upstream under c, with the headers of the
	// client's (h) that go along, each checked to be what the API takes.
	Endpoint(c Config, h http.Header) (Endpoint, error)
	// ErrorBody is e as the provider's clients read an error, a JSON object.
	ErrorBody(e Error) []byte
	// UpstreamError reads body, the upstream's answer of status, as an error of
	// the provider's shape; false when it is not one.
	UpstreamError(status int, body []byte) (Error, bool)
	// PassesHeader tells whether the header name (canonical) of an upstream's
	// refusal goes on to the client: those its clients read to know when to try
	// again.
	PassesHeader(name string) bool
	// RequestIDHeader is the header in which the provider's clients read the id
	// of a request.
	RequestIDHeader() string
}

// API is one model API the gateway proxies: the provider that serves it, where it
// answers and where it goes upstream, and the rule of its requests.
type API struct {
	Provider Provider
	// Route is where the gateway serves it, under the gateway's root (/messages);
	// Upstream is where it goes, under the provider's base URL (/v1/messages).
	Route, Upstream string
	// Request is the rule of the bodies it takes (none for a read).
	Request Rule
}

// APIs are the model APIs the gateway proxies.
var APIs = []*API{Models, ChatCompletions, Responses, Messages}

// ProviderOf is the provider whose clients call route, a path under the gateway's
// root: that of the API served there or under it (/messages/count_tokens is
// Anthropic's, which the gateway does not serve), else OpenAI, which serves the
// rest.
func ProviderOf(route string) Provider {
	for _, a := range APIs {
		if route == a.Route || strings.HasPrefix(route, a.Route+"/") {
			return a.Provider
		}
	}
	return OpenAI
}

// Endpoint is an upstream API the gateway forwards to: its base URL and the headers
// that go with every call (its key among them).
type Endpoint struct {
	Provider Provider
	URL      string
	Header   http.Header
	// FromClient names the headers whose values the client gave, which are checked
	// for protected values as the body is.
	FromClient []string
}

// Error is an error as a model API's clients read it: its status, the class they
// branch on (from the status when empty), what went wrong, a code and the
// parameter at fault.
type Error struct {
	Status              int
	Type, Message, Code string
	Param               string
}

// ErrorType is the error class OpenAI's clients, and Anthropic's, know for status.
func ErrorType(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status == http.StatusForbidden:
		return "permission_error"
	case status == http.StatusNotFound:
		return "not_found_error"
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status >= 500:
		return "api_error"
	default:
		return "invalid_request_error"
	}
}

// Call calls path of the upstream up under c. The caller's trace never goes
// upstream: the call carries a traceparent of its own. An answer other than 2xx is
// an *UpstreamError when it is a refusal the client should read (see refused), else
// upstream_error, and nothing of it is passed on.
func (c Config) Call(ctx context.Context, up Endpoint, method, path string, body []byte) (*http.Response, context.CancelFunc, error) {
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(up.URL, "/")+path, bytes.NewReader(body))
	if err != nil {
		cancel()
		return nil, nil, UpstreamFailed(err)
	}
	maps.Copy(req.Header, up.Header)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if tp := telemetry.UpstreamTraceparent(ctx); tp != "" {
		req.Header.Set("Traceparent", tp)
	}
	client := c.Client
	if client == nil {
		client = http.DefaultClient
	}
	res, err := client.Do(req)
	if err != nil {
		cancel()
		return nil, nil, UpstreamFailed(err)
	}
	if res.StatusCode/100 != 2 {
		defer cancel()
		defer res.Body.Close()
		return nil, nil, refused(up.Provider, res)
	}
	return res, cancel, nil
}

// Passed are the statuses of an upstream's refusal that go on to the client as
// they came, for its client to read as the provider's own: the request is not one
// the model takes (400: a context too long), the model is unknown (404), or the
// upstream's limits are reached (429). Any other (a 401 for the gateway's own key,
// a 5xx) is upstream_error.
var Passed = []int{http.StatusBadRequest, http.StatusNotFound, http.StatusTooManyRequests}

// maxErrorBody bounds how much of an upstream's refusal is read.
const maxErrorBody = 64 << 10

// UpstreamError is an upstream's refusal that goes on to the client: its status
// and error, as its provider's clients read them, and the headers that tell them
// when to try again. Its message may quote the request: it is cleaned of the
// user's protected values before it is answered.
type UpstreamError struct {
	Answer Error
	Header http.Header
}

func (e *UpstreamError) Error() string {
	return "upstream answered " + strconv.Itoa(e.Answer.Status) + " " + e.Answer.Type
}

// headerValue is what a header passed on from an upstream may hold: a number, a
// duration, a date.
var headerValue = regexp.MustCompile(`^[0-9A-Za-z.:,+ -]{1,64}$`)

// refused is the upstream's refusal res, of provider p: an *UpstreamError when its
// status is passed on and its body, at most maxErrorBody, is an error of p's
// shape; else upstream_error.
func refused(p Provider, res *http.Response) error {
	cause := errors.New("upstream answered " + res.Status)
	if p == nil || !slices.Contains(Passed, res.StatusCode) {
		return UpstreamFailed(cause)
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, maxErrorBody+1))
	if err != nil || len(body) > maxErrorBody {
		return UpstreamFailed(fmt.Errorf("%w, its body unread or over %d bytes: %v", cause, maxErrorBody, err))
	}
	e, ok := p.UpstreamError(res.StatusCode, body)
	if !ok {
		return UpstreamFailed(fmt.Errorf("%w, its body not an error of %s's API", cause, p.Name()))
	}
	e.Status = res.StatusCode
	h := http.Header{}
	for name, vs := range res.Header {
		if len(vs) == 1 && p.PassesHeader(name) && headerValue.MatchString(vs[0]) {
			h[name] = vs
		}
	}
	return &UpstreamError{Answer: e, Header: h}
}

// word is what an error's type, code or param read from an upstream may be; any
// other is dropped. maxMessage bounds its message, in bytes.
var word = regexp.MustCompile(`^[A-Za-z0-9_.\[\]-]{1,128}$`)

const maxMessage = 4096

// upstreamText is s as an upstream's error may say it: valid UTF-8, cut at
// maxMessage bytes.
func upstreamText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= maxMessage {
		return s
	}
	cut := maxMessage
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// upstreamWord is s, a type, code or param an upstream said, or "" when it is not
// a word.
func upstreamWord(s any) string {
	w, _ := s.(string)
	if !word.MatchString(w) {
		return ""
	}
	return w
}

// UpstreamFailed is upstream_error; the cause is logged, and holds no key (the
// client's errors name the URL, never a header).
func UpstreamFailed(err error) error {
	return problem.Wrap(problem.UpstreamError, "The upstream language model failed; nothing of its answer is passed on.", err)
}
