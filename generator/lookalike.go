package generator

import (
	"slices"
	"time"

	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/trust"
)

// flagLookalikes weighs look-alikes (see trust.Lookalikes) once every merchant's
// trust is known: a hostname that resembles an established one carries the flag in
// its merchant record and in each of its methods' trust blocks, capped while it
// stands. listed holds when each hostname was first listed; without it nothing is
// flagged.
func flagLookalikes(listed map[string]time.Time, methods []directory.Method, merchants []directory.Merchant, byHost map[string][]int) {
	if len(listed) == 0 {
		return
	}
	sellers := make([]trust.Seller, len(merchants))
	for k := range merchants {
		mr := &merchants[k]
		s := trust.Seller{Hostname: mr.Hostname, Providers: mr.Providers, Listed: listed[mr.Hostname],
			Verdict: mr.Trust.Verdict, Overridden: mr.Trust.Override != nil}
		for _, i := range byHost[mr.Hostname] {
			if o := methods[i].Trust.Owner; o != nil && o.Verified && !slices.Contains(s.Payees, o.PayTo) {
				s.Payees = append(s.Payees, o.PayTo)
			}
		}
		sellers[k] = s
	}
	flags := trust.Lookalikes(sellers)
	for k := range merchants {
		l := flags[merchants[k].Hostname]
		if l == nil {
			continue
		}
		merchants[k].Trust = trust.CapLookalike(merchants[k].Trust, l)
		for _, i := range byHost[merchants[k].Hostname] {
			methods[i].Trust = trust.CapLookalike(methods[i].Trust, l)
		}
	}
}
