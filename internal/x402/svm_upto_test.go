package x402

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gagliardetto/solana-go"
)

const (
	svmAuthorizer = "9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM"
	svmSlot       = 345678901
)

// svmUptoOffer is an upto offer on Solana with extra (a JSON object) and a ceiling
// of 250000 units.
func svmUptoOffer(extra string) Offer {
	raw := fmt.Sprintf(`{"scheme":"upto","network":%q,"amount":"250000","asset":%q,"payTo":%q,"maxTimeoutSeconds":300,"extra":%s}`,
		svmMainnet, usdcMainnet, svmPayTo, extra)
	return Offer{Version: 2, Scheme: SchemeUpto, Network: svmMainnet, Asset: usdcMainnet, PayTo: svmPayTo, Ceiling: "250000",
		MaxTimeoutSeconds: 300, Extra: json.RawMessage(extra), Raw: json.RawMessage(raw), Resource: "https://seller.example/x",
		ResourceRaw: json.RawMessage(`{"url":"https://seller.example/x"}`)}
}

// svmUptoExtra is a reference upto seller's extra with the fields in more.
func svmUptoExtra(more string) string {
	e := `{"feePayer":"` + svmFeePayer + `","receiverAuthorizer":"` + svmAuthorizer + `","withdrawDelay":900`
	if more != "" {
		e += "," + more
	}
	return e + "}"
}

// A seller's offer that would have the payer deposit more than its ceiling, pay
// another recipient or mint, hold the deposit for long, or sign for the payer
// itself is refused before anything is signed.
func TestSVMUptoTermsRefuseBeforeSigning(t *testing.T) {
	for name, o := range map[string]Offer{
		"exact":                    svmOffer(2, `{"feePayer":"`+svmFeePayer+`"}`),
		"unknown mint":             func() Offer { o := svmUptoOffer(svmUptoExtra("")); o.Asset = svmPayTo; return o }(),
		"no ceiling":               func() Offer { o := svmUptoOffer(svmUptoExtra("")); o.Ceiling = ""; return o }(),
		"zero ceiling":             func() Offer { o := svmUptoOffer(svmUptoExtra("")); o.Ceiling = "0"; return o }(),
		"ceiling over 64 bits":     func() Offer { o := svmUptoOffer(svmUptoExtra("")); o.Ceiling = "18446744073709551616"; return o }(),
		"ceiling not canonical":    func() Offer { o := svmUptoOffer(svmUptoExtra("")); o.Ceiling = "0250000"; return o }(),
		"no fee payer":             svmUptoOffer(`{"receiverAuthorizer":"` + svmAuthorizer + `","withdrawDelay":900}`),
		"no authorizer":            svmUptoOffer(`{"feePayer":"` + svmFeePayer + `","withdrawDelay":900}`),
		"no grace period":          svmUptoOffer(`{"feePayer":"` + svmFeePayer + `","receiverAuthorizer":"` + svmAuthorizer + `"}`),
		"grace period of a year":   svmUptoOffer(`{"feePayer":"` + svmFeePayer + `","receiverAuthorizer":"` + svmAuthorizer + `","withdrawDelay":31536000}`),
		"grace period in a string": svmUptoOffer(`{"feePayer":"` + svmFeePayer + `","receiverAuthorizer":"` + svmAuthorizer + `","withdrawDelay":"900"}`),
		"token-2022":               svmUptoOffer(svmUptoExtra(`"tokenProgram":"TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb"`)),
		"long memo":                svmUptoOffer(svmUptoExtra(`"memo":"` + strings.Repeat("m", 257) + `"`)),
	} {
		if _, err := SVMUptoTermsOf(o); !errors.Is(err, ErrNotUptoSVM) {
			t.Errorf("%s: %v, want ErrNotUptoSVM", name, err)
		}
	}
	s := testSolanaSigner(t)
	for name, extra := range map[string]string{
		"fee payer":  `{"feePayer":"` + s.Address() + `","receiverAuthorizer":"` + svmAuthorizer + `","withdrawDelay":900}`,
		"authorizer": `{"feePayer":"` + svmFeePayer + `","receiverAuthorizer":"` + s.Address() + `","withdrawDelay":900}`,
	} {
		terms, err := SVMUptoTermsOf(svmUptoOffer(extra))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.SignUptoOpen(terms, svmHash, svmSlot, 1_700_000_000, 1_700_000_300, bytes.Repeat([]byte{1}, 32)); err == nil {
			t.Errorf("signed an open whose %s is the payer itself", name)
		}
	}
}

// The open deposits the ceiling and no more, whatever else the seller's extra says,
// into a channel whose one recipient is payTo, of the offer's mint.
func TestSVMUptoOpenDepositsTheCeilingForPayToOnly(t *testing.T) {
	s := testSolanaSigner(t)
	terms, err := SVMUptoTermsOf(svmUptoOffer(svmUptoExtra(`"deposit":"99999999","maxAmount":"99999999","amount":"99999999",` +
		`"splits":[{"recipient":"` + svmFeePayer + `","bps":10000}],"payTo":"` + svmFeePayer + `","mint":"` + svmFeePayer + `"`)))
	if err != nil {
		t.Fatal(err)
	}
	nonce := bytes.Repeat([]byte{0xcd}, 32)
	p, err := s.SignUptoOpen(terms, svmHash, svmSlot, 1_700_000_000, 1_700_000_300, nonce)
	if err != nil {
		t.Fatal(err)
	}
	if p.Deposit != "250000" || p.MaxAmount != "250000" || p.From != s.Address() || p.AuthorizedSigner != svmAuthorizer {
		t.Fatalf("payload %+v", p)
	}
	tx, err := solana.TransactionFromBase64(p.OpenTransaction)
	if err != nil {
		t.Fatal(err)
	}
	m := tx.Message
	var open []byte
	var accounts []solana.PublicKey
	for _, ix := range m.Instructions {
		if m.AccountKeys[ix.ProgramIDIndex].Equals(paymentChannels) {
			open = ix.Data
			for _, a := range ix.Accounts {
				accounts = append(accounts, m.AccountKeys[a])
			}
		}
	}
	if len(open) != 1+8+8+4+8+4+34 || open[0] != openDiscriminator {
		t.Fatalf("open data %x", open)
	}
	if d := binary.LittleEndian.Uint64(open[9:17]); d != 250000 {
		t.Fatalf("deposit %d, want the ceiling", d)
	}
	if g := binary.LittleEndian.Uint32(open[17:21]); g != 900 {
		t.Fatalf("grace period %d", g)
	}
	if n := binary.LittleEndian.Uint32(open[29:33]); n != 1 || !solana.PublicKeyFromBytes(open[33:65]).Equals(solana.MustPublicKeyFromBase58(svmPayTo)) ||
		binary.LittleEndian.Uint16(open[65:67]) != svmBasisPoints {
		t.Fatalf("recipients %x", open[29:])
	}
	if !accounts[3].Equals(solana.MustPublicKeyFromBase58(usdcMainnet)) || !accounts[0].Equals(solana.MustPublicKeyFromBase58(s.Address())) {
		t.Fatalf("accounts %v", accounts)
	}
	// Signed again, the very same payment.
	again, _ := s.SignUptoOpen(terms, svmHash, svmSlot, 1_700_000_000, 1_700_000_300, nonce)
	if again != p {
		t.Fatal("signing again gave another open")
	}
}

// The service's open is the reference client's, byte for byte, for the same key,
// terms, blockhash, slot, clock and random draws.
func TestSVMUptoOpenIsTheReferenceClients(t *testing.T) {
	node, dir := os.Getenv("WAYSTATION_NODE"), os.Getenv("WAYSTATION_X402_SVM_DIR")
	if node == "" || dir == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("WAYSTATION_NODE and WAYSTATION_X402_SVM_DIR must be set under CI (make test sets them)")
		}
		t.Skip("WAYSTATION_NODE and WAYSTATION_X402_SVM_DIR are not set: run make test")
	}
	s := testSolanaSigner(t)
	const now = 1_700_000_000
	for _, more := range []string{"", `"memo":"order-42"`, `"validAfter":1699999000`} {
		extra := svmUptoExtra(`"tokenProgram":"` + solana.TokenProgramID.String() + `","recentBlockhash":"` + svmHash +
			`","lastValidBlockHeight":"300000000","recentSlot":"` + fmt.Sprint(svmSlot) + `"`)
		if more != "" {
			extra = strings.TrimSuffix(extra, "}") + "," + more + "}"
		}
		o := svmUptoOffer(extra)
		terms, err := SVMUptoTermsOf(o)
		if err != nil {
			t.Fatal(err)
		}
		nonce := make([]byte, 32)
		for i := range nonce {
			nonce[i] = byte(i*37 + 11)
		}
		ours, err := s.SignUptoOpen(terms, svmHash, *terms.RecentSlot, now, now+int64(o.MaxTimeoutSeconds), nonce)
		if err != nil {
			t.Fatal(err)
		}
		var req map[string]any
		if err := json.Unmarshal(o.Raw, &req); err != nil {
			t.Fatal(err)
		}
		in, _ := json.Marshal(map[string]any{"keypair": hex.EncodeToString(testSolanaKey()), "now": now, "requirements": req,
			"random": hex.EncodeToString(append(append([]byte{}, nonce[16:24]...), nonce[:16]...))})
		cmd := exec.Command(node, filepath.Join("testdata", "upto-svm-client.mjs"), dir)
		cmd.Stdin = bytes.NewReader(in)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v: %s", err, stderr.String())
		}
		var ref struct {
			Payload UptoSVMPayload `json:"payload"`
		}
		if err := json.Unmarshal(out, &ref); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if ref.Payload.OpenTransaction != ours.OpenTransaction {
			a, _ := solana.TransactionFromBase64(ref.Payload.OpenTransaction)
			b, _ := solana.TransactionFromBase64(ours.OpenTransaction)
			t.Errorf("%s: the open differs:\nreference %v\nours      %v", more, a, b)
		}
		ref.Payload.OpenTransaction, ours.OpenTransaction = "", ""
		if ref.Payload != ours {
			t.Errorf("%s: the payload differs:\nreference %+v\nours      %+v", more, ref.Payload, ours)
		}
	}
}

// TestTheSlotAnUptoChannelOpensAtIsTheSellersWithinTheWindowElseTheChains: the slot
// is the seller's when it names one within the reference facilitator's window of the
// slot the service read, the service's when it names none, and refused when the
// seller's is too far behind or ahead; a payment signed before the service read
// slots opens at the seller's, as it was signed.
func TestTheSlotAnUptoChannelOpensAtIsTheSellersWithinTheWindowElseTheChains(t *testing.T) {
	slot := func(s uint64) SVMUptoTerms { return SVMUptoTerms{RecentSlot: &s} }
	const read = 345_678_901
	for _, c := range []struct {
		name  string
		terms SVMUptoTerms
		read  uint64
		want  uint64
		ok    bool
	}{
		{"none named", SVMUptoTerms{}, read, read, true},
		{"the seller's", slot(read - 40), read, read - 40, true},
		{"the seller's at the window's edge behind", slot(read - SVMOpenSlotWindow), read, read - SVMOpenSlotWindow, true},
		{"the seller's at the window's edge ahead", slot(read + SVMOpenSlotWindow), read, read + SVMOpenSlotWindow, true},
		{"the seller's too far behind", slot(read - SVMOpenSlotWindow - 1), read, 0, false},
		{"the seller's too far ahead", slot(read + SVMOpenSlotWindow + 1), read, 0, false},
		{"the seller's at zero", slot(0), read, 0, false},
		{"the seller's at the end of time", slot(1<<64 - 1), read, 0, false},
		{"signed before slots were read", slot(read), 0, read, true},
		{"none named and none read", SVMUptoTerms{}, 0, 0, false},
	} {
		got, err := OpenSlot(c.terms, c.read)
		if c.ok && (err != nil || got != c.want) {
			t.Errorf("%s: OpenSlot = %d, %v; want %d", c.name, got, err, c.want)
		}
		if !c.ok && (err == nil || !errors.Is(err, ErrNotUptoSVM)) {
			t.Errorf("%s: OpenSlot = %d, %v; want a refusal", c.name, got, err)
		}
	}
}

func TestSolanaRPCReadsTheFinalizedSlot(t *testing.T) {
	var got struct {
		Method string           `json:"method"`
		Params []map[string]any `json:"params"`
	}
	answer := `{"jsonrpc":"2.0","id":1,"result":345678901}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewDecoder(r.Body).Decode(&got)
		w.Write([]byte(answer))
	}))
	defer srv.Close()
	r, err := ParseSolanaRPC(srv.URL+"/?api-key=secret", []string{"solana"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := r.Slot(context.Background(), "solana")
	if err != nil || s != 345678901 || got.Method != "getSlot" || len(got.Params) != 1 || got.Params[0]["commitment"] != "finalized" {
		t.Fatalf("Slot = %d, %v (%+v)", s, err, got)
	}
	if _, err := r.Slot(context.Background(), "solana-devnet"); err != ErrNoChain {
		t.Errorf("an unlisted network: %v", err)
	}
	for _, bad := range []string{`{"jsonrpc":"2.0","id":1,"result":-1}`, `{"jsonrpc":"2.0","id":1,"result":"x"}`,
		`{"jsonrpc":"2.0","id":1,"result":0}`, `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"behind"}}`} {
		answer = bad
		if s, err := r.Slot(context.Background(), "solana"); err == nil {
			t.Errorf("%s: read slot %d", bad, s)
		}
	}
	down, _ := ParseSolanaRPC("http://127.0.0.1:1/?api-key=secret", []string{"solana"}, nil)
	if _, err := down.Slot(context.Background(), "solana"); err == nil || strings.Contains(err.Error(), "secret") {
		t.Fatalf("unreachable: %v", err)
	}
}

// TestAChannelsSettlementIsReadFromItsDistribute: what an upto channel moved is the
// deposit less what its distribute returned to the payer's token account, in a
// transaction that succeeded and distributes that very channel to that payer's
// account of that mint. The transaction a seller names is not believed when it is
// another channel's, a failed one or one of another mint: the channel's own
// transactions are read instead, and without a settlement among them there is none.
func TestAChannelsSettlementIsReadFromItsDistribute(t *testing.T) {
	payer, mint := solana.NewWallet().PublicKey(), solana.MustPublicKeyFromBase58("4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU")
	ours, theirs := solana.NewWallet().PublicKey(), solana.NewWallet().PublicKey()
	type landed struct {
		b64    string
		failed bool
		back   uint64 // what came back to the payer's account
	}
	txs := map[string]landed{}
	distribute := func(n byte, channel, m solana.PublicKey, back uint64, failed bool) string {
		ata, _ := tokenAccount(payer, solana.TokenProgramID, m)
		keys := []solana.PublicKey{solana.NewWallet().PublicKey(), channel, payer, solana.NewWallet().PublicKey(), ata, m, paymentChannels}
		msg := solana.Message{AccountKeys: keys, Header: solana.MessageHeader{NumRequiredSignatures: 1},
			Instructions: []solana.CompiledInstruction{{ProgramIDIndex: 6, Accounts: []uint16{1, 2, 3, 3, 4, 3, 3, 5, 3, 3, 6}, Data: []byte{distributeDiscriminator}}}}
		tx := solana.Transaction{Message: msg, Signatures: []solana.Signature{solana.SignatureFromBytes(bytes.Repeat([]byte{n}, 64))}}
		b64, _ := tx.ToBase64()
		txs[tx.Signatures[0].String()] = landed{b64, failed, back}
		return tx.Signatures[0].String()
	}
	var channelSigs []string
	down := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var call struct {
			Method string `json:"method"`
			Params []any  `json:"params"`
		}
		json.NewDecoder(r.Body).Decode(&call)
		if down {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		var result any
		switch call.Method {
		case "getSignaturesForAddress":
			out := []map[string]any{}
			if call.Params[0] == ours.String() {
				for _, s := range channelSigs {
					out = append(out, map[string]any{"signature": s, "err": nil})
				}
			}
			result = out
		case "getTransaction":
			if l, ok := txs[call.Params[0].(string)]; ok {
				var errField any
				if l.failed {
					errField = map[string]any{"InstructionError": []any{0, "Custom"}}
				}
				balance := func(n uint64) []map[string]any {
					return []map[string]any{{"accountIndex": 4, "mint": mint.String(), "uiTokenAmount": map[string]string{"amount": strconv.FormatUint(n, 10)}}}
				}
				result = map[string]any{"meta": map[string]any{"err": errField, "preTokenBalances": balance(1_000_000),
					"postTokenBalances": balance(1_000_000 + l.back)}, "transaction": []string{l.b64, "base64"}}
			}
		}
		json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": 1, "result": result})
	}))
	defer srv.Close()
	rpc, err := ParseSolanaRPC(srv.URL, []string{"solana-devnet"}, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	q := SVMChannelQuery{Network: "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1", Channel: ours.String(), Payer: payer.String(), Mint: mint.String(), Deposit: 50000}
	settle := distribute(1, ours, mint, 47000, false)
	other := distribute(2, theirs, mint, 10000, false)
	failed := distribute(3, ours, mint, 0, true)
	otherMint := distribute(4, ours, solana.NewWallet().PublicKey(), 50000, false)
	for _, c := range []struct {
		name, named string
		listed      []string
		want        Transfer
		err         error
	}{
		{"the named settlement", settle, nil, Transfer{settle, big.NewInt(3000)}, nil},
		{"another channel's named", other, []string{settle}, Transfer{settle, big.NewInt(3000)}, nil},
		{"a failed one named", failed, []string{failed, settle}, Transfer{settle, big.NewInt(3000)}, nil},
		{"another mint's named", otherMint, []string{otherMint, settle}, Transfer{settle, big.NewInt(3000)}, nil},
		{"none named", "", []string{settle}, Transfer{settle, big.NewInt(3000)}, nil},
		{"no settlement", other, []string{failed, otherMint}, Transfer{}, ErrNoSettlement},
	} {
		channelSigs = c.listed
		q.Transaction = c.named
		got, err := rpc.ChannelSettlement(context.Background(), q)
		if !errors.Is(err, c.err) || got.Transaction != c.want.Transaction || (c.want.Amount != nil) != (got.Amount != nil) ||
			c.want.Amount != nil && got.Amount.Cmp(c.want.Amount) != 0 {
			t.Errorf("%s: %+v %v, want %+v %v", c.name, got, err, c.want, c.err)
		}
	}
	down = true
	if _, err := rpc.ChannelSettlement(context.Background(), q); err == nil || errors.Is(err, ErrNoSettlement) {
		t.Errorf("the RPC down: %v, want an error that is not the chain's no", err)
	}
	if _, err := (*SolanaRPC)(nil).ChannelSettlement(context.Background(), q); !errors.Is(err, ErrNoChain) {
		t.Errorf("no RPC: %v", err)
	}
}
