package api

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/problem"
)

type merchantCheckRequest struct {
	URL string `json:"url"`
}

func (m *merchantCheckRequest) validate() error {
	return httpURL("url", m.URL)
}

// merchantCheck is the directory's advisory word on the seller behind a URL. It
// never authorises a payment.
type merchantCheck struct {
	URL      string           `json:"url"`
	Hostname string           `json:"hostname"`
	Listed   bool             `json:"listed"`
	Verdict  string           `json:"verdict"`
	Score    *int             `json:"score"`
	Advisory bool             `json:"advisory"`
	Reasons  []string         `json:"reasons"`
	Trust    *directory.Trust `json:"trust"`
	Stats    *directory.Stats `json:"stats"`
	Methods  int              `json:"methods"`
	Snapshot string           `json:"snapshot"`
}

// handleMerchantCheck answers the directory's verdict on the seller behind a URL,
// with why, in words: listed or not, the operator's override, the last probe, the
// score against the thresholds, and plain HTTP.
func (s *Server) handleMerchantCheck() http.HandlerFunc {
	return s.serve(func(w http.ResponseWriter, r *http.Request) error {
		var req merchantCheckRequest
		if _, err := s.readJSON(w, r, &req); err != nil {
			return err
		}
		u, _ := url.Parse(req.URL)
		out, err := s.checkMerchant(u)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, out)
		return nil
	})
}

// checkMerchant is the directory's advisory word on the seller behind u.
func (s *Server) checkMerchant(u *url.URL) (merchantCheck, error) {
	host, err := catalog.NormalizeHostname(u.Hostname())
	if err != nil {
		return merchantCheck{}, problem.Invalid("url's host is not a hostname.")
	}
	snap := s.dir.Current()
	out := merchantCheck{URL: u.String(), Hostname: host, Verdict: directory.VerdictUnknown, Advisory: true, Reasons: []string{}, Snapshot: snap.Info().ID}
	if u.Scheme != "https" {
		out.Reasons = append(out.Reasons, "The URL is plain HTTP: whatever is sent to it can be read and changed on the way.")
	}
	res, ok := snap.Merchant(host)
	var m directory.Merchant
	if ok {
		body, err := res.Bytes()
		if err != nil {
			return merchantCheck{}, err
		}
		ok = json.Unmarshal(body, &m) == nil
	}
	if !ok {
		out.Reasons = append(out.Reasons, "Not in the directory: nothing is known of this seller.")
		return out, nil
	}
	out.Listed, out.Trust, out.Stats, out.Methods = true, &m.Trust, m.Stats, len(m.Methods)
	out.Verdict, out.Score = m.Trust.Verdict, m.Trust.Score
	out.Reasons = append(out.Reasons, "Listed in the directory with "+strconv.Itoa(len(m.Methods))+" method(s).")
	if o := m.Trust.Override; o != nil {
		out.Reasons = append(out.Reasons, "An operator set the verdict to "+o.Verdict+": "+o.Reason)
	}
	if p := m.Trust.Probe; p != nil {
		out.Reasons = append(out.Reasons, "Last probed "+p.ProbedAt.UTC().Format(time.RFC3339)+": "+p.Outcome+".")
	} else {
		out.Reasons = append(out.Reasons, "Never probed: the directory has seen nothing of it.")
	}
	if sc := m.Trust.Score; sc != nil {
		out.Reasons = append(out.Reasons, "Score "+strconv.Itoa(*sc)+" of 100: proceed from 70, caution from 40.")
	}
	out.Reasons = append(out.Reasons, evidenceReasons(m.Trust)...)
	return out, nil
}
