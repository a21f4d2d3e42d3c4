package payment

import (
	"context"
	"errors"
	"time"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/request"
)

// Store keeps payments with the requests that approve them. Every change of a
// payment and of its request happens in one transaction.
type Store interface {
	// Limits are an agent's limits (DefaultLimits when its person set none) and its
	// spend in the UTC day and month of now.
	Limits(ctx context.Context, agentID string, now time.Time) (LimitsAndSpend, error)
	// SetLimits sets the limits of one of user p's agents.
	SetLimits(ctx context.Context, p auth.Principal, agentID string, l Limits) (LimitsAndSpend, error)
	// CreatePayment raises the authorize_payment request n and its payment in
	// session sessionID, after checking the agent's limits again under its lock.
	CreatePayment(ctx context.Context, p auth.Principal, sessionID string, pay Payment, n request.New, maxEvents int) (Payment, request.Request, error)
	// Payment is payment id of session sessionID if p may see it.
	Payment(ctx context.Context, p auth.Principal, sessionID, id string) (Payment, error)
	// PaymentOfRequest is the payment request requestID approves, if p may see it.
	PaymentOfRequest(ctx context.Context, p auth.Principal, requestID string) (Payment, error)
	// Ledger is user p's newest payments, at most limit, with what each was for.
	Ledger(ctx context.Context, p auth.Principal, limit int) ([]LedgerEntry, error)
	// DailySpend is what each of user p's agents spent on each UTC day from since
	// on, counted as Limits counts spend; days without spend are left out.
	DailySpend(ctx context.Context, p auth.Principal, since time.Time) ([]DaySpend, error)
	// Take moves one approved payment to executing (or takes back one whose
	// executor stopped more than lease ago), checking the agent's limits first: a
	// payment that would pass one fails with FailLimit instead. nil when none waits.
	Take(ctx context.Context, lease time.Duration) (*Payment, error)
	// Renew keeps an executing payment's lease while its executor works: false when
	// another executor took it meanwhile (its attempt is no longer p's), and p's
	// executor must record nothing.
	Renew(ctx context.Context, p Payment) (bool, error)
	// MarkSigned records, before the payment leaves, that it is signed with this
	// window (its validity, and on Solana its recent blockhash and slot): a crash
	// after it sends the same payment again, never another. ErrAgentStopped, and
	// nothing recorded, when the payment's agent is disabled or its payments paused.
	MarkSigned(ctx context.Context, id string, w Window) error
	// Finish records how payment p, executing (in p's attempt) or unknown, ended or
	// stands: settled or failed, fulfilling or failing its request with the receipt
	// and feeding the seller's stats (delivered or not); or unknown, its request
	// left executing and the seller's answer in o.Receipt.Response, if one came,
	// kept as the payment's Answer.
	// ErrTakenOver when p is no longer in the state it was read in.
	Finish(ctx context.Context, p Payment, o Outcome) error
	// TakeUnknown is one payment whose outcome is unknown and that was not checked
	// for the last `every`, marked checked now; nil when none is due.
	TakeUnknown(ctx context.Context, every time.Duration) (*Payment, error)
}

// ErrTakenOver is Finish's answer for a payment another executor (or the
// resolver) took over: the caller's outcome is not recorded.
var ErrTakenOver = errors.New("payment: taken over by another executor")
