package webhook

import (
	"context"
	"time"

	"github.com/waystation/waystation/internal/auth"
)

// Store keeps webhooks and their deliveries.
type Store interface {
	// CreateWebhook keeps user p's new webhook id with its sealed secret, unless p
	// already keeps max webhooks: then it keeps nothing and answers ErrTooMany. The
	// count and the insert are one transaction, so that registrations at once never
	// pass max together.
	CreateWebhook(ctx context.Context, p auth.Principal, id string, n New, secret Sealed, max int) (Webhook, error)
	Webhooks(ctx context.Context, p auth.Principal) ([]Webhook, error)
	DeleteWebhook(ctx context.Context, p auth.Principal, id string) error
	// Deliveries are webhook id's newest deliveries, at most limit.
	Deliveries(ctx context.Context, p auth.Principal, id string, limit int) ([]Delivery, error)
	// DueDeliveries takes up to limit pending deliveries that are due, leaving them
	// to this deliverer for lease.
	DueDeliveries(ctx context.Context, limit int, lease time.Duration) ([]Delivery, error)
	// Delivered records an attempt's outcome: delivered, or pending again at next,
	// or failed when next is nil.
	Attempted(ctx context.Context, id int64, status string, httpStatus int, errText string, next *time.Time) error
}
