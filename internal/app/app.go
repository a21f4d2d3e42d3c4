// Package app gathers the domain's use cases, one service per resource, into the
// one value that every adapter is served from: the API (its MCP tools included) and
// the console hold the very same services, so that a rule of a use case runs
// whichever of them a caller comes through.
package app

import (
	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/captcha"
	"github.com/waystation/waystation/internal/memory"
	"github.com/waystation/waystation/internal/oauth"
	"github.com/waystation/waystation/internal/origin"
	"github.com/waystation/waystation/internal/payment"
	"github.com/waystation/waystation/internal/protect"
	"github.com/waystation/waystation/internal/request"
	"github.com/waystation/waystation/internal/session"
	"github.com/waystation/waystation/internal/trace"
	"github.com/waystation/waystation/internal/webhook"
)

// Services are the domain's use cases, each built once. An adapter serves what it
// is given and says, field by field, what it does without one.
type Services struct {
	// Auth authenticates keys and issues them, keeps agents and passkeys, and signs
	// people in.
	Auth *auth.Service
	// OAuth is the authorization server MCP hosts sign in with: its grants act as
	// agent keys. Without it hosts sign in with keys alone.
	OAuth *oauth.Service
	// Sessions are the agents' workflows, within their limits.
	Sessions *session.Service
	// Requests are what agents ask their people; the service seals what people
	// provide and tells of each approval left for the system to carry out.
	Requests *request.Service
	// Payments asks for and carries out payments to sellers, within the agents'
	// limits.
	Payments *payment.Service
	// Memory is the users' saved items.
	Memory *memory.Service
	// Captchas takes CAPTCHA tasks.
	Captchas *captcha.Service
	// Webhooks keeps the users' webhooks.
	Webhooks *webhook.Service
	// Guard is the rule for protected values in what agents send: it refuses,
	// records detections and pauses agents past their budget.
	Guard *protect.Service
	// Traces keeps and lists the spans agents export.
	Traces *trace.Service
	// Origins lists sellers from their own manifests.
	Origins *origin.Service
}
