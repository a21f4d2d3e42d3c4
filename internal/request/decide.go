package request

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"errors"

	"github.com/waystation/waystation/internal/auth"
)

// Sealer encrypts a value bound to additional data under the server's current key.
type Sealer interface {
	Seal(plaintext, aad []byte) (keyID string, nonce, ciphertext []byte, err error)
}

// Decider applies users' decisions, from the API and from the approval page alike.
type Decider struct {
	Store  Store
	Sealer Sealer
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
	case KindChoice:
		o.Artifact = &Artifact{Type: ArtifactChoice, Choice: &Choice{SelectedOptionID: dec.SelectedChoiceID}}
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
	default: // confirm, ask_before_use
		o.Artifact = &Artifact{Type: ArtifactConfirmation, Confirmation: &Confirmation{Confirmed: true, ScopeHash: r.ScopeHash()}}
	}
	return d.Store.Decide(ctx, p, id, o)
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
