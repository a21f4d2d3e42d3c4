// Package problem is the service's one error vocabulary: an error with a stable code,
// and one table that says, for every code, its HTTP status, its title, what it means
// to the person who meets it and what to do about it. The API answers problems as
// RFC 9457 problem+json from this table, and the pages at /problems/{code} explain
// them from the same table; domain packages and the store return these errors, so
// no handler has to know another package's errors.
package problem

import (
	"errors"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Error is a failure with a stable code that clients branch on. Detail says what
// went wrong in this instance and never echoes a value a person provided.
type Error struct {
	Code   string
	Detail string
	// Parameter names the query parameter or path segment at fault, when one is.
	Parameter string
	// RetryAfter, in seconds, is how long to wait before trying again, when positive.
	RetryAfter int
	// Err is the cause, for the log; it is never shown to the client.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Code + ": " + e.Detail + ": " + e.Err.Error()
	}
	return e.Code + ": " + e.Detail
}

func (e *Error) Unwrap() error { return e.Err }

// Seconds is d in whole seconds, rounded up, as HTTP counts a wait: a Retry-After,
// and the RateLimit headers' window and reset. A wait of half a second is told as
// one, never as none.
func Seconds(d time.Duration) int { return int(math.Ceil(d.Seconds())) }

// New is a problem of code with detail.
func New(code, detail string) *Error { return &Error{Code: code, Detail: detail} }

// Param is a problem about one parameter.
func Param(code, param, detail string) *Error {
	return &Error{Code: code, Detail: detail, Parameter: param}
}

// Invalid is a request that breaks a rule of its route: validation_failed.
func Invalid(detail string) *Error { return New(ValidationFailed, detail) }

// Text checks a text input named name: given when required, valid UTF-8 without NUL
// (which PostgreSQL cannot keep), at most max bytes; else a validation_failed that
// names the input and never echoes it.
func Text(name, v string, required bool, max int) error {
	if required && strings.TrimSpace(v) == "" {
		return Invalid(name + " is required.")
	}
	if len(v) > max || !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
		return Invalid(name + " must be valid UTF-8 of at most " + strconv.Itoa(max) + " bytes, without NUL.")
	}
	return nil
}

// Wrap is a problem caused by err, which the log keeps and the client never sees.
func Wrap(code, detail string, err error) *Error {
	return &Error{Code: code, Detail: detail, Err: err}
}

// As finds the problem in err's chain.
func As(err error) (*Error, bool) {
	var p *Error
	ok := errors.As(err, &p)
	return p, ok
}

// CodeOf is the code of the problem in err's chain, or "" when there is none (an
// internal error).
func CodeOf(err error) string {
	if p, ok := As(err); ok {
		return p.Code
	}
	return ""
}

// Codes of the directory and the service as a whole.
const (
	VerifiedReserved    = "verified_reserved"
	QueryTooLong        = "query_too_long"
	InvalidParameter    = "invalid_parameter"
	UnknownParameter    = "unknown_parameter"
	NotFound            = "not_found"
	MethodNotAllowed    = "method_not_allowed"
	RateLimited         = "rate_limited"
	AllowanceExhausted  = "search_allowance_exhausted"
	SearchUnavailable   = "search_unavailable"
	DatabaseUnavailable = "database_unavailable"
	Internal            = "internal"
)

// Codes of the authenticated API.
const (
	Unauthenticated         = "unauthenticated"
	InvalidAPIKey           = "invalid_api_key"
	KeyRevoked              = "key_revoked"
	WrongKeyScope           = "wrong_key_scope"
	ValidationFailed        = "validation_failed"
	IdempotencyConflict     = "idempotency_conflict"
	IdempotencyInProgress   = "idempotency_in_progress"
	SessionClosed           = "session_closed"
	PayloadTooLarge         = "payload_too_large"
	InvalidStateTransition  = "invalid_state_transition"
	RequestExpired          = "request_expired"
	ArtifactAlreadyClaimed  = "artifact_already_claimed"
	QuotaExceeded           = "quota_exceeded"
	PreconditionFailed      = "precondition_failed"
	PreconditionRequired    = "precondition_required"
	ApprovalRequired        = "approval_required"
	ProtectedValueDetected  = "protected_value_detected"
	RedactionUnavailable    = "redaction_unavailable"
	LLMNotConfigured        = "llm_not_configured"
	UpstreamError           = "upstream_error"
	UnsupportedMediaType    = "unsupported_media_type"
	PayerNotConfigured      = "payer_not_configured"
	SpendingLimitExceeded   = "spending_limit_exceeded"
	AgentPaused             = "agent_paused"
	HostNotAllowed          = "host_not_allowed"
	OfferNotPayable         = "offer_not_payable"
	OfferNamesPayer         = "offer_names_payer"
	Permit2ApprovalRequired = "permit2_approval_required"
	PriceAboveMaximum       = "price_above_maximum"
	OverrideRequired        = "override_required"
	OriginNotAllowed        = "origin_not_allowed"
	ManifestRefused         = "manifest_refused"
	SubmissionRateLimited   = "submission_rate_limited"
	PaymentNotSettled       = "payment_not_settled"
	AlreadyReported         = "already_reported"
	ReportWindowClosed      = "report_window_closed"
)

// Kind is what the table says of a code.
type Kind struct {
	Status int
	Title  string
	// Meaning and Remedy explain the code to a person, on its page.
	Meaning, Remedy string
}

// kinds is the table: every code the service answers, once.
var kinds = map[string]Kind{
	VerifiedReserved: {http.StatusBadRequest, "Parameter reserved",
		"The request carried the verified parameter. It is reserved for a future verified badge that does not exist yet, so the directory refuses it rather than quietly ignoring it.",
		"Drop verified from the query. To list the sellers the directory trusts most, filter with verdict=proceed."},
	QueryTooLong: {http.StatusBadRequest, "Query too long",
		"The search query q is longer than 1024 bytes of UTF-8 once trimmed.",
		"Shorten the query to the words that matter; a sentence or two is plenty."},
	InvalidParameter: {http.StatusBadRequest, "Invalid parameter",
		"A query parameter or path segment has a value the route cannot read, such as a limit that is not a number or a hostname that is not one, or a model call's model is not a model's name. The parameter field of the answer names it (on the LLM proxy, error.param).",
		"Fix the value named by parameter; the OpenAPI document lists what each parameter takes."},
	UnknownParameter: {http.StatusBadRequest, "Unknown parameter",
		"The request carried a parameter this route does not take, or the same parameter twice. The directory refuses it so that nothing silently means less than it says.",
		"Remove the parameter named by parameter, or give a list as one comma-separated value."},
	NotFound: {http.StatusNotFound, "Not found",
		"There is nothing at this address: no enabled method has this slug, no method is served from this hostname, or the route does not exist.",
		"Check the spelling, or browse the directory from its home page."},
	MethodNotAllowed: {http.StatusMethodNotAllowed, "Method not allowed",
		"The directory is read-only: it answers GET, HEAD and OPTIONS only. The Allow header lists what the address takes.",
		"Use GET."},
	RateLimited: {http.StatusTooManyRequests, "Rate limited",
		"This caller asked for more than its share of something limited: more searches than its bucket holds, or, for an API key, more event streams and long polls open at once than a key may hold. The plain list, every method and every merchant still answer.",
		"Wait the number of seconds in Retry-After. For search, use the list with filters, which is not limited; for events, close a stream or long poll this key holds open first."},
	AllowanceExhausted: {http.StatusServiceUnavailable, "Search allowance exhausted",
		"Today's allowance of new search queries is spent, or this caller's share of it (each caller, an API key's user or an address, may spend only a part of what all share); exact names still answer, and so do queries this server embedded since it started while its cache still holds them (not after a restart, nor on another replica). /health says allowance_exhausted meanwhile. It renews at midnight UTC.",
		"Wait the number of seconds in Retry-After, search for an exact method or provider name, or use the list with filters."},
	SearchUnavailable: {http.StatusServiceUnavailable, "Search unavailable",
		"No search model can answer right now. The plain list, every method and every merchant still answer.",
		"Retry after the number of seconds in Retry-After, or use the list with filters."},
	DatabaseUnavailable: {http.StatusServiceUnavailable, "Database unavailable",
		"The service cannot reach its database right now, so the authenticated API cannot read or record anything. The public directory, its pages and the published files still answer from the last snapshot.",
		"Retry after the number of seconds in Retry-After; a write retried with the same body, client id or Idempotency-Key is applied once."},
	Internal: {http.StatusInternalServerError, "Internal error",
		"Something went wrong on the service's side. It was logged under the request id of the answer.",
		"Retry in a moment; if it persists, report the request id."},

	Unauthenticated: {http.StatusUnauthorized, "Authentication required",
		"The route belongs to the authenticated API and the request carried no API key.",
		"Send the key in the Authorization header as Bearer sk_agent_… or Bearer sk_user_…; the OpenAPI document says which scope each route takes."},
	InvalidAPIKey: {http.StatusUnauthorized, "Invalid API key",
		"The Authorization header did not hold exactly one valid API key: it is malformed, unknown, or its secret does not match.",
		"Check that the whole key was copied, sent once, after the word Bearer. A lost key cannot be shown again: its user creates a new one."},
	KeyRevoked: {http.StatusUnauthorized, "API key revoked",
		"The key was revoked by its user or by the agent holding it, and revocation is final.",
		"Ask the user who owns the agent for a new key."},
	WrongKeyScope: {http.StatusForbidden, "Wrong key scope",
		"The key is valid but of the other scope: agents run sessions and raise requests, while only their user decides requests, stops sessions and manages agents and keys.",
		"Call the route with a key of the scope named in the WWW-Authenticate header."},
	ValidationFailed: {http.StatusUnprocessableEntity, "Validation failed",
		"The body or a header broke a rule of the route: a member is missing, of the wrong type or out of range, one the route does not take, or the JSON does not parse. The detail says which rule and names the member, without repeating the values sent (a member the route does not take is named unless its name holds one of the user's protected values, which is refused as protected_value_detected).",
		"Fix what the detail names; the OpenAPI document describes every body."},
	IdempotencyConflict: {http.StatusConflict, "Idempotency conflict",
		"The idempotency key, or the client id that makes a write idempotent, was used before with a different body. The first write stands; this one was not applied.",
		"Retry with exactly the first body, or use a new key or client id for a new write."},
	IdempotencyInProgress: {http.StatusConflict, "Idempotent request in progress",
		"A request with the same idempotency key is still being answered.",
		"Retry after the number of seconds in Retry-After: the retry gets the first request's answer."},
	SessionClosed: {http.StatusConflict, "Session closed",
		"The session was completed or stopped, so nothing can be added to it.",
		"Open a new session for new work; a closed session can still be read."},
	PayloadTooLarge: {http.StatusRequestEntityTooLarge, "Payload too large",
		"The request body is larger than the route takes.",
		"Send a smaller body; GET /agent/me lists the limits."},
	InvalidStateTransition: {http.StatusConflict, "Invalid state transition",
		"The request is in a status that does not allow this change: it was already decided, canceled, or has no artifact to claim yet.",
		"Read the request to see its status; a terminal status is final."},
	RequestExpired: {http.StatusGone, "Request expired",
		"The request's time ran out before its user decided, so it can no longer be decided, canceled or claimed.",
		"Raise a new request if the agent still needs the answer."},
	ArtifactAlreadyClaimed: {http.StatusConflict, "Artifact already claimed",
		"The artifact of this request was claimed once already; it is handed out only once.",
		"Use the artifact from the first claim."},
	QuotaExceeded: {http.StatusConflict, "Quota exceeded",
		"The user already holds as many unrevoked API keys (its agents' keys included), or as many agents, as the server allows one user; the detail says which. Nothing was created. The request itself is valid: it conflicts with what the user holds now, so the same request succeeds once a place is free.",
		"Revoke a key no longer used (DELETE /keys/{kid}) and create the new one, or reuse an agent; the server's operator sets the caps."},
	PreconditionFailed: {http.StatusPreconditionFailed, "Precondition failed",
		"The memory item changed since the revision the request's If-Match names: another write came first. Nothing was changed.",
		"Read the item again (GET /memory/items/{id}), apply the change to what it holds now, and send it with the new ETag in If-Match."},
	PreconditionRequired: {http.StatusPreconditionRequired, "Precondition required",
		"A change to a memory item must name the revision it was made against, in If-Match, so that two writers cannot overwrite each other unseen.",
		"Read the item (GET /memory/items/{id}) and send its ETag in If-Match."},
	ApprovalRequired: {http.StatusForbidden, "Approval required",
		"None of the handles may be released: each needs a fulfilled approval in this session (ask_before_use for a saved value that asks before use, authorize_payment for card data), or does not belong to this session.",
		"Raise an ask_before_use request naming the handles, wait until it is fulfilled, and materialise again."},
	ProtectedValueDetected: {http.StatusUnprocessableEntity, "Protected value detected",
		"The body holds one of the user's protected values (a secret or card field, a value saved to ask before use, or a value provided through a request), in some written form (spaced, full-width, base64, percent-encoded), anywhere but a memory item's own values: in event data, a request's context, a session's description, a label, a name, a member name; or a model request holds one where the LLM proxy cannot blank it (a member name, a number, the model, a role, a type or an id). Nothing was stored or forwarded: what agents write, and the model, never get values.",
		"Refer to the value by its handle instead of writing it, or leave it out."},
	RedactionUnavailable: {http.StatusServiceUnavailable, "Redaction unavailable",
		"The user's protected values could not be loaded, so the service cannot make sure none of them leaves: it refuses rather than forward or store unchecked text.",
		"Retry after Retry-After seconds."},
	LLMNotConfigured: {http.StatusServiceUnavailable, "LLM not configured",
		"This server has no upstream language model (LLM_UPSTREAM_URL is not set).",
		"Ask the operator to configure one, or call your model directly without the user's values."},
	UpstreamError: {http.StatusBadGateway, "Upstream error",
		"The upstream language model failed or answered with an error; its answer is not passed on.",
		"Retry later; the request was redacted and forwarded once."},
	UnsupportedMediaType: {http.StatusUnsupportedMediaType, "Unsupported media type",
		"The body's Content-Type or Content-Encoding is not one this route takes: traces come as OTLP/HTTP, protobuf (application/x-protobuf) or JSON (application/json), plain or gzip.",
		"Configure the exporter for http/protobuf or http/json, with gzip or no compression."},
	PayerNotConfigured: {http.StatusNotImplemented, "Payer not configured",
		"This server holds no payer key, so it cannot pay sellers.",
		"Ask the operator to set X402_PAYER_KEY (or X402_PAYER_KEY_FILE) and X402_PAYER_NETWORKS, or for Solana SOLANA_PAYER_KEY, SOLANA_PAYER_NETWORKS and SOLANA_RPC_URL; until then pay with a wallet of your own after a confirm request."},
	SpendingLimitExceeded: {http.StatusForbidden, "Spending limit exceeded",
		"The payment would pass a limit the person set for this agent: the most for one payment, or the day's or the month's budget (UTC).",
		"Read the limits and what was spent in GET /agent/me; ask the person to raise the limit, or wait for the next day or month."},
	AgentPaused: {http.StatusForbidden, "Agent paused",
		"The person paused this agent's payments.",
		"Ask the person to resume the agent (PUT /agents/{id}/spending-limits with paused false)."},
	HostNotAllowed: {http.StatusForbidden, "Host not allowed",
		"The person's host list for this agent does not let it pay this seller.",
		"Read the host list in GET /agent/me; ask the person to allow the host."},
	OriginNotAllowed: {http.StatusForbidden, "Origin not allowed",
		"A page of another origin called the MCP server from a browser: it answers pages of the service's own origin and of this machine only, so that no page can reach it through DNS rebinding.",
		"Call it from a program, which sends no Origin, or from a page on the service's own origin."},
	ManifestRefused: {http.StatusUnprocessableEntity, "Manifest refused",
		"The origin's discovery manifest (/.well-known/x402.json) could not be listed as a whole: it could not be fetched from a public address of the origin, it redirected elsewhere, it is too large, too deeply nested or not an x402 v2 manifest, or an ownership proof in it is invalid. The detail starts with the reason's code. Nothing of it was listed.",
		"Fix what the detail names and submit the origin again; the manifest is read from the origin itself, never through a redirect to another origin."},
	SubmissionRateLimited: {http.StatusTooManyRequests, "Submissions rate limited",
		"This user submitted more origins than its rate allows: each submission fetches a seller's manifest and probes every item in it, so every user has a bucket of them that refills at a steady rate, shared by every replica of the service.",
		"Wait the number of seconds in Retry-After and submit again; the origins already listed stay listed and are kept fresh without a new submission."},
	OfferNotPayable: {http.StatusUnprocessableEntity, "Offer not payable",
		"The seller did not answer with an x402 offer this server's payer can pay: no 402, an invalid offer, another scheme, network or asset, or an address it may not reach.",
		"Quote the seller (POST /tools/x402/quote) to see what it answers; pay another way, or choose another seller."},
	OfferNamesPayer: {http.StatusUnprocessableEntity, "Offer names the payer",
		"The seller's offer names one of this server's own payer addresses as its payee (payTo) or as the fee payer that signs and sends the transaction (Solana's extra.feePayer): paying it would send the money back to the payer, or hand the seller a transaction it could only sit on. Nothing was signed or counted.",
		"Do not pay this seller: its offer is malformed or hostile. Choose another seller, or tell the seller to name its own addresses."},
	Permit2ApprovalRequired: {http.StatusUnprocessableEntity, "Permit2 approval required",
		"The seller's offer is upto on an EVM network, which pays through Permit2, and this server's payer has not approved Permit2 on the offer's token for the offer's maximum: without it no settlement can move anything. The approval is a transaction of the payer's own, paid in gas, made once per token and chain; the server never sends it by itself.",
		"The operator approves Permit2 on the token once (README, Paying upto sellers); then ask again."},
	PriceAboveMaximum: {http.StatusUnprocessableEntity, "Price above maximum",
		"The seller asks more than the maximumDebit the agent allowed.",
		"Quote again and ask with a maximumDebit that covers the price, if the person would pay it."},
	OverrideRequired: {http.StatusUnprocessableEntity, "Override required",
		"The directory's verdict on this seller is avoid: a payment to it is approved only with an explicit override.",
		"Read the seller's record; approve with overrideVerdict true only if you trust it anyway."},
	PaymentNotSettled: {http.StatusConflict, "Payment not settled",
		"A delivery report is about a payment the seller was paid: this one is still waiting, executing or unknown, or it failed, so there is nothing delivered or not to report. Nothing was recorded.",
		"Wait until the payment settles (GET its payment, or wait on its request), then report; a failed payment moved no money and is never reported."},
	AlreadyReported: {http.StatusConflict, "Already reported",
		"This payment has its delivery report already, from its agent or its person: one report per payment, and the first stands.",
		"Nothing to do: the seller's record counts the first report."},
	ReportWindowClosed: {http.StatusConflict, "Report window closed",
		"A delivery report is taken within 30 days of its payment settling, while what came back is fresh in mind; this payment settled earlier. Nothing was recorded.",
		"Nothing to do: report a payment soon after it settles."},
}

// Lookup returns what the table says of code.
func Lookup(code string) (Kind, bool) {
	k, ok := kinds[code]
	return k, ok
}

// Status is the HTTP status of code; an unknown code is an internal error.
func Status(code string) int {
	if k, ok := kinds[code]; ok {
		return k.Status
	}
	return http.StatusInternalServerError
}

// Codes lists every code, sorted.
func Codes() []string {
	out := make([]string, 0, len(kinds))
	for c := range kinds {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// Slug is the code as its page's URL spells it, with hyphens.
func Slug(code string) string { return strings.ReplaceAll(code, "_", "-") }

// Type is the problem's type URI: the path of its human page.
func Type(code string) string { return "/problems/" + Slug(code) }
