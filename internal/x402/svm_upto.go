package x402

import (
	"context"
	"crypto/ed25519"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/gagliardetto/solana-go"
)

// The upto scheme on Solana (scheme_upto_svm.md, as @x402/svm 2.27 builds it) is a
// payment channel of x402's payment-channels program. The payer signs one "open"
// transaction that deposits the whole maximum from its token account into an
// account the channel owns; the facilitator, whose fee payer is the channel's payee
// and its rent payer, completes and sends it. After the call the seller's
// authorizer signs a voucher for what was used (at most the deposit), and the
// facilitator's settle_and_seal and distribute pay that to the offer's payTo and
// return the rest of the deposit to the payer, in one transaction. A channel no
// one settles stays open: its payer may close it and take the deposit back once
// the channel's grace period has passed since it asked to.
const (
	// PaymentChannelsProgram is the program that holds upto deposits on Solana.
	PaymentChannelsProgram = "CHNLxYvVA28MJP9PrFuDXccuoGXAx7jBacfLEkahyGsX"
	// SVMUptoComputeUnitLimit is the reference client's compute unit limit for an
	// open; its price is SVMComputeUnitPrice.
	SVMUptoComputeUnitLimit = 90_000
	// SVMUptoMaxGracePeriod is the longest grace period the service opens a channel
	// with: how long after asking to close an unsettled channel the payer waits
	// for its deposit. A seller asking for more would hold the money that long.
	SVMUptoMaxGracePeriod = 3600
	// svmBasisPoints is a whole split: the reference client sends the whole settled
	// amount to payTo.
	// SVMOpenSlotWindow is how far, in slots, the slot a channel opens at may be from
	// a recent one: the reference facilitator refuses an open more than this behind
	// the slot it challenged or read, and the service a seller's slot more than this
	// from the one it read.
	SVMOpenSlotWindow = 1500
	svmBasisPoints    = 10_000
	openDiscriminator = 1
)

// The program an open calls.
var (
	paymentChannels = solana.MustPublicKeyFromBase58(PaymentChannelsProgram)
)

// UptoSVMPayload is the payload of the upto scheme on Solana, field for field what
// the reference client sends: the channel, the deposit (the maximum), the open
// transaction signed by From, and the window the seller's vouchers may name.
type UptoSVMPayload struct {
	ChannelID        string `json:"channelId"`
	Deposit          string `json:"deposit"`
	ExpiresAt        int64  `json:"expiresAt"`
	From             string `json:"from"`
	MaxAmount        string `json:"maxAmount"`
	Nonce            string `json:"nonce"`
	OpenSlot         string `json:"openSlot"`
	OpenTransaction  string `json:"openTransaction"`
	AuthorizedSigner string `json:"authorizedSigner"`
	ValidAfter       int64  `json:"validAfter"`
}

// ErrNotUptoSVM is an offer the upto-on-Solana signer cannot pay.
var ErrNotUptoSVM = errors.New("x402: not an upto offer on Solana in a known token, with a fee payer, a receiver authorizer and a grace period the service accepts")

// SVMUptoTerms are what an upto offer on Solana is signed with: the deposit (the
// ceiling), the mint and its token program, the payee every settled unit goes to,
// the facilitator's fee payer (the channel's payee and rent payer), the key that
// signs the seller's vouchers, the grace period, the memo, the slot the seller
// read (nil when it names none: the reference client then reads one), and the
// seller's validAfter (nil: now).
type SVMUptoTerms struct {
	Network           string
	Mint              solana.PublicKey
	TokenProgram      solana.PublicKey
	PayTo             solana.PublicKey
	Deposit           uint64
	FeePayer          solana.PublicKey
	Authorizer        solana.PublicKey
	GracePeriod       uint32
	Memo              string
	RecentSlot        *uint64
	ValidAfter        *int64
	MaxTimeoutSeconds int
}

// SVMUptoTermsOf reads the terms of an upto offer on Solana, refusing before
// anything is signed an offer in a mint the service does not know, or naming
// another token program than the mint's; whose ceiling is not a positive token
// amount; whose feePayer or receiverAuthorizer is not a public key; whose grace
// period is not a whole number of seconds from 1 to SVMUptoMaxGracePeriod; or whose
// memo is over 256 bytes. Nothing else in extra moves money: the deposit is the
// ceiling and the one recipient payTo, whatever else the seller writes there.
func SVMUptoTermsOf(o Offer) (SVMUptoTerms, error) {
	network := NormalizeNetwork(o.Network)
	if o.Scheme != SchemeUpto || Namespace(network) != "solana" {
		return SVMUptoTerms{}, ErrNotUptoSVM
	}
	if _, ok := LookupAsset(network, o.Asset); !ok {
		return SVMUptoTerms{}, fmt.Errorf("%w: the mint is not one the service knows on %s", ErrNotUptoSVM, network)
	}
	mint, err1 := solana.PublicKeyFromBase58(o.Asset)
	payTo, err2 := solana.PublicKeyFromBase58(o.PayTo)
	if err1 != nil || err2 != nil {
		return SVMUptoTerms{}, fmt.Errorf("%w: the mint or payee is not a public key", ErrNotUptoSVM)
	}
	n, ok := new(big.Int).SetString(o.Ceiling, 10)
	if !ok || n.Sign() <= 0 || !n.IsUint64() || n.String() != o.Ceiling {
		return SVMUptoTerms{}, fmt.Errorf("%w: the ceiling is not a positive 64-bit token amount", ErrNotUptoSVM)
	}
	var extra map[string]json.RawMessage
	if json.Unmarshal(o.Extra, &extra) != nil || extra == nil {
		return SVMUptoTerms{}, fmt.Errorf("%w: extra is not an object", ErrNotUptoSVM)
	}
	key := func(name string) (solana.PublicKey, error) {
		s, ok := jsonString(extra[name])
		k, err := solana.PublicKeyFromBase58(s)
		if !ok || err != nil || k.IsZero() {
			return solana.PublicKey{}, fmt.Errorf("%w: extra.%s is not a public key", ErrNotUptoSVM, name)
		}
		return k, nil
	}
	feePayer, err := key("feePayer")
	if err != nil {
		return SVMUptoTerms{}, err
	}
	authorizer, err := key("receiverAuthorizer")
	if err != nil {
		return SVMUptoTerms{}, err
	}
	grace, ok := wholeNumber(extra["withdrawDelay"])
	if !ok || grace < 1 || grace > SVMUptoMaxGracePeriod {
		return SVMUptoTerms{}, fmt.Errorf("%w: extra.withdrawDelay is not a whole number of seconds from 1 to %d", ErrNotUptoSVM, SVMUptoMaxGracePeriod)
	}
	// The service's tokens are all of the original token program.
	program := solana.TokenProgramID
	if raw, sent := extra["tokenProgram"]; sent && present(raw) {
		if s, ok := jsonString(raw); !ok || (s != "" && s != program.String()) {
			return SVMUptoTerms{}, fmt.Errorf("%w: extra.tokenProgram is not the mint's token program", ErrNotUptoSVM)
		}
	}
	t := SVMUptoTerms{Network: network, Mint: mint, TokenProgram: program, PayTo: payTo, Deposit: n.Uint64(),
		FeePayer: feePayer, Authorizer: authorizer, GracePeriod: uint32(grace), MaxTimeoutSeconds: o.MaxTimeoutSeconds}
	if raw, sent := extra["memo"]; sent && present(raw) {
		m, ok := jsonString(raw)
		if !ok || len(m) > maxMemo {
			return SVMUptoTerms{}, fmt.Errorf("%w: extra.memo is not a string of at most 256 bytes", ErrNotUptoSVM)
		}
		t.Memo = m
	}
	// The reference client takes a slot the seller read when it is an unsigned
	// integer, and reads one otherwise; so does the service.
	if raw, sent := extra["recentSlot"]; sent && present(raw) {
		if s, ok := unsignedInteger(raw); ok {
			t.RecentSlot = &s
		}
	}
	if raw, sent := extra["validAfter"]; sent && present(raw) {
		v, ok := wholeNumber(raw)
		if !ok {
			return SVMUptoTerms{}, fmt.Errorf("%w: extra.validAfter is not a whole number", ErrNotUptoSVM)
		}
		t.ValidAfter = &v
	}
	return t, nil
}

// wholeNumber is raw when it is a JSON number that is a safe integer.
func wholeNumber(raw json.RawMessage) (int64, bool) {
	var f float64
	if len(raw) == 0 || raw[0] == '"' || json.Unmarshal(raw, &f) != nil {
		return 0, false
	}
	if f != float64(int64(f)) || f > 1<<53-1 || f < -(1<<53-1) {
		return 0, false
	}
	return int64(f), true
}

// unsignedInteger is raw when it is a safe non-negative JSON integer or a string of
// decimal digits that fits 64 bits, as the reference client reads extra.recentSlot.
func unsignedInteger(raw json.RawMessage) (uint64, bool) {
	if s, ok := jsonString(raw); ok {
		if s == "" || strings.TrimLeft(s, "0123456789") != "" {
			return 0, false
		}
		v, err := strconv.ParseUint(s, 10, 64)
		return v, err == nil
	}
	v, ok := wholeNumber(raw)
	return uint64(v), ok && v >= 0
}

// OpenSlot is the slot t's channel opens at, given read, the slot the service read
// from the chain when it signed (0 for a payment signed before it read one): the
// seller's, as the reference client takes it, when it is within SVMOpenSlotWindow
// of read; read when the seller names none. A seller's slot further off is refused:
// it is not one the seller read recently, and the channel it derives would be one
// the program or the seller's facilitator refuses, or a channel of a slot no one
// can check.
func OpenSlot(t SVMUptoTerms, read uint64) (uint64, error) {
	switch {
	case t.RecentSlot == nil && read == 0:
		return 0, fmt.Errorf("%w: the offer names no slot and none was read", ErrNotUptoSVM)
	case t.RecentSlot == nil:
		return read, nil
	case read == 0:
		return *t.RecentSlot, nil
	}
	s := *t.RecentSlot
	if max(s, read)-min(s, read) > SVMOpenSlotWindow {
		return 0, fmt.Errorf("%w: extra.recentSlot %d is more than %d slots from the chain's %d", ErrNotUptoSVM, s, SVMOpenSlotWindow, read)
	}
	return s, nil
}

// OpenSalt is the channel's salt a payment's nonce gives: its bytes 16 to 24, read
// as the reference client reads its random ones (little-endian). The memo takes
// bytes 0 to 16 (MemoOf).
func OpenSalt(nonce []byte) (uint64, error) {
	if len(nonce) < 24 {
		return 0, errors.New("x402: an upto payment on Solana needs a nonce of at least 24 bytes")
	}
	return binary.LittleEndian.Uint64(nonce[16:24]), nil
}

// tokenAccount is owner's associated token account for mint under program.
func tokenAccount(owner, program, mint solana.PublicKey) (solana.PublicKey, error) {
	a, _, err := solana.FindProgramAddress([][]byte{owner[:], program[:], mint[:]}, solana.SPLAssociatedTokenAccountProgramID)
	return a, err
}

// ChannelAddress is the payment channel an open of these seeds creates: the
// program's address for "channel", payer, payee, mint, authorizer, salt and slot.
func ChannelAddress(payer, payee, mint, authorizer solana.PublicKey, salt, openSlot uint64) (solana.PublicKey, error) {
	var s, o [8]byte
	binary.LittleEndian.PutUint64(s[:], salt)
	binary.LittleEndian.PutUint64(o[:], openSlot)
	a, _, err := solana.FindProgramAddress([][]byte{[]byte("channel"), payer[:], payee[:], mint[:], authorizer[:], s[:], o[:]}, paymentChannels)
	return a, err
}

// SignUptoOpen builds the open of t's channel as the reference client does,
// depositing t.Deposit, with the recent blockhash, openSlot (the slot the channel
// is derived from: the seller's, else one the signer read), validAfter and
// expiresAt (now and now plus the offer's maxTimeoutSeconds, in the reference
// client; the seller's vouchers must name expiresAt) and the payment's nonce
// (salt and memo); signs it as the payer and leaves the fee payer's signature
// empty. Deterministic, as Sign is.
func (s *SolanaSigner) SignUptoOpen(t SVMUptoTerms, blockhash string, openSlot uint64, validAfter, expiresAt int64, nonce []byte) (UptoSVMPayload, error) {
	hash, err := solana.HashFromBase58(blockhash)
	if err != nil {
		return UptoSVMPayload{}, errors.New("x402: the blockhash is not 32 bytes of base58")
	}
	if t.FeePayer.Equals(s.address) || t.Authorizer.Equals(s.address) {
		return UptoSVMPayload{}, errors.New("x402: the offer's fee payer or authorizer is the payer itself")
	}
	if t.Deposit == 0 || t.GracePeriod == 0 || t.GracePeriod > SVMUptoMaxGracePeriod || !t.TokenProgram.Equals(solana.TokenProgramID) {
		return UptoSVMPayload{}, ErrNotUptoSVM
	}
	salt, err := OpenSalt(nonce)
	if err != nil {
		return UptoSVMPayload{}, err
	}
	memo, err := MemoOf(SVMTerms{Memo: t.Memo}, nonce)
	if err != nil {
		return UptoSVMPayload{}, err
	}
	if t.ValidAfter != nil {
		validAfter = *t.ValidAfter
	}
	channel, err := ChannelAddress(s.address, t.FeePayer, t.Mint, t.Authorizer, salt, openSlot)
	if err != nil {
		return UptoSVMPayload{}, err
	}
	payerATA, err := tokenAccount(s.address, t.TokenProgram, t.Mint)
	if err != nil {
		return UptoSVMPayload{}, err
	}
	channelATA, err := tokenAccount(channel, t.TokenProgram, t.Mint)
	if err != nil {
		return UptoSVMPayload{}, err
	}
	events, _, err := solana.FindProgramAddress([][]byte{[]byte("event_authority")}, paymentChannels)
	if err != nil {
		return UptoSVMPayload{}, err
	}
	data := []byte{openDiscriminator}
	data = binary.LittleEndian.AppendUint64(data, salt)
	data = binary.LittleEndian.AppendUint64(data, t.Deposit)
	data = binary.LittleEndian.AppendUint32(data, t.GracePeriod)
	data = binary.LittleEndian.AppendUint64(data, openSlot)
	data = binary.LittleEndian.AppendUint32(data, 1) // one recipient: payTo, the whole split
	data = append(data, t.PayTo[:]...)
	data = binary.LittleEndian.AppendUint16(data, svmBasisPoints)
	ro := func(k solana.PublicKey) *solana.AccountMeta { return solana.Meta(k) }
	open := compiledIx{program: paymentChannels, data: data, accounts: []*solana.AccountMeta{
		ro(s.address).WRITE().SIGNER(), ro(t.FeePayer).WRITE().SIGNER(), ro(t.FeePayer), ro(t.Mint), ro(t.Authorizer),
		ro(channel).WRITE(), ro(payerATA).WRITE(), ro(channelATA).WRITE(), ro(t.TokenProgram), ro(solana.SystemProgramID),
		ro(solana.SysVarRentPubkey), ro(solana.SPLAssociatedTokenAccountProgramID), ro(events), ro(paymentChannels),
	}}
	limit := binary.LittleEndian.AppendUint32([]byte{2}, SVMUptoComputeUnitLimit)
	price := binary.LittleEndian.AppendUint64([]byte{3}, SVMComputeUnitPrice)
	msg := compileV0(t.FeePayer, hash, []compiledIx{
		{program: solana.ComputeBudget, data: limit}, {program: solana.ComputeBudget, data: price},
		open, {program: solana.MemoProgramID, data: memo},
	})
	body, err := msg.MarshalBinary()
	if err != nil {
		return UptoSVMPayload{}, err
	}
	tx := solana.Transaction{Message: msg, Signatures: make([]solana.Signature, msg.Header.NumRequiredSignatures)}
	for i, k := range msg.AccountKeys[:msg.Header.NumRequiredSignatures] {
		if k.Equals(s.address) {
			copy(tx.Signatures[i][:], ed25519.Sign(ed25519.PrivateKey(s.key), body))
		}
	}
	b64, err := tx.ToBase64()
	if err != nil {
		return UptoSVMPayload{}, err
	}
	dep := strconv.FormatUint(t.Deposit, 10)
	return UptoSVMPayload{ChannelID: channel.String(), Deposit: dep, ExpiresAt: expiresAt, From: s.Address(), MaxAmount: dep,
		Nonce: strconv.FormatUint(salt, 10), OpenSlot: strconv.FormatUint(openSlot, 10), OpenTransaction: b64,
		AuthorizedSigner: t.Authorizer.String(), ValidAfter: validAfter}, nil
}

// compiledIx is an instruction before its accounts are numbered.
type compiledIx struct {
	program  solana.PublicKey
	accounts []*solana.AccountMeta
	data     []byte
}

// compileV0 numbers the accounts of ixs as @solana/kit does, so that the message is
// the reference client's byte for byte: the fee payer first, then the signers, the
// writable before the read-only, each group in kit's order of addresses
// (addressLess); an invoked program is read-only.
func compileV0(feePayer solana.PublicKey, blockhash solana.Hash, ixs []compiledIx) solana.Message {
	type role struct{ signer, writable bool }
	roles := map[solana.PublicKey]role{feePayer: {true, true}}
	for _, ix := range ixs {
		if _, ok := roles[ix.program]; !ok {
			roles[ix.program] = role{}
		}
		for _, a := range ix.accounts {
			r := roles[a.PublicKey]
			roles[a.PublicKey] = role{r.signer || a.IsSigner, r.writable || a.IsWritable}
		}
	}
	keys := make([]solana.PublicKey, 0, len(roles))
	for k := range roles {
		if !k.Equals(feePayer) {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b solana.PublicKey) int {
		ra, rb := roles[a], roles[b]
		switch {
		case ra.signer != rb.signer:
			return boolFirst(ra.signer)
		case ra.writable != rb.writable:
			return boolFirst(ra.writable)
		}
		return addressCompare(a.String(), b.String())
	})
	keys = append([]solana.PublicKey{feePayer}, keys...)
	var h solana.MessageHeader
	for _, k := range keys {
		r := roles[k]
		switch {
		case r.signer:
			h.NumRequiredSignatures++
			if !r.writable {
				h.NumReadonlySignedAccounts++
			}
		case !r.writable:
			h.NumReadonlyUnsignedAccounts++
		}
	}
	index := func(k solana.PublicKey) uint16 { return uint16(slices.IndexFunc(keys, k.Equals)) }
	m := solana.Message{AccountKeys: keys, Header: h, RecentBlockhash: blockhash}
	for _, ix := range ixs {
		c := solana.CompiledInstruction{ProgramIDIndex: index(ix.program), Data: ix.data, Accounts: []uint16{}}
		for _, a := range ix.accounts {
			c.Accounts = append(c.Accounts, index(a.PublicKey))
		}
		m.Instructions = append(m.Instructions, c)
	}
	m.SetVersion(solana.MessageVersionV0)
	return m
}

func boolFirst(a bool) int {
	if a {
		return -1
	}
	return 1
}

// addressCompare orders base58 addresses as @solana/kit does (an English
// Intl.Collator, lower case first): digits before letters and letters by the
// alphabet whatever their case; of two addresses alike but for case, the first
// place where they differ decides, lower before upper.
func addressCompare(a, b string) int {
	fold := func(r rune) rune { return unicode.ToLower(r) }
	if c := strings.Compare(strings.Map(fold, a), strings.Map(fold, b)); c != 0 {
		return c
	}
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			if unicode.IsLower(rune(a[i])) {
				return -1
			}
			return 1
		}
	}
	return len(a) - len(b)
}

// distributeDiscriminator is the payment-channels program's distribute: the
// instruction that pays a sealed channel's settled amount to its splits and returns
// the rest of the deposit to the payer's token account.
const distributeDiscriminator = 7

// SVMChannelQuery names the settlement of an upto channel on Solana to find: the
// channel Channel that Payer opened on Network with a deposit of Deposit of Mint,
// and the transaction the seller named as its settlement, if any.
type SVMChannelQuery struct {
	Network     string
	Channel     string
	Payer       string
	Mint        string
	Deposit     uint64
	Transaction string
}

// maxChannelSignatures bounds the channel's transactions listed to find its
// settlement: an upto channel of the service sees its open, its settlement, and
// perhaps a close.
const maxChannelSignatures = 20

// ChannelSettlement finds the transaction that settled q's channel and what it
// moved out of the payer's hands: the deposit, less what the payment-channels
// program's distribute returned to the payer's associated token account for the
// mint in that transaction (its token balances before and after, as the
// transaction's meta shows them). The payer's side is read, not the payee's: only
// the payer's own signature takes from its account, while the payee's account may
// be emptied in the same transaction by its owner. A transaction is the settlement
// only when it succeeded and carries a distribute of this channel to this payer's
// account for this mint; the one the seller named is read first, and when it is
// not, the channel's own transactions are. ErrNoSettlement when neither shows one;
// ErrNoChain without an endpoint for the network.
func (r *SolanaRPC) ChannelSettlement(ctx context.Context, q SVMChannelQuery) (Transfer, error) {
	if !r.Has(q.Network) {
		return Transfer{}, ErrNoChain
	}
	channel, err1 := solana.PublicKeyFromBase58(q.Channel)
	payer, err2 := solana.PublicKeyFromBase58(q.Payer)
	mint, err3 := solana.PublicKeyFromBase58(q.Mint)
	if err := errors.Join(err1, err2, err3); err != nil || q.Deposit == 0 {
		return Transfer{}, errors.New("x402: channel settlement: malformed channel, payer, mint or deposit")
	}
	payerATA, err := tokenAccount(payer, solana.TokenProgramID, mint)
	if err != nil {
		return Transfer{}, err
	}
	c := channelCheck{rpc: r, q: q, channel: channel, mint: mint, payerATA: payerATA}
	if sig, err := solana.SignatureFromBase58(q.Transaction); err == nil {
		t, found, err := c.settlementIn(ctx, sig.String())
		if err != nil || found {
			return t, err
		}
	}
	var sigs []struct {
		Signature string          `json:"signature"`
		Err       json.RawMessage `json:"err"`
	}
	if err := r.call(ctx, q.Network, "getSignaturesForAddress", []any{channel.String(),
		map[string]any{"limit": maxChannelSignatures, "commitment": "confirmed"}}, &sigs); err != nil {
		return Transfer{}, err
	}
	for _, s := range sigs {
		if len(s.Err) > 0 && string(s.Err) != "null" || s.Signature == q.Transaction {
			continue
		}
		t, found, err := c.settlementIn(ctx, s.Signature)
		if err != nil || found {
			return t, err
		}
	}
	return Transfer{}, ErrNoSettlement
}

// channelCheck reads transactions for the settlement of one channel.
type channelCheck struct {
	rpc      *SolanaRPC
	q        SVMChannelQuery
	channel  solana.PublicKey
	mint     solana.PublicKey
	payerATA solana.PublicKey
}

// tokenBalance is a token account's balance in a transaction's meta.
type tokenBalance struct {
	AccountIndex  int    `json:"accountIndex"`
	Mint          string `json:"mint"`
	UITokenAmount struct {
		Amount string `json:"amount"`
	} `json:"uiTokenAmount"`
}

// settlementIn reads transaction sig: found when it succeeded and distributes the
// channel, with what it kept of the deposit.
func (c channelCheck) settlementIn(ctx context.Context, sig string) (Transfer, bool, error) {
	var got *struct {
		Transaction []string `json:"transaction"`
		Meta        *struct {
			Err               json.RawMessage `json:"err"`
			PreTokenBalances  []tokenBalance  `json:"preTokenBalances"`
			PostTokenBalances []tokenBalance  `json:"postTokenBalances"`
			LoadedAddresses   *struct {
				Writable []string `json:"writable"`
				Readonly []string `json:"readonly"`
			} `json:"loadedAddresses"`
		} `json:"meta"`
	}
	if err := c.rpc.call(ctx, c.q.Network, "getTransaction", []any{sig, map[string]any{"encoding": "base64",
		"commitment": "confirmed", "maxSupportedTransactionVersion": 0}}, &got); err != nil {
		return Transfer{}, false, err
	}
	if got == nil || got.Meta == nil || len(got.Transaction) == 0 || len(got.Meta.Err) > 0 && string(got.Meta.Err) != "null" {
		return Transfer{}, false, nil // not landed, or failed: it moved nothing
	}
	tx, err := solana.TransactionFromBase64(got.Transaction[0])
	if err != nil || len(tx.Signatures) == 0 {
		return Transfer{}, false, nil
	}
	// The accounts the instructions number: the message's own, then those its
	// lookup tables loaded, writable first.
	keys := slices.Clone(tx.Message.AccountKeys)
	if l := got.Meta.LoadedAddresses; l != nil {
		for _, a := range slices.Concat(l.Writable, l.Readonly) {
			k, err := solana.PublicKeyFromBase58(a)
			if err != nil {
				return Transfer{}, false, nil
			}
			keys = append(keys, k)
		}
	}
	key := func(i uint16) solana.PublicKey {
		if int(i) < len(keys) {
			return keys[i]
		}
		return solana.PublicKey{}
	}
	distributes := slices.ContainsFunc(tx.Message.Instructions, func(ix solana.CompiledInstruction) bool {
		return key(ix.ProgramIDIndex).Equals(paymentChannels) && len(ix.Data) > 0 && ix.Data[0] == distributeDiscriminator &&
			len(ix.Accounts) > 7 && key(ix.Accounts[0]).Equals(c.channel) && key(ix.Accounts[4]).Equals(c.payerATA) &&
			key(ix.Accounts[7]).Equals(c.mint)
	})
	if !distributes {
		return Transfer{}, false, nil
	}
	balance := func(bs []tokenBalance) (*big.Int, bool) {
		for _, b := range bs {
			if b.AccountIndex >= 0 && b.AccountIndex < len(keys) && keys[b.AccountIndex].Equals(c.payerATA) && b.Mint == c.mint.String() {
				n, ok := new(big.Int).SetString(b.UITokenAmount.Amount, 10)
				return n, ok && n.Sign() >= 0
			}
		}
		return nil, false
	}
	// What came back to the payer's account; a meta that does not show its
	// balances shows nothing back, and the whole deposit is kept.
	kept := new(big.Int).SetUint64(c.q.Deposit)
	pre, ok1 := balance(got.Meta.PreTokenBalances)
	post, ok2 := balance(got.Meta.PostTokenBalances)
	if ok1 && ok2 && post.Cmp(pre) > 0 {
		kept.Sub(kept, post.Sub(post, pre))
		if kept.Sign() < 0 {
			kept.SetInt64(0) // more came back than the deposit: nothing of it was kept
		}
	}
	return Transfer{Transaction: tx.Signatures[0].String(), Amount: kept}, true, nil
}
