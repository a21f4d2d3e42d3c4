package webhook

import (
	"context"
	"fmt"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/memory"
	"github.com/waystation/waystation/internal/problem"
)

// Config is what a Service works with besides its store.
type Config struct {
	// Sealer seals a new webhook's secret; without it none is registered
	// (ErrNoSealer).
	Sealer Sealer
	// Guard is the rule deliveries are sent under, asked at registration to warn of
	// a URL whose host they will be refused on; nil warns of nothing.
	Guard Guard
}

// Service is the webhooks' use cases, the same for the API and the console.
type Service struct {
	store Store
	cfg   Config
}

// NewService is the webhooks' use cases over store.
func NewService(store Store, cfg Config) *Service { return &Service{store: store, cfg: cfg} }

// MaxPerUser is how many webhooks one user keeps at most: each event is sent to
// every one of them.
const MaxPerUser = 20

// ErrTooMany is a registration by a user who keeps MaxPerUser webhooks already.
var ErrTooMany = problem.New(problem.QuotaExceeded, fmt.Sprintf("A user keeps at most %d webhooks; delete one first.", MaxPerUser))

// ErrNoSealer is a registration on a server without a key to seal secrets under.
var ErrNoSealer = problem.New(problem.NotFound, "This server keeps no webhooks: it has no key to keep their secrets sealed.")

// Registered is a new webhook with its secret, to be shown this once, and what will
// go wrong with it.
type Registered struct {
	Webhook
	Secret   string
	Warnings []string
}

// Register makes a webhook of user p: a fresh id and secret, the secret sealed to the
// user and the webhook, and the webhook kept. The secret is answered to be shown once;
// it is never kept in the clear. A user keeps at most MaxPerUser webhooks
// (ErrTooMany). A URL every delivery will be refused on is kept all the same (the
// operator may allow its host later), with a warning.
func (s *Service) Register(ctx context.Context, p auth.Principal, n New) (Registered, error) {
	if err := n.Validate(); err != nil {
		return Registered{}, err
	}
	if s.cfg.Sealer == nil {
		return Registered{}, ErrNoSealer
	}
	id := memory.NewID()
	secret, raw, err := NewSecret()
	if err != nil {
		return Registered{}, err
	}
	keyID, nonce, ct, err := s.cfg.Sealer.Seal(raw, AAD(p.UserID, id))
	clear(raw)
	if err != nil {
		return Registered{}, err
	}
	w, err := s.store.CreateWebhook(ctx, p, id, n, Sealed{KeyID: keyID, Nonce: nonce, Ciphertext: ct}, MaxPerUser)
	if err != nil {
		return Registered{}, err
	}
	return Registered{Webhook: w, Secret: secret, Warnings: Warnings(ctx, s.cfg.Guard, w.URL)}, nil
}

// List is user p's webhooks.
func (s *Service) List(ctx context.Context, p auth.Principal) ([]Webhook, error) {
	return s.store.Webhooks(ctx, p)
}

// Delete stops user p's webhook id; ErrNotFound when p has none such.
func (s *Service) Delete(ctx context.Context, p auth.Principal, id string) error {
	return s.store.DeleteWebhook(ctx, p, id)
}

// Deliveries are the newest deliveries of user p's webhook id, at most limit.
func (s *Service) Deliveries(ctx context.Context, p auth.Principal, id string, limit int) ([]Delivery, error) {
	return s.store.Deliveries(ctx, p, id, limit)
}
