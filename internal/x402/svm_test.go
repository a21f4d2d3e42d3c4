package x402

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gagliardetto/solana-go"
	computebudget "github.com/gagliardetto/solana-go/programs/compute-budget"
	"github.com/gagliardetto/solana-go/programs/token"
)

const (
	svmMainnet  = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"
	usdcMainnet = "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"
	svmPayTo    = "2wKupLR9q6wXYppw8Gr2NvWxKBUqm4PPJKkQfoxHDBg4"
	svmFeePayer = "EwWqGE4ZFKLofuestmU4LDdK7XM1N4ALgdZccwYugwGd"
	svmHash     = "EkSnNWid2cvwEVnVx9aBqawnmiCNiDgp3gUdkDPTKN1N"
)

// testSolanaKey is a fixed keypair, as solana-keygen writes it.
func testSolanaKey() ed25519.PrivateKey { return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32)) }

func testSolanaSigner(t *testing.T) *SolanaSigner {
	t.Helper()
	s, err := ParseSolanaSigner(solana.PrivateKey(testSolanaKey()).String())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func svmOffer(version int, extra string) Offer {
	network := svmMainnet
	if version == 1 {
		network = "solana"
	}
	raw := fmt.Sprintf(`{"scheme":"exact","network":%q,"amount":"10000","asset":%q,"payTo":%q,"maxTimeoutSeconds":60,"extra":%s}`,
		network, usdcMainnet, svmPayTo, extra)
	return Offer{Version: version, Scheme: SchemeExact, Network: svmMainnet, Asset: usdcMainnet, PayTo: svmPayTo, Amount: "10000",
		MaxTimeoutSeconds: 60, Extra: json.RawMessage(extra), Raw: json.RawMessage(raw), Resource: "https://seller.example/x",
		ResourceRaw: json.RawMessage(`{"url":"https://seller.example/x"}`)}
}

func TestParseSolanaSigner(t *testing.T) {
	k := testSolanaKey()
	want := solana.PublicKeyFromBytes(k.Public().(ed25519.PublicKey)).String()
	ints := make([]int, len(k))
	for i, b := range k {
		ints[i] = int(b)
	}
	arr, _ := json.Marshal(ints)
	for _, in := range []string{solana.PrivateKey(k).String(), " " + solana.PrivateKey(k).String() + "\n", string(arr) + "\n"} {
		s, err := ParseSolanaSigner(in)
		if err != nil || s.Address() != want {
			t.Fatalf("ParseSolanaSigner = %v, %v; want %s", s, err, want)
		}
	}
	bad := append([]byte(nil), k...)
	bad[40] ^= 1 // a public half that is not the private half's
	for _, in := range []string{"", "not a key", svmPayTo, solana.PrivateKey(bad).String(), "[1,2,3]", string(arr[:len(arr)-1])} {
		if _, err := ParseSolanaSigner(in); err == nil {
			t.Errorf("ParseSolanaSigner(%.12q) took it", in)
		} else if strings.Contains(err.Error(), solana.PrivateKey(k).String()[:20]) {
			t.Errorf("the error quotes the key: %v", err)
		}
	}
}

func TestSolanaSignerNeverShowsTheKey(t *testing.T) {
	s := testSolanaSigner(t)
	secret := solana.PrivateKey(testSolanaKey()).String()
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("payer", "signer", s)
	j, _ := json.Marshal(s)
	for _, out := range []string{fmt.Sprint(s), fmt.Sprintf("%+v %#v", s, s), logged.String(), string(j)} {
		if strings.Contains(out, secret) || strings.Contains(out, secret[:16]) {
			t.Fatalf("the key shows: %s", out)
		}
		if !strings.Contains(out, s.Address()) {
			t.Fatalf("the address does not show: %s", out)
		}
	}
}

func TestSVMTermsRefusesBeforeSigning(t *testing.T) {
	good := svmOffer(2, `{"feePayer":"`+svmFeePayer+`"}`)
	if _, err := SVMTermsOf(good); err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func(*Offer){
		"fee payer not base58": func(o *Offer) { o.Extra = json.RawMessage(`{"feePayer":"0OIl` + svmFeePayer[4:] + `"}`) },
		"fee payer too short":  func(o *Offer) { o.Extra = json.RawMessage(`{"feePayer":"abc"}`) },
		"fee payer not string": func(o *Offer) { o.Extra = json.RawMessage(`{"feePayer":12}`) },
		"no fee payer":         func(o *Offer) { o.Extra = json.RawMessage(`{}`) },
		"no extra":             func(o *Offer) { o.Extra = nil },
		"mint not USDC":        func(o *Offer) { o.Asset = "So11111111111111111111111111111111111111112" },
		"devnet mint mainnet":  func(o *Offer) { o.Asset = "4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU" },
		"amount over 64 bits":  func(o *Offer) { o.Amount = "18446744073709551616" },
		"amount zero":          func(o *Offer) { o.Amount = "0" },
		"memo too long": func(o *Offer) {
			o.Extra = json.RawMessage(`{"feePayer":"` + svmFeePayer + `","memo":"` + strings.Repeat("m", 257) + `"}`)
		},
		"payee not key": func(o *Offer) { o.PayTo = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913" },
		"EVM network":   func(o *Offer) { o.Network = "eip155:8453" },
		"upto":          func(o *Offer) { o.Scheme = SchemeUpto },
	} {
		o := good
		mutate(&o)
		if _, err := SVMTermsOf(o); err == nil {
			t.Errorf("%s: SVMTermsOf took it", name)
		}
	}
}

// decodeSVM decodes a payment's transaction as a facilitator does.
func decodeSVM(t *testing.T, p ExactSVMPayload) *solana.Transaction {
	t.Helper()
	tx, err := solana.TransactionFromBase64(p.Transaction)
	if err != nil {
		t.Fatal(err)
	}
	return tx
}

func TestSolanaSignBuildsTheReferenceTransfer(t *testing.T) {
	s := testSolanaSigner(t)
	nonce := bytes.Repeat([]byte{0xab}, 32)
	for _, c := range []struct {
		extra, memo string
	}{
		{`{"feePayer":"` + svmFeePayer + `"}`, strings.Repeat("ab", 16)},
		{`{"feePayer":"` + svmFeePayer + `","memo":"pi_3abc123def456"}`, "pi_3abc123def456"},
	} {
		terms, err := SVMTermsOf(svmOffer(2, c.extra))
		if err != nil {
			t.Fatal(err)
		}
		p, err := s.Sign(terms, svmHash, nonce)
		if err != nil {
			t.Fatal(err)
		}
		tx := decodeSVM(t, p)
		m := tx.Message
		feePayer, payer := solana.MustPublicKeyFromBase58(svmFeePayer), solana.MustPublicKeyFromBase58(s.Address())
		if m.GetVersion() != solana.MessageVersionV0 || m.RecentBlockhash.String() != svmHash {
			t.Fatalf("version %v, blockhash %s", m.GetVersion(), m.RecentBlockhash)
		}
		// The fee payer signs first (and has not yet), the payer second; no one else.
		signers := m.Signers()
		if len(signers) != 2 || !signers[0].Equals(feePayer) || !signers[1].Equals(payer) || len(tx.Signatures) != 2 {
			t.Fatalf("signers %v, %d signatures", signers, len(tx.Signatures))
		}
		if !tx.Signatures[0].IsZero() {
			t.Fatal("the fee payer's signature is filled")
		}
		msg, _ := m.MarshalBinary()
		if !tx.Signatures[1].Verify(payer, msg) {
			t.Fatal("the payer's signature does not verify")
		}
		if len(m.Instructions) != 4 {
			t.Fatalf("%d instructions, want 4", len(m.Instructions))
		}
		program := func(i int) solana.PublicKey {
			id, err := tx.ResolveProgramIDIndex(m.Instructions[i].ProgramIDIndex)
			if err != nil {
				t.Fatal(err)
			}
			return id
		}
		accounts := func(i int) []*solana.AccountMeta {
			a, err := m.Instructions[i].ResolveInstructionAccounts(&m)
			if err != nil {
				t.Fatal(err)
			}
			return a
		}
		// 1 and 2: the compute unit limit and price, the reference client's.
		for i, want := range []any{&computebudget.SetComputeUnitLimit{Units: SVMComputeUnitLimit}, &computebudget.SetComputeUnitPrice{MicroLamports: SVMComputeUnitPrice}} {
			if !program(i).Equals(solana.ComputeBudget) {
				t.Fatalf("instruction %d is of %s", i, program(i))
			}
			ix, err := computebudget.DecodeInstruction(accounts(i), m.Instructions[i].Data)
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprintf("%+v", ix.Impl); got != fmt.Sprintf("%+v", want) {
				t.Fatalf("instruction %d is %s, want %+v", i, got, want)
			}
		}
		// 3: TransferChecked of 10000 USDC units (6 decimals) from the payer's ATA to
		// the payee's, authorised by the payer.
		if !program(2).Equals(solana.TokenProgramID) {
			t.Fatalf("the transfer is of %s", program(2))
		}
		ix, err := token.DecodeInstruction(accounts(2), m.Instructions[2].Data)
		if err != nil {
			t.Fatal(err)
		}
		tc, ok := ix.Impl.(*token.TransferChecked)
		if !ok || *tc.Amount != 10000 || *tc.Decimals != 6 {
			t.Fatalf("the transfer is %#v", ix.Impl)
		}
		mint := solana.MustPublicKeyFromBase58(usdcMainnet)
		src, _, _ := solana.FindAssociatedTokenAddress(payer, mint)
		dst, _, _ := solana.FindAssociatedTokenAddress(solana.MustPublicKeyFromBase58(svmPayTo), mint)
		if !tc.GetSourceAccount().PublicKey.Equals(src) || !tc.GetMintAccount().PublicKey.Equals(mint) ||
			!tc.GetDestinationAccount().PublicKey.Equals(dst) || !tc.GetOwnerAccount().PublicKey.Equals(payer) || !tc.GetOwnerAccount().IsSigner {
			t.Fatalf("the transfer's accounts are %v", accounts(2))
		}
		// 4: the memo, naming no account.
		if !program(3).Equals(solana.MemoProgramID) || len(m.Instructions[3].Accounts) != 0 || string(m.Instructions[3].Data) != c.memo {
			t.Fatalf("the memo is %q of %s with %d accounts", m.Instructions[3].Data, program(3), len(m.Instructions[3].Accounts))
		}
		// The fee payer is in no instruction's accounts.
		for i := range m.Instructions {
			for _, a := range accounts(i) {
				if a.PublicKey.Equals(feePayer) {
					t.Fatalf("the fee payer is an account of instruction %d", i)
				}
			}
		}
		// The same payment signed again is the very same transaction.
		again, err := s.Sign(terms, svmHash, nonce)
		if err != nil || again != p {
			t.Fatal("signing again gave another transaction")
		}
	}
	// Another nonce makes another transaction; so does another blockhash.
	terms, _ := SVMTermsOf(svmOffer(2, `{"feePayer":"`+svmFeePayer+`"}`))
	a, _ := s.Sign(terms, svmHash, bytes.Repeat([]byte{1}, 32))
	b, _ := s.Sign(terms, svmHash, bytes.Repeat([]byte{2}, 32))
	c, _ := s.Sign(terms, "11111111111111111111111111111111", bytes.Repeat([]byte{2}, 32))
	if a == b || b == c {
		t.Fatal("different nonces or blockhashes gave the same transaction")
	}
	// A fee payer that is the payer itself, a bad blockhash, a short nonce: refused.
	own := terms
	own.FeePayer = solana.MustPublicKeyFromBase58(s.Address())
	if _, err := s.Sign(own, svmHash, bytes.Repeat([]byte{1}, 32)); err == nil {
		t.Error("signed with the payer as fee payer")
	}
	if _, err := s.Sign(terms, "not a hash", bytes.Repeat([]byte{1}, 32)); err == nil {
		t.Error("signed with a bad blockhash")
	}
	if _, err := s.Sign(terms, svmHash, []byte{1}); err == nil {
		t.Error("signed with a short nonce")
	}
}

func TestSVMPaymentHeader(t *testing.T) {
	s := testSolanaSigner(t)
	for _, v := range []int{1, 2} {
		o := svmOffer(v, `{"feePayer":"`+svmFeePayer+`"}`)
		terms, _ := SVMTermsOf(o)
		p, err := s.Sign(terms, svmHash, bytes.Repeat([]byte{3}, 32))
		if err != nil {
			t.Fatal(err)
		}
		name, value, err := o.PaymentHeader(p)
		if err != nil {
			t.Fatal(err)
		}
		h := http.Header{}
		h.Set(name, value)
		got, ok, err := ReadPayment(h)
		if !ok || err != nil || got.Transaction != p.Transaction || got.Version != v {
			t.Fatalf("v%d: ReadPayment = %+v, %v, %v", v, got, ok, err)
		}
		doc, _ := base64.StdEncoding.DecodeString(value)
		var d map[string]json.RawMessage
		json.Unmarshal(doc, &d)
		switch v {
		case 1:
			if name != HeaderPaymentV1 || string(d["network"]) != `"solana"` || string(d["scheme"]) != `"exact"` {
				t.Fatalf("v1: %s %s", name, doc)
			}
		case 2:
			if name != HeaderPaymentV2 || !bytes.Equal(d["accepted"], o.Raw) || d["resource"] == nil {
				t.Fatalf("v2: %s %s", name, doc)
			}
		}
		if string(d["payload"]) != `{"transaction":"`+p.Transaction+`"}` {
			t.Fatalf("payload %s", d["payload"])
		}
	}
}

func TestSolanaRPC(t *testing.T) {
	var got map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewDecoder(r.Body).Decode(&got)
		if strings.Contains(r.URL.RawQuery, "broken") {
			w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{"value":{"blockhash":"nope"}}}`))
			return
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"result":{"context":{"slot":1},"value":{"blockhash":%q,"lastValidBlockHeight":150}}}`, svmHash)
	}))
	defer srv.Close()
	r, err := ParseSolanaRPC(srv.URL+"/?api-key=secret", []string{"solana", "solana-devnet"}, nil)
	if err != nil || !r.Has(svmMainnet) || !r.Has("solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1") || r.Has("eip155:8453") {
		t.Fatalf("ParseSolanaRPC = %v, %v", r.Networks(), err)
	}
	h, err := r.LatestBlockhash(context.Background(), "solana")
	if err != nil || h != svmHash || got["method"] != "getLatestBlockhash" {
		t.Fatalf("LatestBlockhash = %q, %v (%v)", h, err, got)
	}
	if _, err := r.LatestBlockhash(context.Background(), "solana:4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z"); err != ErrNoChain {
		t.Fatalf("an unlisted network: %v", err)
	}
	pairs, err := ParseSolanaRPC("solana-devnet="+srv.URL+"/?broken", nil, nil)
	if err != nil || !pairs.Has("solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1") || pairs.Has(svmMainnet) {
		t.Fatalf("pairs: %v, %v", pairs.Networks(), err)
	}
	if _, err := pairs.LatestBlockhash(context.Background(), "solana-devnet"); err == nil {
		t.Fatal("took a blockhash that is not one")
	}
	for _, bad := range []string{"ftp://x", "eip155:8453=http://x", "solana=notaurl", "https://"} {
		if _, err := ParseSolanaRPC(bad, []string{"solana"}, nil); err == nil {
			t.Errorf("ParseSolanaRPC(%q) took it", bad)
		}
	}
	// An endpoint that cannot be reached: the error does not quote its URL.
	down, _ := ParseSolanaRPC("http://127.0.0.1:1/?api-key=secret", []string{"solana"}, nil)
	if _, err := down.LatestBlockhash(context.Background(), "solana"); err == nil || strings.Contains(err.Error(), "secret") {
		t.Fatalf("unreachable: %v", err)
	}
}

// TestSolanaLandingFindsThePayersOwnTransaction: a payment is found landed only by a
// transaction carrying the payer's own signature, among those with its memo; one that
// landed and failed, or none with its blockhash expired, can never land.
func TestSolanaLandingFindsThePayersOwnTransaction(t *testing.T) {
	s := testSolanaSigner(t)
	terms, err := SVMTermsOf(svmOffer(2, `{"feePayer":"`+svmFeePayer+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	sign := func(nonce byte) (ExactSVMPayload, string) {
		p, err := s.Sign(terms, svmHash, bytes.Repeat([]byte{nonce}, 32))
		if err != nil {
			t.Fatal(err)
		}
		// The fee payer signs first, as the seller's facilitator does.
		tx := decodeSVM(t, p)
		tx.Signatures[0] = solana.SignatureFromBytes(bytes.Repeat([]byte{nonce + 1}, 64))
		b64, err := tx.ToBase64()
		if err != nil {
			t.Fatal(err)
		}
		return p, b64
	}
	ours, oursLanded := sign(0xab)
	_, other := sign(0xcd) // another payment of the same terms, with the same seller memo below
	var landed []string
	valid, failed, busy := true, false, 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var call struct {
			Method string `json:"method"`
			Params []any  `json:"params"`
		}
		json.NewDecoder(r.Body).Decode(&call)
		var result any
		switch call.Method {
		case "isBlockhashValid":
			result = map[string]any{"context": map[string]int{"slot": 1}, "value": valid}
		case "getSignaturesForAddress":
			var out []map[string]any
			for _, b64 := range landed {
				tx, _ := solana.TransactionFromBase64(b64)
				memo := "[32] " + strings.Repeat("ab", 16) // both carry our memo: only the signature tells them apart
				out = append(out, map[string]any{"signature": tx.Signatures[0].String(), "memo": memo, "err": nil})
			}
			out = append(out, map[string]any{"signature": "5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW", "memo": nil, "err": nil})
			for range busy {
				out = append(out, map[string]any{"signature": "5VERv8NMvzbJMEkV8xnrLkEaWRtSz9CosKDYjCJjBRnbJLgp8uirBgmQpjKhoR4tjF3ZpRzrFmBV6UjKdiSZkQUW", "memo": "[4] else", "err": nil})
			}
			result = out
		case "getTransaction":
			for _, b64 := range landed {
				tx, _ := solana.TransactionFromBase64(b64)
				if tx.Signatures[0].String() == call.Params[0] {
					var errField any
					if failed {
						errField = map[string]any{"InstructionError": []any{2, "InsufficientFunds"}}
					}
					result = map[string]any{"slot": 2, "meta": map[string]any{"err": errField}, "transaction": []string{b64, "base64"}}
				}
			}
		default:
			t.Errorf("unexpected call %s", call.Method)
		}
		json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": 1, "result": result})
	}))
	defer srv.Close()
	r, err := ParseSolanaRPC(srv.URL, []string{"solana"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	look := func(what string, want Landing) {
		t.Helper()
		got, err := r.Landing(context.Background(), "solana", ours)
		if err != nil || got != want {
			t.Errorf("%s: %+v %v, want %+v", what, got, err, want)
		}
	}
	look("nothing landed", Landing{})
	landed = []string{other}
	look("another payment with the same memo landed", Landing{})
	valid = false
	look("the blockhash expired", Landing{Expired: true})
	busy = 100
	look("the blockhash expired, and the payer so busy that the list is full", Landing{})
	busy = 0
	landed = []string{other, oursLanded}
	fee := solana.SignatureFromBytes(bytes.Repeat([]byte{0xac}, 64)).String()
	look("landed", Landing{Landed: true, Transaction: fee})
	failed = true
	look("landed and failed", Landing{Expired: true})
	if _, err := r.Landing(context.Background(), "solana-devnet", ours); err != ErrNoChain {
		t.Errorf("an unlisted network: %v", err)
	}
}
