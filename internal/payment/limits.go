package payment

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/problem"
)

// Limits are what the person lets one agent spend: the most for one payment, a
// budget for the UTC day and one for the UTC month, a list of hosts it may pay only
// (allow) or never (deny), and a pause that stops every payment.
type Limits struct {
	PerPayment Micros   `json:"perPayment"`
	Daily      Micros   `json:"daily"`
	Monthly    Micros   `json:"monthly"`
	HostsMode  string   `json:"hostsMode"`
	Hosts      []string `json:"hosts"`
	Paused     bool     `json:"paused"`
}

// Host list modes.
const (
	HostsAllow = "allow"
	HostsDeny  = "deny"
)

// DefaultLimits hold for an agent whose person set none: a dollar a payment, five a
// day, fifty a month, any host.
var DefaultLimits = Limits{PerPayment: 1_000_000, Daily: 5_000_000, Monthly: 50_000_000, HostsMode: HostsDeny, Hosts: []string{}}

// MaxHosts bounds a host list.
const MaxHosts = 200

// LimitsInput is the person's change of an agent's limits, amounts as decimal
// strings.
type LimitsInput struct {
	PerPayment string   `json:"perPayment"`
	Daily      string   `json:"daily"`
	Monthly    string   `json:"monthly"`
	HostsMode  string   `json:"hostsMode"`
	Hosts      []string `json:"hosts"`
	Paused     bool     `json:"paused"`
}

// Limits checks the input and gives the limits it sets.
func (in LimitsInput) Limits() (Limits, error) {
	var l Limits
	for _, f := range []struct {
		name string
		v    string
		dst  *Micros
	}{{"perPayment", in.PerPayment, &l.PerPayment}, {"daily", in.Daily, &l.Daily}, {"monthly", in.Monthly, &l.Monthly}} {
		m, ok := ParseMicros(f.v)
		if !ok {
			return l, problem.Invalid(f.name + " must be a dollar amount of at most six decimals, such as 2.50 (0 allows nothing).")
		}
		*f.dst = m
	}
	switch in.HostsMode {
	case "":
		l.HostsMode = HostsDeny
	case HostsAllow, HostsDeny:
		l.HostsMode = in.HostsMode
	default:
		return l, problem.Invalid("hostsMode must be allow or deny.")
	}
	if len(in.Hosts) > MaxHosts {
		return l, problem.Invalid("hosts holds at most " + strconv.Itoa(MaxHosts) + " hostnames.")
	}
	l.Hosts = []string{}
	for i, h := range in.Hosts {
		n, err := catalog.NormalizeHostname(h)
		if err != nil {
			return l, problem.Invalid("hosts[" + strconv.Itoa(i) + "] is not a hostname.")
		}
		if !slices.Contains(l.Hosts, n) {
			l.Hosts = append(l.Hosts, n)
		}
	}
	l.Paused = in.Paused
	return l, nil
}

// Spend is what an agent's payments took in the current UTC day and month: every
// payment the service signed, unless the seller refused it.
type Spend struct {
	Today     Micros `json:"today"`
	ThisMonth Micros `json:"thisMonth"`
}

// DaySpend is what one agent spent on one UTC day.
type DaySpend struct {
	AgentID string
	Day     time.Time
	Spent   Micros
}

// LimitsAndSpend is an agent's limits with its spend, as /agent/me and the approval
// page show them.
type LimitsAndSpend struct {
	Limits
	Currency string `json:"currency"`
	Spent    Spend  `json:"spent"`
}

// Periods are the starts of the UTC day and month holding now: spend counts from them.
func Periods(now time.Time) (day, month time.Time) {
	now = now.UTC()
	return time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC),
		time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// Allows checks one payment of value to host against the limits and what was spent:
// the problem says which limit it would pass, never more.
func (l Limits) Allows(host string, value Micros, s Spend) error {
	switch {
	case l.Paused:
		return problem.New(problem.AgentPaused, "The person paused this agent's payments.")
	case l.HostsMode == HostsAllow && !slices.Contains(l.Hosts, host):
		return problem.New(problem.HostNotAllowed, "The person lets this agent pay only the hosts on its list, and "+host+" is not one.")
	case l.HostsMode == HostsDeny && slices.Contains(l.Hosts, host):
		return problem.New(problem.HostNotAllowed, "The person does not let this agent pay "+host+".")
	case value > l.PerPayment:
		return problem.New(problem.SpendingLimitExceeded, "The payment of "+value.String()+" USD is above this agent's most for one payment, "+l.PerPayment.String()+" USD.")
	case s.Today+value > l.Daily:
		return problem.New(problem.SpendingLimitExceeded, "The payment of "+value.String()+" USD would pass today's budget (UTC): "+s.Today.String()+" of "+l.Daily.String()+" USD spent.")
	case s.ThisMonth+value > l.Monthly:
		return problem.New(problem.SpendingLimitExceeded, "The payment of "+value.String()+" USD would pass this month's budget (UTC): "+s.ThisMonth.String()+" of "+l.Monthly.String()+" USD spent.")
	}
	return nil
}

// Describe says the limits in a line for people.
func (l Limits) Describe() string {
	var b strings.Builder
	if l.Paused {
		b.WriteString("Paused. ")
	}
	b.WriteString("At most " + l.PerPayment.String() + " USD a payment, " + l.Daily.String() + " a day, " + l.Monthly.String() + " a month")
	switch {
	case l.HostsMode == HostsAllow:
		b.WriteString("; only " + strings.Join(l.Hosts, ", "))
	case len(l.Hosts) > 0:
		b.WriteString("; never " + strings.Join(l.Hosts, ", "))
	}
	b.WriteString(".")
	return b.String()
}
