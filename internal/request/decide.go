package request

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"
	"strings"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/memory"
)

// Sealer encrypts a value bound to additional data under the server's current key.
type Sealer interface {
	Seal(plaintext, aad []byte) (keyID string, nonce, ciphertext []byte, err error)
}

// Decider applies users' decisions, from the API and from the approval page alike.
type Decider struct {
	Store  Store
	Sealer Sealer
	// Approved, when set, hears of every approval left for the system to carry
	// out (a payment), once it is stored.
	Approved func(Request)
}

// ErrNoSealer is a provide_missing approval on a server without a key to seal values.
var ErrNoSealer = errors.New("request: no key to seal provided values")

// Decide answers request id (in session sessionID, or any when "") for user p. The
// values of a provide_missing approval are sealed here, each bound to its user,
// request and field, and only handles reach the artifact.
func (d Decider) Decide(ctx context.Context, p auth.Principal, sessionID, id string, dec Decision) (Request, error) {
	r, err := d.Store.Request(ctx, p, sessionID, id)
	if err != nil {
		return r, err
	}
	switch {
	case r.Status == StatusExpired:
		return r, ErrExpired
	case r.Status != StatusWaitingUser:
		return r, ErrInvalidTransition
	}
	if err := r.Check(dec); err != nil {
		return r, err
	}
	o := Outcome{Approved: dec.Decision == Approve}
	if !o.Approved {
		return d.Store.Decide(ctx, p, id, o)
	}
	switch r.Kind {
	case KindAuthorizePayment:
		// The service pays, then fulfils the request with the receipt.
		o.Pending, o.Override = true, dec.OverrideVerdict
		out, err := d.Store.Decide(ctx, p, id, o)
		if err == nil && d.Approved != nil {
			d.Approved(out)
		}
		return out, err
	case KindCaptcha:
		// The answer goes to the task, for the agent; it is no value of the person's.
		v := strings.TrimSpace(dec.Values["solution"])
		o.Solution = &v
	case KindChoice:
		o.Artifact = &Artifact{Type: ArtifactChoice, Choice: &Choice{SelectedOptionID: dec.SelectedChoiceID}}
	case KindChooseCandidate:
		// The chosen saved value, covered for materialize.
		o.Artifact = &Artifact{Type: ArtifactReference, Reference: &Reference{
			Handles: []Handle{{FieldKey: r.Fields[0].Key, Handle: dec.SelectedChoiceID}}}}
	case KindProvideMissing:
		if d.Sealer == nil {
			return r, ErrNoSealer
		}
		ref := &Reference{Handles: make([]Handle, 0, len(r.Fields))}
		for _, f := range r.Fields {
			keyID, nonce, ct, err := d.Sealer.Seal([]byte(dec.Values[f.Key]), ValueAAD(r.UserID, r.ID, f.Key))
			if err != nil {
				return r, err
			}
			h, err := NewHandle()
			if err != nil {
				return r, err
			}
			o.Values = append(o.Values, Sealed{FieldKey: f.Key, Handle: h, KeyID: keyID, Nonce: nonce, Ciphertext: ct})
			ref.Handles = append(ref.Handles, Handle{FieldKey: f.Key, Handle: h})
		}
		o.Artifact = &Artifact{Type: ArtifactReference, Reference: ref}
		if dec.Save {
			item, err := r.saved(d.Sealer, dec)
			if err != nil {
				return r, err
			}
			o.Save = &item
		}
	case KindAskBeforeUse:
		if ref := r.HandlesRef(); ref != nil {
			o.Artifact = &Artifact{Type: ArtifactReference, Reference: ref}
			break
		}
		fallthrough
	default: // confirm, or ask_before_use without handles
		o.Artifact = &Artifact{Type: ArtifactConfirmation, Confirmation: &Confirmation{Confirmed: true, ScopeHash: r.ScopeHash()}}
	}
	return d.Store.Decide(ctx, p, id, o)
}

// HandlesRef is the reference to the saved values an ask_before_use request names,
// nil when it names none.
func (r Request) HandlesRef() *Reference {
	var ref *Reference
	for _, f := range r.Fields {
		if f.Handle != "" {
			if ref == nil {
				ref = &Reference{}
			}
			ref.Handles = append(ref.Handles, Handle{FieldKey: f.Key, Handle: f.Handle})
		}
	}
	return ref
}

// saved is the memory item a provide_missing approval's values are kept as: for the
// site of the request's URL (every site without one), named after the merchant.
func (r Request) saved(s Sealer, dec Decision) (memory.Stored, error) {
	n := memory.New{Label: r.Context.MerchantName, AskBeforeUse: dec.AskBeforeUse}
	if r.Context.URL != "" {
		if host, err := memory.HostOf(r.Context.URL); err == nil {
			n.Hosts = []string{host}
			if n.Label == "" {
				n.Label = host
			}
		}
	}
	if n.Label == "" {
		n.Label = "Saved from a request"
	}
	for _, f := range r.Fields {
		v := dec.Values[f.Key]
		n.Fields = append(n.Fields, memory.FieldInput{FieldRef: f.Key, Label: f.Label, ValueType: f.Type, Secret: f.Secret, Value: &v})
	}
	if err := n.Validate(); err != nil {
		return memory.Stored{}, err
	}
	return memory.Build(s, r.UserID, memory.ByRequest, n)
}

var handleEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewHandle makes an opaque handle of 160 random bits.
func NewHandle() (string, error) {
	var b [20]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "wh_" + handleEncoding.EncodeToString(b[:]), nil
}
