package x402

import (
	"bytes"
	"crypto/ecdsa"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net/http"
	"strings"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/math"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/signer/core/apitypes"
)

// The headers a payment travels in: the client's signed payment (v1 X-PAYMENT, v2
// PAYMENT-SIGNATURE) and the seller's settlement answer (v1 X-PAYMENT-RESPONSE, v2
// PAYMENT-RESPONSE), each a base64-encoded JSON document.
const (
	HeaderPaymentV1    = "X-PAYMENT"
	HeaderPaymentV2    = "PAYMENT-SIGNATURE"
	HeaderSettlementV1 = "X-PAYMENT-RESPONSE"
	HeaderSettlementV2 = "PAYMENT-RESPONSE"
)

// Authorization is an EIP-3009 transferWithAuthorization: from pays value atomic units
// of the token to to, at a time strictly between validAfter and validBefore (unix
// seconds), once for its 32-byte nonce. Numbers are decimal strings, as x402 sends
// them.
type Authorization struct {
	From        string `json:"from"`
	To          string `json:"to"`
	Value       string `json:"value"`
	ValidAfter  string `json:"validAfter"`
	ValidBefore string `json:"validBefore"`
	Nonce       string `json:"nonce"`
}

// ExactPayload is the payload of the exact scheme on EVM networks: the authorization
// and its EIP-712 signature (65 bytes, hex, v of 27 or 28).
type ExactPayload struct {
	Signature     string        `json:"signature"`
	Authorization Authorization `json:"authorization"`
}

// Domain is the EIP-712 domain a token verifies transferWithAuthorization under: the
// token's name and version (the offer's extra), the chain and the token's address.
type Domain struct {
	Name     string
	Version  string
	ChainID  *big.Int
	Contract string
}

// ErrNotExactEVM is an offer the exact-on-EVM signer cannot pay.
var ErrNotExactEVM = errors.New("x402: not an exact offer on an EVM network with the token's EIP-712 name and version")

// DomainOf reads the EIP-712 domain of an exact offer on an EVM network.
func DomainOf(o Offer) (Domain, error) {
	network := NormalizeNetwork(o.Network)
	ref, ok := strings.CutPrefix(network, "eip155:")
	if o.Scheme != SchemeExact || !ok || !common.IsHexAddress(o.Asset) {
		return Domain{}, ErrNotExactEVM
	}
	chain, ok := new(big.Int).SetString(ref, 10)
	if !ok {
		return Domain{}, ErrNotExactEVM
	}
	var extra struct {
		Name    String `json:"name"`
		Version String `json:"version"`
	}
	if json.Unmarshal(o.Extra, &extra) != nil || extra.Name == "" || extra.Version == "" {
		return Domain{}, ErrNotExactEVM
	}
	return Domain{Name: string(extra.Name), Version: string(extra.Version), ChainID: chain,
		Contract: common.HexToAddress(o.Asset).Hex()}, nil
}

var transferWithAuthorization = apitypes.Types{
	"EIP712Domain": {
		{Name: "name", Type: "string"}, {Name: "version", Type: "string"},
		{Name: "chainId", Type: "uint256"}, {Name: "verifyingContract", Type: "address"},
	},
	"TransferWithAuthorization": {
		{Name: "from", Type: "address"}, {Name: "to", Type: "address"}, {Name: "value", Type: "uint256"},
		{Name: "validAfter", Type: "uint256"}, {Name: "validBefore", Type: "uint256"}, {Name: "nonce", Type: "bytes32"},
	},
}

// Digest is the EIP-712 hash of a under d: what the payer signs and the token checks.
func (d Domain) Digest(a Authorization) ([]byte, error) {
	if err := a.check(); err != nil {
		return nil, err
	}
	td := apitypes.TypedData{
		Types:       transferWithAuthorization,
		PrimaryType: "TransferWithAuthorization",
		Domain: apitypes.TypedDataDomain{Name: d.Name, Version: d.Version,
			ChainId: (*math.HexOrDecimal256)(d.ChainID), VerifyingContract: d.Contract},
		Message: apitypes.TypedDataMessage{"from": a.From, "to": a.To, "value": a.Value,
			"validAfter": a.ValidAfter, "validBefore": a.ValidBefore, "nonce": a.Nonce},
	}
	h, _, err := apitypes.TypedDataAndHash(td)
	return h, err
}

// check holds an authorization to the forms EIP-3009 takes: two addresses, three
// unsigned 256-bit decimal numbers and a 32-byte hex nonce.
func (a Authorization) check() error {
	if !common.IsHexAddress(a.From) || !common.IsHexAddress(a.To) {
		return errors.New("x402: authorization from and to must be EVM addresses")
	}
	for _, n := range []string{a.Value, a.ValidAfter, a.ValidBefore} {
		if _, ok := ReadAmount(json.RawMessage(`"` + n + `"`)); !ok || n == "" || strings.ContainsAny(n, "\" \\") {
			return errors.New("x402: authorization value, validAfter and validBefore must be decimal integers")
		}
	}
	if b, err := hex.DecodeString(strings.TrimPrefix(a.Nonce, "0x")); err != nil || len(b) != 32 || !strings.HasPrefix(a.Nonce, "0x") {
		return errors.New("x402: authorization nonce must be 32 bytes in 0x-prefixed hex")
	}
	return nil
}

// Signer holds the payer's secp256k1 key and signs exact payments with it. It never
// shows the key: printed or logged, it is its address.
type Signer struct {
	key     *ecdsa.PrivateKey
	address string
}

// ParseSigner reads a private key of 32 bytes in hex (0x-prefixed or not, white space
// around it ignored). Errors never quote the key.
func ParseSigner(hexKey string) (*Signer, error) {
	k, err := crypto.HexToECDSA(strings.TrimPrefix(strings.TrimSpace(hexKey), "0x"))
	if err != nil {
		return nil, errors.New("x402: the payer key is not 32 bytes of hex for a secp256k1 private key")
	}
	return &Signer{key: k, address: crypto.PubkeyToAddress(k.PublicKey).Hex()}, nil
}

// Address is the payer's address, in EIP-55 checksum form.
func (s *Signer) Address() string { return s.address }

func (s *Signer) String() string               { return "x402 payer " + s.address }
func (s *Signer) GoString() string             { return s.String() }
func (s *Signer) LogValue() slog.Value         { return slog.StringValue(s.String()) }
func (s *Signer) MarshalJSON() ([]byte, error) { return json.Marshal(s.address) }

// Sign signs a under d. a.From must be the signer's address. ECDSA signatures here
// are deterministic (RFC 6979): the same authorization always gives the same
// signature, so a payment signed again after a crash is the very same payment.
func (s *Signer) Sign(d Domain, a Authorization) (ExactPayload, error) {
	if !strings.EqualFold(a.From, s.address) {
		return ExactPayload{}, errors.New("x402: the authorization is not from the payer")
	}
	digest, err := d.Digest(a)
	if err != nil {
		return ExactPayload{}, err
	}
	sig, err := crypto.Sign(digest, s.key)
	if err != nil {
		return ExactPayload{}, err
	}
	sig[64] += 27
	return ExactPayload{Signature: "0x" + hex.EncodeToString(sig), Authorization: a}, nil
}

// Recover returns the address that signed p under d: what a facilitator compares
// with the authorization's from.
func Recover(d Domain, p ExactPayload) (string, error) {
	digest, err := d.Digest(p.Authorization)
	if err != nil {
		return "", err
	}
	sig, err := hex.DecodeString(strings.TrimPrefix(p.Signature, "0x"))
	if err != nil || len(sig) != 65 || (sig[64] != 27 && sig[64] != 28) {
		return "", errors.New("x402: the signature is not 65 bytes of hex with v 27 or 28")
	}
	sig[64] -= 27
	pub, err := crypto.SigToPub(digest, sig)
	if err != nil {
		return "", fmt.Errorf("x402: no signer recovers from the signature: %w", err)
	}
	return crypto.PubkeyToAddress(*pub).Hex(), nil
}

// Payment is the document a client sends to pay: v1 names the scheme and network, v2
// repeats the resource and the accepts entry it pays.
type Payment struct {
	Version  int             `json:"x402Version"`
	Scheme   string          `json:"scheme,omitempty"`
	Network  string          `json:"network,omitempty"`
	Resource json.RawMessage `json:"resource,omitempty"`
	Accepted json.RawMessage `json:"accepted,omitempty"`
	Payload  ExactPayload    `json:"payload"`
	// Transaction is the payload's transaction on Solana (ExactSVMPayload), read
	// beside the EVM fields; empty on EVM. A payment with one is written with the
	// Solana payload.
	Transaction string `json:"-"`
	// Upto is the payload of an upto payment on EVM, written instead of the exact
	// one when set.
	Upto *UptoPayload `json:"-"`
	// UptoSVM is the payload of an upto payment on Solana (its channel's open),
	// written instead of the exact one when set.
	UptoSVM *UptoSVMPayload `json:"-"`
}

// MarshalJSON writes the payment with its payload: the Solana one when it holds a
// transaction, else the EVM one.
func (p Payment) MarshalJSON() ([]byte, error) {
	type plain Payment
	if p.Upto != nil {
		return json.Marshal(struct {
			plain
			Payload UptoPayload `json:"payload"`
		}{plain(p), *p.Upto})
	}
	if p.UptoSVM != nil {
		return json.Marshal(struct {
			plain
			Payload UptoSVMPayload `json:"payload"`
		}{plain(p), *p.UptoSVM})
	}
	if p.Transaction == "" {
		return json.Marshal(plain(p))
	}
	return json.Marshal(struct {
		plain
		Payload ExactSVMPayload `json:"payload"`
	}{plain(p), ExactSVMPayload{Transaction: p.Transaction}})
}

// UnmarshalJSON reads a payment with either payload.
func (p *Payment) UnmarshalJSON(b []byte) error {
	type plain Payment
	var svm struct {
		plain
		Payload struct {
			ExactPayload
			Transaction String `json:"transaction"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(b, &svm); err != nil {
		return err
	}
	*p = Payment(svm.plain)
	p.Payload, p.Transaction = svm.Payload.ExactPayload, string(svm.Payload.Transaction)
	return nil
}

// PaymentHeader is the header paying o with p (an ExactPayload or UptoPayload on
// EVM, an ExactSVMPayload or UptoSVMPayload on Solana): X-PAYMENT for a v1 offer,
// PAYMENT-SIGNATURE for a v2 one. A payload it does not know, or one of another
// scheme or chain family than o's, is an error: the header would otherwise carry an
// empty payment, or one signed for terms the seller did not offer.
func (o Offer) PaymentHeader(p any) (name, value string, err error) {
	doc := Payment{Version: o.Version}
	var scheme, ns string
	switch p := p.(type) {
	case ExactPayload:
		doc.Payload, scheme, ns = p, SchemeExact, "eip155"
	case ExactSVMPayload:
		doc.Transaction, scheme, ns = p.Transaction, SchemeExact, "solana"
	case UptoPayload:
		doc.Upto, scheme, ns = &p, SchemeUpto, "eip155"
	case UptoSVMPayload:
		doc.UptoSVM, scheme, ns = &p, SchemeUpto, "solana"
	default:
		return "", "", fmt.Errorf("x402: no payment header for a %T payload", p)
	}
	if o.Scheme != scheme || Namespace(o.Network) != ns {
		return "", "", fmt.Errorf("x402: a %s payload on %s cannot pay a %s offer on %s", scheme, ns, o.Scheme, o.Network)
	}
	name = HeaderPaymentV2
	if o.Version == 1 {
		name, doc.Scheme, doc.Network = HeaderPaymentV1, o.Scheme, o.rawNetwork()
	} else {
		doc.Resource, doc.Accepted = o.ResourceRaw, o.Raw
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return "", "", fmt.Errorf("x402: payment header: %w", err)
	}
	return name, base64.StdEncoding.EncodeToString(b), nil
}

// rawNetwork is the network as the seller wrote it (a v1 name), else the CAIP-2 form.
func (o Offer) rawNetwork() string {
	var e struct {
		Network String `json:"network"`
	}
	if json.Unmarshal(o.Raw, &e) == nil && e.Network != "" {
		return string(e.Network)
	}
	return o.Network
}

// ReadPayment reads a client's payment from a request's headers, v2 first; ok is
// false when neither header is there.
func ReadPayment(h http.Header) (p Payment, ok bool, err error) {
	for _, name := range []string{HeaderPaymentV2, HeaderPaymentV1} {
		v := strings.TrimSpace(h.Get(name))
		if v == "" {
			continue
		}
		doc, err := decodeBase64(v)
		if err != nil {
			return p, true, fmt.Errorf("x402: %s: %w", name, err)
		}
		d := json.NewDecoder(bytes.NewReader(doc))
		if err := d.Decode(&p); err != nil {
			return p, true, fmt.Errorf("x402: %s is not a payment document", name)
		}
		if want := map[string]int{HeaderPaymentV2: 2, HeaderPaymentV1: 1}[name]; p.Version != want {
			return p, true, fmt.Errorf("x402: %s carries x402Version %d", name, p.Version)
		}
		return p, true, nil
	}
	return p, false, nil
}

// Settlement is the seller's word on a payment it took: whether it settled, the
// transaction, the network and the payer.
type Settlement struct {
	Success     bool   `json:"success"`
	ErrorReason string `json:"errorReason,omitempty"`
	Transaction string `json:"transaction"`
	Network     string `json:"network"`
	Payer       string `json:"payer,omitempty"`
	// Amount is what an upto settlement moved, in atomic units, as the seller says.
	Amount string `json:"amount,omitempty"`
}

// Header is the settlement answer's header for protocol version v.
func (s Settlement) Header(v int) (name, value string) {
	b, _ := json.Marshal(s)
	name = HeaderSettlementV2
	if v == 1 {
		name = HeaderSettlementV1
	}
	return name, base64.StdEncoding.EncodeToString(b)
}

// ReadSettlement reads the settlement answer of a paid response, v2 first; nil when
// there is none or it is unreadable.
func ReadSettlement(h http.Header) *Settlement {
	for _, name := range []string{HeaderSettlementV2, HeaderSettlementV1} {
		v := strings.TrimSpace(h.Get(name))
		if v == "" {
			continue
		}
		doc, err := decodeBase64(v)
		if err != nil {
			return nil
		}
		var s struct {
			Success     bool   `json:"success"`
			ErrorReason String `json:"errorReason"`
			Transaction String `json:"transaction"`
			TxHash      String `json:"txHash"` // what some v1 sellers write instead
			Network     String `json:"network"`
			Payer       String `json:"payer"`
			Amount      String `json:"amount"`
		}
		if json.Unmarshal(doc, &s) != nil {
			return nil
		}
		if s.Transaction == "" {
			s.Transaction = s.TxHash
		}
		return &Settlement{Success: s.Success, ErrorReason: Clean(string(s.ErrorReason), 200),
			Transaction: Clean(string(s.Transaction), 200), Network: Clean(string(s.Network), 100), Payer: Clean(string(s.Payer), 100),
			Amount: Clean(string(s.Amount), 80)}
	}
	return nil
}
