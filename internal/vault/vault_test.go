package vault

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

const (
	k1 = "k1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
	k2 = "k2:Hx4dHBsaGRgXFhUUExIREA8ODQwLCgkIBwYFBAMCAQA="
)

func TestSealedValuesOpenOnlyWithTheirKeyAndAdditionalData(t *testing.T) {
	v, err := Parse(k1)
	if err != nil {
		t.Fatal(err)
	}
	id, nonce, ct, err := v.Seal([]byte("4111-1111"), []byte("u|r|card"))
	if err != nil || id != "k1" || len(nonce) != 12 || bytes.Contains(ct, []byte("4111")) {
		t.Fatalf("seal: %s %x %x %v", id, nonce, ct, err)
	}
	if got, err := v.Open(id, nonce, ct, []byte("u|r|card")); err != nil || string(got) != "4111-1111" {
		t.Fatalf("open: %q %v", got, err)
	}
	_, nonce2, ct2, _ := v.Seal([]byte("4111-1111"), []byte("u|r|card"))
	if bytes.Equal(nonce, nonce2) || bytes.Equal(ct, ct2) {
		t.Error("two seals of one value are alike: the nonce is not random")
	}
	tampered := bytes.Clone(ct)
	tampered[0] ^= 1
	for name, c := range map[string]struct {
		id         string
		nonce, ct  []byte
		additional string
	}{
		"another row":   {id, nonce, ct, "u|r|email"},
		"another user":  {id, nonce, ct, "v|r|card"},
		"tampered":      {id, nonce, tampered, "u|r|card"},
		"unknown key":   {"k9", nonce, ct, "u|r|card"},
		"short nonce":   {id, nonce[:4], ct, "u|r|card"},
		"another nonce": {id, nonce2, ct, "u|r|card"},
	} {
		if _, err := v.Open(c.id, c.nonce, c.ct, []byte(c.additional)); !errors.Is(err, ErrOpen) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestRotationSealsUnderTheFirstKeyAndOpensUnderAll(t *testing.T) {
	old, _ := Parse(k1)
	_, nonce, ct, _ := old.Seal([]byte("v"), []byte("a"))
	rotated, err := Parse(k2 + "," + k1)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := rotated.Open("k1", nonce, ct, []byte("a")); err != nil || string(got) != "v" {
		t.Fatalf("old value after rotation: %q %v", got, err)
	}
	if id, _, _, _ := rotated.Seal([]byte("v"), []byte("a")); id != "k2" {
		t.Errorf("sealed under %s", id)
	}
}

func TestParseRefusesMalformedKeys(t *testing.T) {
	for _, spec := range []string{"", "k1", ":AAEC", "k1:short", "k 1:" + strings.SplitN(k1, ":", 2)[1], k1 + "," + k1, "k1:!!!"} {
		if _, err := Parse(spec); err == nil {
			t.Errorf("%q was taken", spec)
		}
	}
}
