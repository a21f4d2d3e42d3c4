package seller

import (
	"bytes"
	"io"
	"math/big"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"

	"github.com/waystation/waystation/internal/x402"
)

// The lies a Liar tells once the seller behind it took a payment.
const (
	LieRefused = "refused" // 402 with the seller's offer again, as if nothing was paid
	LieError   = "error"   // 502 without a settlement
	LieClosed  = "closed"  // the connection closed without an answer
	LieGarbage = "garbage" // bytes that are not HTTP
)

// LieUnderstated passes the seller's paid answer on with its settlement answer
// claiming a tenth of what the seller settled: an upto seller's lie about how much
// left the payer's wallet.
const LieUnderstated = "understated"

// LieOverstated passes the seller's paid answer on with its settlement answer
// claiming ten times what the seller settled.
const LieOverstated = "overstated"

// LieOtherTransaction passes the seller's paid answer on with its settlement answer
// naming the transaction of the settlement passed on before it (another payment's),
// and its amount: a seller's lie about which transaction paid it. The first
// settlement is passed on as it is.
const LieOtherTransaction = "other-transaction"

// LieWithheld is no lie: the payment is never passed on, and the answer is the
// seller's 402, as a seller that refuses without settling answers.
const LieWithheld = "withheld"

// Lies are the lies a Liar tells once the seller took the payment.
var Lies = []string{LieRefused, LieError, LieClosed, LieGarbage}

// Liar stands in front of a seller as a hostile one would: it passes every request
// on, and a paid one (carrying a payment header) too, so that the seller settles it,
// then lies about it in the way Lie says. It keeps every distinct payment it saw, so
// that a test can tell a payment sent again from a second one signed.
type Liar struct {
	target *url.URL
	proxy  *httputil.ReverseProxy
	client *http.Client

	mu       sync.Mutex
	lie      string
	payments map[string]bool
	last     string // the transaction of the last settlement passed on
}

// NewLiar is a Liar in front of the seller at target, telling lie.
func NewLiar(target *url.URL, lie string) *Liar {
	return &Liar{target: target, proxy: httputil.NewSingleHostReverseProxy(target), client: &http.Client{
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}, lie: lie, payments: map[string]bool{}}
}

// SetLie changes the lie told from now on.
func (l *Liar) SetLie(lie string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lie = lie
}

// Payments is how many distinct payments reached the liar.
func (l *Liar) Payments() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.payments)
}

func (l *Liar) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	payment := r.Header.Get(x402.HeaderPaymentV2) + r.Header.Get(x402.HeaderPaymentV1)
	if payment == "" {
		l.proxy.ServeHTTP(w, r)
		return
	}
	l.mu.Lock()
	l.payments[payment] = true
	lie := l.lie
	l.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	switch lie {
	case LieUnderstated, LieOverstated, LieOtherTransaction:
		l.restate(w, r, body, lie)
		return
	}
	// The seller takes the payment; what it answered is dropped.
	if lie != LieWithheld {
		if res, err := l.send(r, body, true); err == nil {
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	}
	switch lie {
	case LieRefused, LieWithheld:
		res, err := l.send(r, body, false)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer res.Body.Close()
		for k, vs := range res.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(res.StatusCode)
		io.Copy(w, res.Body)
	case LieError:
		http.Error(w, "upstream failed", http.StatusBadGateway)
	default:
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		if lie == LieGarbage {
			buf.WriteString("\x16\x03\x01 not HTTP at all \x00\xff\r\n\r\n")
			buf.Flush()
		}
		conn.Close()
	}
}

// restate passes r on, paid, and the seller's answer back with its settlement
// answer restated as lie says.
func (l *Liar) restate(w http.ResponseWriter, r *http.Request, body []byte, lie string) {
	res, err := l.send(r, body, true)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer res.Body.Close()
	for k, vs := range res.Header {
		w.Header()[k] = vs
	}
	if st := x402.ReadSettlement(res.Header); st != nil {
		n, ok := new(big.Int).SetString(st.Amount, 10)
		switch {
		case lie == LieUnderstated && ok:
			st.Amount = n.Div(n, big.NewInt(10)).String()
		case lie == LieOverstated && ok:
			st.Amount = n.Mul(n, big.NewInt(10)).String()
		case lie == LieOtherTransaction:
			l.mu.Lock()
			if l.last != "" {
				st.Transaction, l.last = l.last, st.Transaction
			} else {
				l.last = st.Transaction
			}
			l.mu.Unlock()
		}
		w.Header().Del(x402.HeaderSettlementV1)
		name, value := st.Header(2)
		w.Header().Set(name, value)
	}
	w.WriteHeader(res.StatusCode)
	io.Copy(w, res.Body)
}

// send sends r again to the seller, with its payment or without.
func (l *Liar) send(r *http.Request, body []byte, paid bool) (*http.Response, error) {
	u := *r.URL
	u.Scheme, u.Host = l.target.Scheme, l.target.Host
	req, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = r.Header.Clone()
	if !paid {
		req.Header.Del(x402.HeaderPaymentV2)
		req.Header.Del(x402.HeaderPaymentV1)
	}
	return l.client.Do(req)
}
