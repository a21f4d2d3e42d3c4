// Package passkeytest is a software authenticator for tests: it answers WebAuthn
// creation and request options (the JSON a relying party sends a browser) as a
// platform authenticator would, with a P-256 key, "none" attestation, user presence
// and verification, and a signature counter. It lets tests run the server's passkey
// ceremonies without a browser; the browser tests use Chromium's own.
package passkeytest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"

	"github.com/fxamacker/cbor/v2"
)

// Authenticator holds passkeys, one per relying party and user handle.
type Authenticator struct {
	// Origin is what the client data says the ceremony ran at.
	Origin string
	// Counter is the signature counter the next assertion carries (after adding one);
	// a test sets it back to play a cloned authenticator.
	Counter uint32
	creds   []*credential
}

type credential struct {
	id   []byte
	rpID string
	user []byte
	key  *ecdsa.PrivateKey
}

// New is an authenticator at origin.
func New(origin string) *Authenticator { return &Authenticator{Origin: origin} }

var b64 = base64.RawURLEncoding

const (
	flagUP = 0x01
	flagUV = 0x04
	flagAT = 0x40
)

type creationOptions struct {
	PublicKey struct {
		Challenge string `json:"challenge"`
		RP        struct {
			ID string `json:"id"`
		} `json:"rp"`
		User struct {
			ID string `json:"id"`
		} `json:"user"`
		Exclude []struct {
			ID string `json:"id"`
		} `json:"excludeCredentials"`
	} `json:"publicKey"`
}

type requestOptions struct {
	PublicKey struct {
		Challenge string `json:"challenge"`
		RPID      string `json:"rpId"`
		Allow     []struct {
			ID string `json:"id"`
		} `json:"allowCredentials"`
	} `json:"publicKey"`
}

func clientData(kind, challenge, origin string) []byte {
	b, _ := json.Marshal(map[string]any{"type": kind, "challenge": challenge, "origin": origin, "crossOrigin": false})
	return b
}

// Create makes a passkey for the options and answers them as
// PublicKeyCredential.toJSON() would.
func (a *Authenticator) Create(options []byte) ([]byte, error) {
	var o creationOptions
	if err := json.Unmarshal(options, &o); err != nil {
		return nil, err
	}
	user, err := b64.DecodeString(o.PublicKey.User.ID)
	if err != nil {
		return nil, fmt.Errorf("passkeytest: user id: %w", err)
	}
	for _, ex := range o.PublicKey.Exclude {
		for _, c := range a.creds {
			if b64.EncodeToString(c.id) == ex.ID {
				return nil, fmt.Errorf("passkeytest: InvalidStateError: this authenticator holds an excluded credential")
			}
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	c := &credential{id: make([]byte, 32), rpID: o.PublicKey.RP.ID, user: user, key: key}
	rand.Read(c.id)
	pub, err := key.PublicKey.Bytes() // 0x04 || X || Y
	if err != nil {
		return nil, err
	}
	cose, err := cbor.Marshal(map[int]any{1: 2, 3: -7, -1: 1, -2: pub[1:33], -3: pub[33:65]})
	if err != nil {
		return nil, err
	}
	rpHash := sha256.Sum256([]byte(c.rpID))
	auth := append(rpHash[:], flagUP|flagUV|flagAT, 0, 0, 0, 0)
	auth = append(auth, make([]byte, 16)...) // AAGUID
	auth = binary.BigEndian.AppendUint16(auth, uint16(len(c.id)))
	auth = append(auth, c.id...)
	auth = append(auth, cose...)
	att, err := cbor.Marshal(map[string]any{"fmt": "none", "attStmt": map[string]any{}, "authData": auth})
	if err != nil {
		return nil, err
	}
	a.creds = append(a.creds, c)
	return json.Marshal(map[string]any{
		"id": b64.EncodeToString(c.id), "rawId": b64.EncodeToString(c.id), "type": "public-key",
		"authenticatorAttachment": "platform", "clientExtensionResults": map[string]any{},
		"response": map[string]any{
			"clientDataJSON":    b64.EncodeToString(clientData("webauthn.create", o.PublicKey.Challenge, a.Origin)),
			"attestationObject": b64.EncodeToString(att),
			"transports":        []string{"internal"},
		},
	})
}

// Get signs the options' challenge with the newest passkey it holds for their
// relying party (and, when they name credentials, one of those).
func (a *Authenticator) Get(options []byte) ([]byte, error) {
	var o requestOptions
	if err := json.Unmarshal(options, &o); err != nil {
		return nil, err
	}
	var c *credential
	for i := len(a.creds) - 1; i >= 0 && c == nil; i-- {
		if a.creds[i].rpID != o.PublicKey.RPID {
			continue
		}
		if len(o.PublicKey.Allow) == 0 {
			c = a.creds[i]
		}
		for _, al := range o.PublicKey.Allow {
			if al.ID == b64.EncodeToString(a.creds[i].id) {
				c = a.creds[i]
			}
		}
	}
	if c == nil {
		return nil, fmt.Errorf("passkeytest: NotAllowedError: no passkey for %q", o.PublicKey.RPID)
	}
	a.Counter++
	rpHash := sha256.Sum256([]byte(c.rpID))
	auth := binary.BigEndian.AppendUint32(append(rpHash[:], flagUP|flagUV), a.Counter)
	cd := clientData("webauthn.get", o.PublicKey.Challenge, a.Origin)
	cdHash := sha256.Sum256(cd)
	digest := sha256.Sum256(append(append([]byte{}, auth...), cdHash[:]...))
	sig, err := ecdsa.SignASN1(rand.Reader, c.key, digest[:])
	if err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{
		"id": b64.EncodeToString(c.id), "rawId": b64.EncodeToString(c.id), "type": "public-key",
		"authenticatorAttachment": "platform", "clientExtensionResults": map[string]any{},
		"response": map[string]any{
			"clientDataJSON":    b64.EncodeToString(cd),
			"authenticatorData": b64.EncodeToString(auth),
			"signature":         b64.EncodeToString(sig),
			"userHandle":        b64.EncodeToString(c.user),
		},
	})
}
