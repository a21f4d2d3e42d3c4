package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/idna"

	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/directory"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/trust"
	"github.com/waystation/waystation/internal/x402"
)

// HomeLimit is how many methods the home page lists, best first; the category pages
// list every one.
const HomeLimit = 50

// Views builds the pages' view models. The pages link to their JSON twins in the
// API, whose address the service that wires the pages gives here.
type Views struct {
	// DirectoryAPI is the URL path of the directory's JSON, under which /services and
	// /merchants answer.
	DirectoryAPI string
}

// Page is what every page's frame needs.
type Page struct {
	Title       string
	Description string
	Stylesheet  string
	Snapshot    directory.Info
	Query       string
	// JSON is the URL of the same content as JSON, when there is one.
	JSON string
	// Script is the URL of the page's script, when it has one (passkeys only).
	Script string
}

// Link is a labelled URL, with a count when it is a facet.
type Link struct {
	Label   string
	URL     string
	Count   int
	Current bool
}

// MethodRow is a method as lists show it.
type MethodRow struct {
	Slug, Name, Provider, Hostname, Description string
	URL, MerchantURL, Category, CategoryURL     string
	Kind                                        string
	Payable                                     bool
	Verdict, Score                              string
}

// HomeView is the home page: the search box, the categories and the best methods.
type HomeView struct {
	Page
	Categories []Link
	Verdicts   []Link
	Methods    []MethodRow
	Total      int
}

// CategoryView is one category's page: every method in it.
type CategoryView struct {
	Page
	Category   string
	Label      string
	Categories []Link
	Methods    []MethodRow
	// Rows are the methods rendered already (see PageCache), in place of Methods.
	Rows []PageRow
}

// TrustView is a trust block in plain words.
type TrustView struct {
	Verdict, VerdictMeaning string
	Score                   string
	Probed                  bool
	Outcome, OutcomeMeaning string
	// Reason says, for an invalid offer, why no x402 client could pay it; the
	// outcome's meaning ends with it.
	Reason                string
	ProbedAt, Age         string
	Network, Asset, Price string
	Override              *OverrideView
	// Owner is the seller's proof that it owns the origin listing the method.
	Owner *OwnerView
	// Lookalike is present when the seller resembles an established one.
	Lookalike *LookalikeView
	// RuleSteps and RuleNotes are the scoring rule: its numbered steps, then the rest.
	RuleSteps, RuleNotes []string
}

// OwnerView is a proof of ownership: the payee that signed the origin, and what the
// proof added to the score (Points; see trust.Rule).
type OwnerView struct {
	PayTo, Origin string
	Points        int
}

// OriginView is a hostname listed by its own origin, in words.
type OriginView struct {
	Origin, Status, ListedAt, CheckedAt string
	Reason, Owner                       string
	// OwnerScore says how the owner's proof counted in the methods' scores.
	OwnerScore string
}

// OverrideView is an operator's override in plain words.
type OverrideView struct {
	Verdict, Reason, SetAt, Expires string
}

// GuidanceView is a method's guidance laid out for reading.
type GuidanceView struct {
	Summary  string
	Payment  string
	Notes    []string
	Example  string
	Sections []GuidanceSection
}

// GuidanceSection is one part of the guidance shown as indented JSON.
type GuidanceSection struct {
	Title, JSON string
}

// StatsView is a hostname's settled-payment stats in words.
type StatsView struct {
	Settled, Delivered, Rate string
}

// ListingView is what the listing a method was imported from reports about it, in
// words; "not given" stands for a figure it does not give.
type ListingView struct {
	Source, Calls, Payers, LastCalled, Updated string
	// Own: the origin lists the method itself, in its own manifest.
	Own bool
}

// MethodView is one method's page.
type MethodView struct {
	Page
	Method   MethodRow
	Endpoint directory.Endpoint
	Trust    TrustView
	Stats    *StatsView
	// Chart is the merchant's last probes; Delivery its delivery rate.
	Chart    *ProbeChart
	Delivery *DeliveryBar
	Listing  *ListingView
	Guidance GuidanceView
}

// MerchantView is one hostname's page: its trust record, stats and probe history.
type MerchantView struct {
	Page
	Hostname string
	// HostText is the hostname as a person reads it (hostText).
	HostText  string
	Providers string
	Trust     TrustView
	Stats     *StatsView
	Methods   []MethodRow
	// Rows are the methods rendered already (see PageCache), in place of Methods.
	Rows     []PageRow
	Probes   []ProbeRow
	Chart    *ProbeChart
	Delivery *DeliveryBar
	// Origin is present when the hostname lists itself.
	Origin *OriginView
	// Demand is present when a listing reports the use of the hostname's methods.
	Demand *DemandView
	// Reports and ServiceDemand are present when anything was reported of the
	// seller, and when the service settled a payment with it in 30 days.
	Reports       *ReportsView
	ServiceDemand *ServiceDemandView
}

// DemandView is a hostname's organic demand as its listings report it, summed over
// its methods.
type DemandView struct {
	Calls, Payers, Methods string
}

// ProbeChart draws a merchant's last probes, oldest to newest: a bar per probe as tall
// as its latency, marked ✓ when the seller answered as it should and ✗ when not, so
// that it reads without colour; Summary says the same in words.
type ProbeChart struct {
	Width, Height int
	Points        []ChartPoint
	Summary       string
	MaxLatency    string
}

// ChartPoint is one probe in a chart.
type ChartPoint struct {
	X, Y, H, MarkY int
	OK             bool
	Mark, Title    string
}

// DeliveryBar draws the share of settled payments that were delivered.
type DeliveryBar struct {
	Width, Filled int
	Label         string
}

// ProbeRow is one probe of a merchant's history.
type ProbeRow struct {
	When, Outcome, Status, Latency, Network, Asset, Price string
}

// SearchView is the search results page.
type SearchView struct {
	Page
	// ListJSON is where the whole list is, which always answers.
	ListJSON  string
	Available bool
	Message   string
	Match     string
	Degraded  bool
	Results   []MethodRow
	// Nearest are the methods nearest the query that are not matches, shown apart
	// from the results.
	Nearest []MethodRow
}

// ProblemView is the human page behind a problem+json type.
type ProblemView struct {
	Page
	Code, Status, Meaning, Remedy string
}

// NotFoundView is the page of a path that has none.
type NotFoundView struct {
	Page
	Path string
}

func newPage(snap *directory.Snapshot, title, description, jsonURL string) Page {
	return Page{Title: title, Description: description, Stylesheet: stylesheetURL, Snapshot: snap.Info(), JSON: jsonURL}
}

// Home builds the home page's view.
func (vs Views) Home(snap *directory.Snapshot) HomeView {
	v := HomeView{
		Page:  newPage(snap, "Waystation seller directory", "Pay-per-call sellers for AI agents, with an advisory trust verdict for each.", vs.DirectoryAPI+"/services"),
		Total: snap.Len(),
	}
	facets := listFacets(snap)
	v.Categories = categoryLinks(facets.Category, "")
	for _, f := range facets.Verdict {
		v.Verdicts = append(v.Verdicts, Link{Label: f.Value, Count: f.Count, URL: vs.DirectoryAPI + "/services?verdict=" + url.QueryEscape(f.Value)})
	}
	methods := snap.Methods()
	pos := make([]int, len(methods))
	for i := range pos {
		pos[i] = i
	}
	for _, p := range bestTrusted(methods, pos)[:min(HomeLimit, len(pos))] {
		v.Methods = append(v.Methods, methodRow(methods[p]))
	}
	return v
}

// bestTrusted orders methods for people: by verdict (proceed, caution, unknown, then
// avoid), then by score, then as the list has them. The API's list keeps its own
// order (score, then slug); a person reads the verdict first.
func bestTrusted(methods []directory.Method, pos []int) []int {
	rank := map[string]int{directory.VerdictProceed: 0, directory.VerdictCaution: 1, directory.VerdictUnknown: 2, directory.VerdictAvoid: 3}
	out := slices.Clone(pos)
	slices.SortStableFunc(out, func(a, b int) int {
		ma, mb := methods[a].Trust, methods[b].Trust
		if d := rank[ma.Verdict] - rank[mb.Verdict]; d != 0 {
			return d
		}
		sa, sb := -1, -1
		if ma.Score != nil {
			sa = *ma.Score
		}
		if mb.Score != nil {
			sb = *mb.Score
		}
		return sb - sa
	})
	return out
}

// networkLabel is a network by name, with its id beside.
func networkLabel(n string) string {
	if name := x402.NetworkName(n); name != "" {
		return name + " (" + n + ")"
	}
	return n
}

// Category builds a category page's view; false when no method is in it.
func (vs Views) Category(snap *directory.Snapshot, category string) (CategoryView, bool) {
	return vs.category(snap, category, nil)
}

// category is Category, its methods rendered through rows when it is not nil.
func (vs Views) category(snap *directory.Snapshot, category string, rows *PageCache) (CategoryView, bool) {
	pos := snap.Matching(directory.Filter{Categories: []string{category}})
	if len(pos) == 0 {
		return CategoryView{}, false
	}
	label := categoryLabel(category)
	v := CategoryView{
		Page:     newPage(snap, label+" sellers", fmt.Sprintf("%d pay-per-call methods in %s, best trusted first.", len(pos), label), vs.DirectoryAPI+"/services?category="+url.QueryEscape(category)),
		Category: category, Label: label,
		Categories: categoryLinks(listFacets(snap).Category, category),
	}
	methods := snap.Methods()
	if rows != nil {
		v.Rows = make([]PageRow, 0, len(pos))
	}
	for _, p := range bestTrusted(methods, pos) {
		if rows != nil {
			v.Rows = append(v.Rows, rows.row(snap, methods[p], snap.MethodAt(p)))
		} else {
			v.Methods = append(v.Methods, methodRow(methods[p]))
		}
	}
	return v, true
}

// Categories lists every category that has a method.
func Categories(snap *directory.Snapshot) []string {
	var out []string
	for _, f := range listFacets(snap).Category {
		out = append(out, f.Value)
	}
	return out
}

// MethodPage builds a method page's view; false for an unknown slug.
func (vs Views) MethodPage(snap *directory.Snapshot, slug string) (MethodView, bool) {
	m, ok := snap.MethodBySlug(slug)
	if !ok {
		return MethodView{}, false
	}
	probes, found := merchantProbes(snap, m.Hostname)
	return vs.methodPage(snap, m, probes, found), true
}

// merchantProbes are the probes of a hostname's merchant record, newest first; false
// when the snapshot has no record of it.
func merchantProbes(snap *directory.Snapshot, hostname string) ([]directory.ProbeRecord, bool) {
	res, ok := snap.Merchant(hostname)
	if !ok {
		return nil, false
	}
	// Only the probes: at a hundred thousand methods a merchant's record lists
	// hundreds of methods, which decoding whole for each method page cost most of the
	// pages' time.
	body, err := res.Bytes()
	if err != nil {
		return nil, false
	}
	var mr struct {
		Probes []directory.ProbeRecord `json:"probes"`
	}
	if json.Unmarshal(body, &mr) != nil {
		return nil, false
	}
	return mr.Probes, true
}

// methodPage is the view of m's page, with its merchant's probes charted when found.
func (vs Views) methodPage(snap *directory.Snapshot, m directory.Method, probes []directory.ProbeRecord, found bool) MethodView {
	v := MethodView{
		Page:     newPage(snap, m.Name+" by "+m.Provider, m.Description, vs.DirectoryAPI+"/services/"+m.Slug),
		Method:   methodRow(m),
		Endpoint: m.Endpoint,
		Trust:    trustView(m.Trust, m.Kind),
		Stats:    statsView(m.Stats),
		Listing:  listingView(m.SourceListing),
		Guidance: guidanceView(m.Guidance),
		Delivery: deliveryBar(m.Stats),
	}
	if found {
		v.Chart = probeChart(probes, m.Kind)
	}
	return v
}

// probeChart draws probes (newest first, as the record lists them); nil for none.
func probeChart(probes []directory.ProbeRecord, kind string) *ProbeChart {
	if len(probes) == 0 {
		return nil
	}
	const bar, gap, height, top = 14, 6, 80, 18
	c := &ProbeChart{Width: len(probes)*(bar+gap) + gap, Height: height + top + 4}
	maxMS := 1
	for _, p := range probes {
		if p.LatencyMS != nil {
			maxMS = max(maxMS, *p.LatencyMS)
		}
	}
	c.MaxLatency = strconv.Itoa(maxMS) + " ms"
	ok, lat := 0, []int{}
	for i := range probes {
		p := probes[len(probes)-1-i]
		good := p.Outcome == trust.OutcomePaymentRequired || (kind != "" && kind != "x402" && p.Outcome == trust.OutcomeNoPaymentRequired)
		pt := ChartPoint{X: gap + i*(bar+gap), OK: good, Mark: "✗"}
		h := 2
		latency := "no answer"
		if p.LatencyMS != nil {
			h = max(2, *p.LatencyMS*height/maxMS)
			latency = strconv.Itoa(*p.LatencyMS) + " ms"
			lat = append(lat, *p.LatencyMS)
		}
		if good {
			ok++
			pt.Mark = "✓"
		}
		pt.Y, pt.H, pt.MarkY = top+height-h, h, top-5
		pt.Title = formatTime(p.ProbedAt) + ": " + outcomeLabel(p.Outcome) + ", " + latency
		c.Points = append(c.Points, pt)
	}
	c.Summary = fmt.Sprintf("The last %d probes, oldest first: %d answered as a seller should, %d did not.", len(probes), ok, len(probes)-ok)
	if len(probes) == 1 {
		c.Summary = "The only probe so far answered as a seller should."
		if ok == 0 {
			c.Summary = "The only probe so far did not answer as a seller should."
		}
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		c.Summary += fmt.Sprintf(" Median latency %d ms, slowest %d ms.", lat[len(lat)/2], lat[len(lat)-1])
	}
	return c
}

// deliveryBar draws a delivery rate; nil under the stats floor.
func deliveryBar(s *directory.Stats) *DeliveryBar {
	if s == nil {
		return nil
	}
	const width = 200
	return &DeliveryBar{Width: width, Filled: int(s.DeliveryRate * width),
		Label: fmt.Sprintf("%.0f%% delivered (%d of %d payments)", s.DeliveryRate*100, s.Delivered, s.SettledPayments)}
}

// MerchantPage builds a merchant page's view; false for a hostname not in the directory.
func (vs Views) MerchantPage(snap *directory.Snapshot, hostname string) (MerchantView, bool) {
	res, ok := snap.Merchant(hostname)
	if !ok {
		return MerchantView{}, false
	}
	body, err := res.Bytes()
	if err != nil {
		return MerchantView{}, false
	}
	var mr directory.Merchant
	if err := json.Unmarshal(body, &mr); err != nil {
		return MerchantView{}, false
	}
	slugs := make([]string, len(mr.Methods))
	for i, e := range mr.Methods {
		slugs[i] = e.Slug
	}
	return vs.merchantPage(snap, merchantRecordView(mr), slugs, nil), true
}

// merchantPage is the view of a merchant's page from what its record alone gives it
// (see merchantRecordView) and the slugs of the methods it lists, rendered through
// rows when it is not nil.
func (vs Views) merchantPage(snap *directory.Snapshot, v MerchantView, slugs []string, rows *PageCache) MerchantView {
	v.Page = newPage(snap, v.HostText, "Trust record, payment stats and probe history of "+v.HostText+".", vs.DirectoryAPI+"/merchants/"+v.Hostname)
	verified, counted := 0, 0
	if rows != nil {
		v.Rows = make([]PageRow, 0, len(slugs))
	}
	methods := snap.Methods()
	for _, slug := range slugs {
		p, ok := snap.Position(slug)
		if !ok {
			continue
		}
		m := methods[p]
		if rows != nil {
			v.Rows = append(v.Rows, rows.row(snap, m, snap.MethodAt(p)))
		} else {
			v.Methods = append(v.Methods, methodRow(m))
		}
		if o := m.Trust.Owner; o != nil && o.Verified {
			verified++
			if o.Points > 0 {
				counted++
			}
		}
	}
	if v.Origin != nil && v.Origin.Owner != "" {
		o := *v.Origin // v's record view may be kept for the next snapshot
		o.OwnerScore = ownerScoreText(verified, counted, len(slugs))
		v.Origin = &o
	}
	return v
}

// merchantRecordView is what a merchant's page shows of its record alone: all but
// the page's frame, its methods and what their owner proofs counted.
func merchantRecordView(mr directory.Merchant) MerchantView {
	v := MerchantView{
		Hostname:      mr.Hostname,
		HostText:      hostText(mr.Hostname),
		Providers:     strings.Join(mr.Providers, ", "),
		Trust:         trustView(mr.Trust, ""),
		Stats:         statsView(mr.Stats),
		Chart:         probeChart(mr.Probes, ""),
		Delivery:      deliveryBar(mr.Stats),
		Reports:       reportsView(mr.Trust.Reports),
		ServiceDemand: serviceDemandView(mr.Trust.Demand),
	}
	if d := mr.ListingDemand; d != nil {
		v.Demand = &DemandView{Calls: strconv.FormatInt(d.Calls30d, 10), Payers: strconv.FormatInt(d.Payers30d, 10), Methods: strconv.Itoa(d.Methods)}
		if d.Methods == 1 {
			v.Demand.Methods = "one of its methods"
		} else {
			v.Demand.Methods += " of its methods"
		}
	}
	if o := mr.Origin; o != nil {
		v.Origin = &OriginView{Origin: o.Origin, Status: o.Status, ListedAt: formatTime(o.ListedAt), CheckedAt: formatTime(o.CheckedAt)}
		if o.Reason != nil {
			v.Origin.Reason = *o.Reason
		}
		if o.Owner != nil {
			v.Origin.Owner = *o.Owner
		}
	}
	for _, p := range mr.Probes {
		row := ProbeRow{When: formatTime(p.ProbedAt), Outcome: outcomeLabel(p.Outcome), Status: "-", Latency: "-", Network: "-", Asset: "-", Price: "-"}
		if p.HTTPStatus != nil {
			row.Status = strconv.Itoa(*p.HTTPStatus)
		}
		if p.LatencyMS != nil {
			row.Latency = strconv.Itoa(*p.LatencyMS) + " ms"
		}
		if p.Network != nil {
			row.Network = networkLabel(*p.Network)
		}
		if p.Asset != nil {
			row.Asset = *p.Asset
			if p.Network != nil {
				if a, ok := x402.LookupAsset(*p.Network, *p.Asset); ok {
					row.Asset = a.Symbol + " (" + *p.Asset + ")"
				}
			}
		}
		if s := priceText(p.Price, nil); s != "" {
			row.Price = s
		}
		if p.Reason != nil {
			row.Outcome += " (" + outcomeLabel(*p.Reason) + ")"
		}
		v.Probes = append(v.Probes, row)
	}
	return v
}

// SearchResult is what a search engine found for a query: the matching slugs, best
// first, and how they matched; and the slugs of the methods nearest the query that
// are not matches, when fewer than three matched.
type SearchResult struct {
	Match    string
	Degraded bool
	Slugs    []string
	Nearest  []string
}

// SearchPage builds the search page's view from a result, or from why there is none.
func (vs Views) SearchPage(snap *directory.Snapshot, query string, res *SearchResult, unavailable string) SearchView {
	title := "Search"
	if query != "" {
		title = "Search: " + query
	}
	v := SearchView{Page: newPage(snap, title, "Search the seller directory in plain words.", ""), ListJSON: vs.DirectoryAPI + "/services"}
	v.Query = query
	switch {
	case unavailable != "":
		v.Message = unavailable
	case res == nil:
		v.Available = true
	default:
		v.Available, v.Match, v.Degraded = true, res.Match, res.Degraded
		for _, s := range res.Slugs {
			if m, ok := snap.MethodBySlug(s); ok {
				v.Results = append(v.Results, methodRow(m))
			}
		}
		for _, s := range res.Nearest {
			if m, ok := snap.MethodBySlug(s); ok {
				v.Nearest = append(v.Nearest, methodRow(m))
			}
		}
	}
	return v
}

// ProblemPage builds the page of a problem code given as in its type URL, with hyphens;
// false for a code that does not exist.
func (vs Views) ProblemPage(snap *directory.Snapshot, slug string) (ProblemView, bool) {
	code := strings.ReplaceAll(slug, "-", "_")
	if strings.Contains(slug, "_") {
		return ProblemView{}, false
	}
	k, ok := problem.Lookup(code)
	if !ok {
		return ProblemView{}, false
	}
	v := ProblemView{
		Page: newPage(snap, k.Title, k.Meaning, ""),
		Code: code, Status: strconv.Itoa(k.Status), Meaning: k.Meaning, Remedy: k.Remedy,
	}
	return v, true
}

// ProblemSlugs lists the problem codes as their pages' URLs spell them.
func ProblemSlugs() []string {
	var out []string
	for _, c := range problem.Codes() {
		out = append(out, problem.Slug(c))
	}
	slices.Sort(out)
	return out
}

func listFacets(snap *directory.Snapshot) directory.Facets {
	var body struct {
		Facets directory.Facets `json:"facets"`
	}
	// An offset past the end gives the facets of the whole list without its items.
	json.Unmarshal(snap.AppendList(nil, directory.Filter{Offset: snap.Len()}), &body)
	return body.Facets
}

func categoryLinks(facets []directory.Facet, current string) []Link {
	var out []Link
	for _, f := range facets {
		out = append(out, Link{Label: categoryLabel(f.Value), URL: "/categories/" + url.PathEscape(f.Value), Count: f.Count, Current: f.Value == current})
	}
	return out
}

var categoryLabels = map[string]string{
	"ai": "AI", "blockchain": "Blockchain", "commerce": "Commerce", "communication": "Communication",
	"data": "Data", "developer": "Developer tools", "finance": "Finance", "geo": "Maps and places",
	"media": "Media", "news": "News", "search": "Search", "security": "Security", "social": "Social",
	"travel": "Travel", "weather": "Weather", "other": "Other",
}

func categoryLabel(c string) string {
	if l, ok := categoryLabels[c]; ok {
		return l
	}
	return c
}

func methodRow(m directory.Method) MethodRow {
	r := MethodRow{
		Slug: m.Slug, Name: m.Name, Provider: m.Provider, Hostname: hostText(m.Hostname), Description: m.Description,
		URL: "/methods/" + m.Slug, MerchantURL: "/merchants/" + m.Hostname,
		Category: categoryLabel(m.Category), CategoryURL: "/categories/" + url.PathEscape(m.Category),
		Kind: m.Kind, Payable: m.Payable, Verdict: m.Trust.Verdict, Score: scoreText(m.Trust, false),
	}
	return r
}

var verdictMeanings = map[string]string{
	directory.VerdictProceed: "Recent probes found this seller answering as it should: it looks fit to call.",
	directory.VerdictCaution: "This seller answers, but not reliably or not consistently: call it if you must, and check what you get.",
	directory.VerdictAvoid:   "Recent probes mostly failed or found no usable offer: better not to call it now.",
	directory.VerdictUnknown: "Nobody has probed this seller in the last three days, so there is nothing recent to judge it by.",
}

var outcomeMeanings = map[string]string{
	trust.OutcomePaymentRequired:   "The endpoint asked for payment with a valid x402 offer, as a pay-per-call seller should.",
	trust.OutcomeInvalidOffer:      "The endpoint asked for payment, but with no offer an x402 client could pay: the offer breaks the x402 v1 or v2 rules, or there is none.",
	trust.OutcomeNoPaymentRequired: "The endpoint answered without asking for payment.",
	trust.OutcomeHTTPError:         "The endpoint answered with an HTTP error.",
	trust.OutcomeTimeout:           "The endpoint did not answer in time.",
	trust.OutcomeTLSError:          "The secure connection to the endpoint failed.",
	trust.OutcomeDNSError:          "The endpoint's hostname did not resolve.",
	trust.OutcomeConnectionRefused: "The endpoint refused the connection.",
	trust.OutcomeBlockedAddress:    "The endpoint resolves to an address the prober does not call (a private or reserved one).",
	trust.OutcomeRedirect:          "The endpoint redirected to another host, which the prober never follows.",
	trust.OutcomeError:             "The probe could not get an answer from the endpoint.",
}

// reasonMeanings say what each x402.Reasons code found wrong with an offer.
var reasonMeanings = map[string]string{
	x402.ReasonNoDocument:     "The answer holds no x402 payment document, neither in the PAYMENT-REQUIRED header nor in the body.",
	x402.ReasonBadHeader:      "The PAYMENT-REQUIRED header is not standard base64.",
	x402.ReasonBadJSON:        "The payment document is not a JSON object.",
	x402.ReasonBadVersion:     "The payment document names no x402 version, or one other than 1 and 2.",
	x402.ReasonWrongTransport: "The payment document is in the wrong place: x402 v2 sends it in the PAYMENT-REQUIRED header, v1 in the body.",
	x402.ReasonBadDocument:    "The payment document's error or extensions member has the wrong type.",
	x402.ReasonNoAccepts:      "The payment document lists no way to pay.",
	x402.ReasonNoResource:     "The offer does not name the resource it is for.",
	x402.ReasonIncompleteTerm: "The offer lacks a field x402 requires (scheme, network, asset, payee, amount, time limit), or has one of the wrong type.",
	x402.ReasonBadAmount:      "The offer's amount is not a string holding a whole number of the asset's smallest units.",
	x402.ReasonMixedVersions:  "The offer mixes x402 v1 and v2: a field or network name of one version in a document of the other.",
	x402.ReasonBadNetwork:     "The offer's network is not a CAIP-2 identifier (v2) or a network name of x402 v1.",
	x402.ReasonUnknownScheme:  "The offer's payment scheme is not one x402 defines on its network.",
	x402.ReasonBadExtra:       "The offer's extra lacks what its scheme needs on its network, such as the token's EIP-712 name and version, or the Solana fee payer.",
	x402.ReasonBadAddress:     "The offer's asset or payee is not an address of its network.",
}

func outcomeLabel(o string) string { return strings.ReplaceAll(o, "_", " ") }

// verdictReason says what decided a verdict, in words: an operator's override, a
// probe too old to count, no probe at all, or the band the score falls in. It never
// explains a verdict by a rule that did not decide it.
func verdictReason(t directory.Trust) string {
	score := "no score"
	if t.Score != nil {
		score = strconv.Itoa(*t.Score)
	}
	switch {
	case t.Override != nil:
		return "An operator decided this verdict, " + t.Override.Verdict + ": " + t.Override.Reason + " While the override lasts, the score (" +
			score + ") does not decide it."
	case t.Probe == nil:
		return "Not yet probed: Waystation has not called this seller yet, so there is nothing to judge it by, and nothing but the listing says what it asks to be paid. The prober reaches it on its schedule."
	case t.Verdict == directory.VerdictUnknown:
		return "The newest probe is older than three days (" + formatAge(t.Probe.AgeSeconds) + " before this snapshot), so the verdict is unknown: the old score, " +
			score + ", no longer counts."
	case t.Verdict == directory.VerdictProceed:
		return "The score, " + score + " out of 100, is in the proceed band (70 or more). " + verdictMeanings[t.Verdict]
	case t.Verdict == directory.VerdictCaution:
		return "The score, " + score + " out of 100, is in the caution band (40 to 69). " + verdictMeanings[t.Verdict]
	default:
		return "The score, " + score + " out of 100, is in the avoid band (under 40). " + verdictMeanings[t.Verdict]
	}
}

// scoreText is the score as it should be read: a stale or overridden one says so.
func scoreText(t directory.Trust, long bool) string {
	if t.Score == nil {
		switch {
		case t.NotYetProbed && long:
			return "none: not yet probed"
		case t.NotYetProbed:
			return "not yet probed"
		case long:
			return "none"
		}
		return "no score"
	}
	n := strconv.Itoa(*t.Score)
	switch {
	case t.Override != nil && long:
		return n + " out of 100 (overridden: it does not decide the verdict)"
	case t.Override != nil:
		return n + "/100, overridden"
	case t.Verdict == directory.VerdictUnknown && long:
		return n + " out of 100 (stale: no probe in three days; it does not count)"
	case t.Verdict == directory.VerdictUnknown:
		return "stale " + n + "/100"
	case long:
		return n + " out of 100"
	}
	return n + "/100"
}

func trustView(t directory.Trust, kind string) TrustView {
	v := TrustView{Verdict: t.Verdict, VerdictMeaning: verdictReason(t), Score: scoreText(t, true)}
	v.RuleSteps, v.RuleNotes = ruleText(trust.Rule)
	v.Lookalike = lookalikeView(t.Lookalike)
	if o := t.Owner; o != nil && o.Verified {
		v.Owner = &OwnerView{PayTo: o.PayTo, Origin: o.Origin, Points: o.Points}
	}
	if p := t.Probe; p != nil {
		v.Probed = true
		v.Outcome = outcomeLabel(p.Outcome)
		v.OutcomeMeaning = outcomeMeanings[p.Outcome]
		if kind != "" && kind != "x402" && p.Outcome == trust.OutcomeNoPaymentRequired {
			v.OutcomeMeaning = "The endpoint answered; a " + kind + " seller is not expected to ask for payment up front."
		}
		if p.Reason != nil {
			v.Reason = outcomeLabel(*p.Reason)
			if m, ok := reasonMeanings[*p.Reason]; ok {
				v.Reason += ": " + m
			}
			v.OutcomeMeaning += " Why: " + v.Reason
		}
		v.ProbedAt = formatTime(p.ProbedAt)
		v.Age = formatAge(p.AgeSeconds)
		v.Network, v.Asset = "not advertised", "not advertised"
		if p.Network != nil {
			v.Network = networkLabel(*p.Network)
		}
		if p.Asset != nil {
			v.Asset = *p.Asset
			if p.AssetSymbol != nil {
				v.Asset = *p.AssetSymbol + " (" + *p.Asset + ")"
			}
		}
		v.Price = priceText(p.Price, p.AssetSymbol)
		switch {
		case v.Price != "":
		case p.Outcome == trust.OutcomePaymentRequired:
			v.Price = "no fixed price: the offer names only the most a call may cost (scheme upto)"
		default:
			v.Price = "not advertised"
		}
	}
	if o := t.Override; o != nil {
		v.Override = &OverrideView{Verdict: o.Verdict, Reason: o.Reason, SetAt: formatTime(o.SetAt), Expires: "until an operator lifts it"}
		if o.ExpiresAt != nil {
			v.Override.Expires = "until " + formatTime(*o.ExpiresAt)
		}
	}
	return v
}

// ruleText splits the scoring rule into its numbered steps and the paragraphs after.
// ownerScoreText says how an origin's proof of ownership counted in the scores of
// its hostname's methods: verified of them still name the payee that signed, counted
// of those gained the points (step 6 of the rule).
func ownerScoreText(verified, counted, methods int) string {
	if verified == 0 {
		return "No method's newest valid offer names that payee now: none is owner-verified, and the proof adds nothing to the score."
	}
	return fmt.Sprintf("Owner-verified: %d of %d methods. The proof added %d points to the score of %d of them (those whose newest probe got a valid offer; see step 6 of the rule), and the score here is the mean of the methods'.",
		verified, methods, trust.OwnerPoints, counted)
}

func ruleText(rule string) (steps, notes []string) {
	for line := range strings.SplitSeq(rule, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		num, rest, ok := strings.Cut(line, ". ")
		if _, err := strconv.Atoi(num); ok && err == nil {
			steps = append(steps, rest)
		} else {
			notes = append(notes, line)
		}
	}
	return steps, notes
}

func priceText(p *directory.Price, symbol *string) string {
	if p == nil {
		return ""
	}
	switch {
	case p.Value != nil && symbol != nil:
		return *p.Value + " " + *symbol + " per call"
	case p.Value != nil:
		return *p.Value + " per call"
	case p.Amount != nil:
		return *p.Amount + " atomic units per call"
	}
	return ""
}

func statsView(s *directory.Stats) *StatsView {
	if s == nil {
		return nil
	}
	return &StatsView{
		Settled:   strconv.Itoa(s.SettledPayments),
		Delivered: strconv.Itoa(s.Delivered),
		Rate:      strconv.FormatFloat(s.DeliveryRate*100, 'f', 1, 64) + "%",
	}
}

// listingSources names the listings methods are imported from.
var listingSources = map[string]string{"x402-bazaar": "x402 Bazaar", catalog.SourceOrigin: "origin's own"}

func listingView(l *directory.Listing) *ListingView {
	if l == nil {
		return nil
	}
	v := &ListingView{Source: l.Source, Calls: "not given", Payers: "not given", LastCalled: "not given", Updated: "not given",
		Own: l.Source == catalog.SourceOrigin}
	if name, ok := listingSources[l.Source]; ok {
		v.Source = name
	}
	if l.Calls30d != nil {
		v.Calls = strconv.FormatInt(*l.Calls30d, 10)
	}
	if l.Payers30d != nil {
		v.Payers = strconv.FormatInt(*l.Payers30d, 10)
	}
	if l.LastCalledAt != nil {
		v.LastCalled = formatTime(*l.LastCalledAt)
	}
	if l.UpdatedAt != nil {
		v.Updated = formatTime(*l.UpdatedAt)
	}
	return v
}

func guidanceView(raw json.RawMessage) GuidanceView {
	var g map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &g) != nil {
		return GuidanceView{}
	}
	var v GuidanceView
	str := func(key string) string {
		var s string
		if json.Unmarshal(g[key], &s) == nil {
			delete(g, key)
		}
		return s
	}
	v.Summary = str("summary")
	v.Payment = str("payment")
	if json.Unmarshal(g["notes"], &v.Notes) == nil {
		delete(g, "notes")
	} else if n := str("notes"); n != "" {
		v.Notes = []string{n}
	}
	if req, ok := g["request"]; ok {
		var r map[string]json.RawMessage
		if json.Unmarshal(req, &r) == nil {
			if json.Unmarshal(r["example"], &v.Example) == nil {
				delete(r, "example")
				req, _ = json.Marshal(r)
				g["request"] = req
			}
		}
	}
	keys := make([]string, 0, len(g))
	for k := range g {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if oa, ob := guidanceOrder(a), guidanceOrder(b); oa != ob {
			return oa - ob
		}
		return strings.Compare(a, b)
	})
	for _, k := range keys {
		var out bytes.Buffer
		if json.Indent(&out, g[k], "", "  ") != nil || out.String() == "null" {
			continue
		}
		v.Sections = append(v.Sections, GuidanceSection{Title: strings.ToUpper(k[:1]) + strings.ReplaceAll(k[1:], "_", " "), JSON: out.String()})
	}
	return v
}

func guidanceOrder(k string) int {
	switch k {
	case "request":
		return 0
	case "response":
		return 1
	}
	return 2
}

func formatTime(t time.Time) string { return t.UTC().Format("2 Jan 2006 15:04 UTC") }

// formatAge says how old a probe was when the snapshot was made, in the largest unit
// that fits.
func formatAge(sec int64) string {
	d := time.Duration(sec) * time.Second
	plural := func(n int64, unit string) string {
		if n == 1 {
			return "1 " + unit
		}
		return strconv.FormatInt(n, 10) + " " + unit + "s"
	}
	switch {
	case d < time.Minute:
		return "under a minute"
	case d < time.Hour:
		return plural(int64(d/time.Minute), "minute")
	case d < 48*time.Hour:
		return plural(int64(d/time.Hour), "hour")
	}
	return plural(int64(d/(24*time.Hour)), "day")
}

// hostText is a hostname as a person reads it: an internationalised one (punycode,
// xn--) in its own script, with its ASCII form beside it, so that a look-alike of
// another script is never shown alone; any other as it is.
func hostText(h string) string {
	if !strings.Contains(h, "xn--") {
		return h
	}
	u, err := idna.Display.ToUnicode(h)
	if err != nil || u == h {
		return h
	}
	return u + " (" + h + ")"
}
