// Package vault seals values with AES-256-GCM under server keys that carry an id, so
// that keys can be rotated: new values are sealed under the current key, and values
// sealed under an older key still open while that key is configured.
package vault

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// ErrOpen is a ciphertext that does not open: wrong key, wrong additional data
// (a value moved to another row), or tampering.
var ErrOpen = errors.New("vault: cannot open value")

// Vault holds the keys.
type Vault struct {
	current string
	aeads   map[string]cipher.AEAD
}

var keyIDPattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,32}$`)

// Parse reads keys written as "id:base64key[,id:base64key...]", each key 32 bytes in
// standard or URL base64; the first is the current key.
func Parse(spec string) (*Vault, error) {
	v := &Vault{aeads: map[string]cipher.AEAD{}}
	for i, part := range strings.Split(spec, ",") {
		id, enc, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok || !keyIDPattern.MatchString(id) {
			return nil, fmt.Errorf("vault: key %d must be written id:base64 with an id of letters, digits, _ or -", i+1)
		}
		key, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			key, err = base64.RawURLEncoding.DecodeString(strings.TrimRight(enc, "="))
		}
		if err != nil || len(key) != 32 {
			return nil, fmt.Errorf("vault: key %q must be 32 bytes in base64", id)
		}
		if _, dup := v.aeads[id]; dup {
			return nil, fmt.Errorf("vault: key id %q given twice", id)
		}
		block, _ := aes.NewCipher(key)
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		v.aeads[id] = aead
		if i == 0 {
			v.current = id
		}
	}
	return v, nil
}

// Current is the id of the key new values are sealed under.
func (v *Vault) Current() string { return v.current }

// Seal encrypts plaintext bound to aad under the current key with a random nonce.
func (v *Vault) Seal(plaintext, aad []byte) (keyID string, nonce, ciphertext []byte, err error) {
	aead := v.aeads[v.current]
	nonce = make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", nil, nil, err
	}
	return v.current, nonce, aead.Seal(nil, nonce, plaintext, aad), nil
}

// Open decrypts a value sealed by Seal with the same key id and aad.
func (v *Vault) Open(keyID string, nonce, ciphertext, aad []byte) ([]byte, error) {
	aead, ok := v.aeads[keyID]
	if !ok || len(nonce) != aead.NonceSize() {
		return nil, ErrOpen
	}
	out, err := aead.Open(nil, nonce, ciphertext, aad)
	if err != nil {
		return nil, ErrOpen
	}
	return out, nil
}
