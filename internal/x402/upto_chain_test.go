package x402

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"
)

// node is a JSON-RPC node of a chain whose block n was mined at second 2n, holding
// transactions by hash, each with its call data, block and Transfer logs. It
// remembers the block ranges its logs were asked for.
type node struct {
	latest uint64
	txs    map[string]nodeTx
	ranges [][2]uint64
	reads  int
}

type nodeTx struct {
	input  []byte
	block  uint64
	status string
	logs   []rpcLog
}

func (n *node) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Method string
		Params []json.RawMessage
	}
	json.NewDecoder(r.Body).Decode(&req)
	n.reads++
	var result any
	str := func(i int) string { var s string; json.Unmarshal(req.Params[i], &s); return s }
	switch req.Method {
	case "eth_blockNumber":
		result = quantity(n.latest)
	case "eth_getBlockByNumber":
		b, _ := strconv.ParseUint(strings.TrimPrefix(str(0), "0x"), 16, 64)
		result = map[string]string{"timestamp": quantity(2 * b)}
	case "eth_getTransactionByHash":
		if t, ok := n.txs[str(0)]; ok {
			result = map[string]string{"input": "0x" + hex.EncodeToString(t.input)}
		}
	case "eth_getTransactionReceipt":
		if t, ok := n.txs[str(0)]; ok {
			result = map[string]any{"status": t.status, "logs": t.logs}
		}
	case "eth_getLogs":
		var f struct {
			FromBlock, ToBlock string
			Topics             []string
		}
		json.Unmarshal(req.Params[0], &f)
		from, _ := strconv.ParseUint(strings.TrimPrefix(f.FromBlock, "0x"), 16, 64)
		to, _ := strconv.ParseUint(strings.TrimPrefix(f.ToBlock, "0x"), 16, 64)
		n.ranges = append(n.ranges, [2]uint64{from, to})
		logs := []rpcLog{}
		for _, t := range n.txs {
			for _, l := range t.logs {
				if t.block >= from && t.block <= to && strings.EqualFold(l.Topics[1], f.Topics[1]) && strings.EqualFold(l.Topics[2], f.Topics[2]) {
					logs = append(logs, l)
				}
			}
		}
		result = logs
	}
	json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": 1, "result": result})
}

// TestAnUptoSettlementIsFoundOnTheChainWhateverTheSellerNames: what an upto
// authorization moved is read from the transaction carrying its nonce: the one the
// seller names when it does, else the one found among the token's Transfer logs from
// the payer to the payee in the blocks of the authorization's window, past another
// payment to the same payee in the same window and a transaction the seller named
// that is not the settlement. The logs are asked only of the window's blocks, in
// spans a public node answers; a chain that shows no settlement says so.
func TestAnUptoSettlementIsFoundOnTheChainWhateverTheSellerNames(t *testing.T) {
	const asset, owner, payTo = "0x036CbD53842c5426634e7929541eC2318f3dCF7e", "0x2c7536E3605D9C16a7a3D7b1898e529396a65c23", "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"
	nonce, otherNonce := common.LeftPadBytes([]byte{7, 7, 7}, 32), common.LeftPadBytes([]byte{9, 9, 9}, 32)
	transfer := func(tx string, amount int64) rpcLog {
		return rpcLog{Address: strings.ToLower(asset), Topics: []string{transferTopic, topicOf(owner), topicOf(payTo)},
			Data: "0x" + hex.EncodeToString(common.LeftPadBytes(big.NewInt(amount).Bytes(), 32)), TransactionHash: tx}
	}
	settle := func(n []byte) []byte { return append(append([]byte{1, 2, 3, 4}, make([]byte, 7)...), n...) } // misaligned, as a wrapped call is
	ours, theirs := "0x"+strings.Repeat("a", 64), "0x"+strings.Repeat("b", 64)
	n := &node{latest: 100_000, txs: map[string]nodeTx{
		ours:   {input: settle(nonce), block: 99_500, status: "0x1", logs: []rpcLog{transfer(ours, 40_000)}},
		theirs: {input: settle(otherNonce), block: 99_400, status: "0x1", logs: []rpcLog{transfer(theirs, 3000)}},
	}}
	srv := httptest.NewServer(n)
	defer srv.Close()
	c, _ := ParseChains("eip155:84532="+srv.URL, nil)
	q := UptoQuery{Network: "eip155:84532", Asset: asset, Owner: owner, PayTo: payTo, Nonce: nonce, Since: 2 * 98_000, Deadline: 2*99_600 + 1}
	for _, named := range []string{"", ours, theirs, "0x" + strings.Repeat("c", 64), "not a hash"} {
		n.ranges = nil
		q.Transaction = named
		got, err := c.UptoSettlement(context.Background(), q)
		if err != nil || got.Transaction != ours || got.Amount.Int64() != 40_000 {
			t.Errorf("the seller names %q: %+v %v, want 40000 in %s", named, got, err, ours)
		}
		if named == ours && len(n.ranges) != 0 {
			t.Errorf("the settlement named, the logs were asked all the same: %v", n.ranges)
		}
		if named != ours && (len(n.ranges) != 2 || n.ranges[0] != [2]uint64{98_000, 98_999} || n.ranges[1] != [2]uint64{99_000, 99_600}) {
			t.Errorf("the seller names %q: the logs were asked of %v, want blocks 98000 to 99600 in spans of 1000", named, n.ranges)
		}
	}
	n.reads = 0
	q.Transaction, q.Nonce = "", common.LeftPadBytes([]byte{1}, 32)
	if _, err := c.UptoSettlement(context.Background(), q); !errors.Is(err, ErrNoSettlement) {
		t.Errorf("no transaction carries the nonce: %v", err)
	}
	if n.reads > 60 { // two searches of about 2·log2(2000) blocks each, the logs and the candidates
		t.Errorf("%d reads of the node to search 1600 blocks", n.reads)
	}
	failed := n.txs[ours]
	failed.status = "0x0"
	n.txs[ours] = failed
	q.Nonce, q.Transaction = nonce, ours
	if _, err := c.UptoSettlement(context.Background(), q); !errors.Is(err, ErrNoSettlement) {
		t.Errorf("the settlement reverted: %v", err)
	}
}
