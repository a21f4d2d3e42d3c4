package catalog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/waystation/waystation/internal/x402"
	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"
)

const (
	// maxBazaarFile is the largest file ParseBazaar reads.
	maxBazaarFile = 256 << 20
	// maxBazaarLine is the longest line ParseBazaar reads; a longer line is skipped.
	maxBazaarLine = 16 << 20
)

// LineError reports an item of a Bazaar file, or of a page of a discovery endpoint,
// that could not be read.
type LineError struct {
	Line int // 1-based line of a file where the item (or its list) starts; 0 on a page
	Page int // 1-based page of a sync; 0 in a file
	Item int // 1-based place among a list response's items; 0 for an item on its own
	Err  error
}

func (e LineError) Error() string {
	var b strings.Builder
	if e.Page > 0 {
		fmt.Fprintf(&b, "page %d", e.Page)
	} else {
		fmt.Fprintf(&b, "line %d", e.Line)
	}
	if e.Item > 0 {
		fmt.Fprintf(&b, ", item %d", e.Item)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

// Unwrap returns the reason the item was skipped.
func (e LineError) Unwrap() error { return e.Err }

// ParseBazaar reads a Bazaar discovery file and returns the catalog of what it could
// read plus one LineError per item it skipped. Only an error reading r, or a file
// over 256 MiB, is returned as err.
//
// The file holds what the discovery API serves, in any of its forms: one item per
// line (as listing snapshots are kept), one list response per line
// ({x402Version, items, pagination}: pages as fetched), or one list response spread
// over many lines. A line that is not JSON is skipped alone. A line of the Bazaar's
// event log ({resource, description, last_event, ...}, told by its last_event) may
// stand among them: a listed resource is a sparse method, a delisted one a
// Delisting of the catalog (see addEvent).
//
// Each item becomes one x402 Method; an MCP server lists each tool as an item of its
// own, and (resource, tool) tells them apart. Methods are grouped into providers by
// the item's serviceName, else by the registrable domain of their hostname
// (providers in order of first appearance, methods in file order). A method listed
// twice keeps the later item, in the place of the first. Slugs depend only on the
// file: derived from the resource URL (and tool), with a short hash of the key
// appended when an earlier item already took the slug.
func ParseBazaar(r io.Reader) (cat Catalog, skipped []LineError, err error) {
	data, err := io.ReadAll(io.LimitReader(r, maxBazaarFile+1))
	if err != nil {
		return Catalog{}, nil, err
	}
	if len(data) > maxBazaarFile {
		return Catalog{}, nil, fmt.Errorf("catalog: a Bazaar file holds at most %d bytes", maxBazaarFile)
	}
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	lines := newBazaarBuilder()
	if !spansLines(data) {
		lines.addLines(data)
		return lines.catalog(), lines.skipped, nil
	}
	// The first value does not end on its line: one document over many lines, or a
	// broken first line. Whichever reading recovers more wins.
	doc := newBazaarBuilder()
	doc.addDocument(data)
	if len(doc.skipped) > 0 {
		lines.addLines(data)
		if len(lines.items) > len(doc.items) || len(lines.items) == len(doc.items) && len(lines.skipped) < len(doc.skipped) {
			return lines.catalog(), lines.skipped, nil
		}
	}
	return doc.catalog(), doc.skipped, nil
}

// spansLines reports whether the first value of data is an object that does not
// end on its own line.
func spansLines(data []byte) bool {
	for len(data) > 0 {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte("\n"))
		if v := bytes.TrimSpace(line); len(v) > 0 {
			return v[0] == '{' && len(line) <= maxBazaarLine && !json.Valid(v)
		}
	}
	return false
}

// addLines reads one value per line: an item or a list response.
func (b *bazaarBuilder) addLines(data []byte) {
	for lineNo := 1; len(data) > 0; lineNo++ {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte("\n"))
		if len(line) > maxBazaarLine {
			b.skip(LineError{Line: lineNo}, fmt.Errorf("line longer than %d bytes", maxBazaarLine))
			continue
		}
		if v := bytes.TrimSpace(line); len(v) > 0 {
			b.addValue(v, LineError{Line: lineNo})
		}
	}
}

// addDocument reads JSON values spread over lines. A syntax error ends the reading:
// what follows it cannot be told apart.
func (b *bazaarBuilder) addDocument(data []byte) {
	lineAt := func(off int64) int { return 1 + bytes.Count(data[:off], []byte("\n")) }
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		start := dec.InputOffset()
		var v json.RawMessage
		err := dec.Decode(&v)
		if err == io.EOF {
			return
		}
		if err != nil {
			off := start
			var syn *json.SyntaxError
			if errors.As(err, &syn) {
				off = min(syn.Offset, int64(len(data)))
			}
			b.skip(LineError{Line: lineAt(off)}, fmt.Errorf("invalid JSON: %w", err))
			return
		}
		// The value starts after the white space before it.
		rest := data[start:]
		start += int64(len(rest) - len(bytes.TrimLeft(rest, " \t\r\n")))
		b.addValue(v, LineError{Line: lineAt(start)})
	}
}

// bazaarBuilder gathers the items of a listing as they are read, from a file or page
// by page, and makes the catalog once all are in.
type bazaarBuilder struct {
	items   []parsedItem
	byKey   map[string]int
	skipped []LineError
	// delisted holds the resources an event log says left the listing, by key, in
	// the order first read; a later item of the same key takes it back.
	delisted    map[string]bool
	delistOrder []string
}

func newBazaarBuilder() *bazaarBuilder {
	return &bazaarBuilder{byKey: map[string]int{}, delisted: map[string]bool{}}
}

func (b *bazaarBuilder) skip(at LineError, err error) {
	at.Err = err
	b.skipped = append(b.skipped, at)
}

// addValue reads one JSON value: an item, or a list response and its items.
func (b *bazaarBuilder) addValue(raw []byte, at LineError) {
	it, err := decodeItem(raw)
	if err != nil {
		b.skip(at, err)
		return
	}
	if present(it.LastEvent) {
		b.addEvent(it, at)
		return
	}
	if it.isList() {
		page, err := it.listPage()
		if err != nil {
			b.skip(at, err)
			return
		}
		for i, e := range page.Items {
			at.Item = i + 1
			b.addItem(e, at)
		}
		return
	}
	p, err := it.parse()
	if err != nil {
		b.skip(at, err)
		return
	}
	b.put(p)
}

// addItem reads one item of a list response and reports the key of the method it
// made, if any.
func (b *bazaarBuilder) addItem(raw []byte, at LineError) (key string, ok bool) {
	p, err := parseBazaarItem(raw)
	if err != nil {
		b.skip(at, err)
		return "", false
	}
	b.put(p)
	return p.key(), true
}

// put keeps an item; a later item with the same key replaces the earlier one in its
// place.
func (b *bazaarBuilder) put(p parsedItem) {
	delete(b.delisted, p.key())
	if i, ok := b.byKey[p.key()]; ok {
		b.items[i] = p
		return
	}
	b.byKey[p.key()] = len(b.items)
	b.items = append(b.items, p)
}

// catalog groups the items into providers and gives each method a unique slug.
func (b *bazaarBuilder) catalog() Catalog {
	var cat Catalog
	taken := make(map[string]bool, len(b.items))
	provIndex := map[string]int{}
	for _, it := range b.items {
		if it.gone {
			continue
		}
		m := it.method
		m.Slug = uniqueSlug(it.slug, it.key(), taken)
		taken[m.Slug] = true
		pi, ok := provIndex[it.provider]
		if !ok {
			pi = len(cat.Providers)
			provIndex[it.provider] = pi
			cat.Providers = append(cat.Providers, Provider{Name: it.provider})
		}
		cat.Providers[pi].Methods = append(cat.Providers[pi].Methods, m)
	}
	for _, key := range b.delistOrder {
		if b.delisted[key] {
			cat.Delisted = append(cat.Delisted, Delisting{Source: SourceBazaar, SourceKey: key})
		}
	}
	return cat
}

// parsedItem is one item as read, before slugs are made unique.
type parsedItem struct {
	method   Method
	provider string
	slug     string
	// gone is set when a later line of an event log delisted the item.
	gone bool
}

// key identifies the method within its source: the resource URL, and the tool for
// an MCP server's tool.
func (p *parsedItem) key() string {
	if p.method.Tool == "" {
		return p.method.SourceKey
	}
	return p.method.SourceKey + "\n" + p.method.Tool
}

// bazaarItem is the part of a Bazaar discovery item the importer reads, and of a
// list response, which the same decoding recognises by its items. Fields other than
// resource are read leniently: a value of the wrong type is ignored. Its accepts
// entries are x402 payment requirements, v1 or v2.
type bazaarItem struct {
	Resource      json.RawMessage `json:"resource"`
	URL           json.RawMessage `json:"url"`
	Type          x402.String     `json:"type"`
	Description   x402.String     `json:"description"`
	MimeType      x402.String     `json:"mimeType"`
	Method        x402.String     `json:"method"`
	ServiceName   x402.String     `json:"serviceName"`
	Tags          json.RawMessage `json:"tags"`
	Quality       json.RawMessage `json:"quality"`
	LastUpdated   json.RawMessage `json:"lastUpdated"`
	Accepts       json.RawMessage `json:"accepts"`
	OutputSchema  json.RawMessage `json:"outputSchema"`
	Extensions    json.RawMessage `json:"extensions"`
	DiscoveryInfo json.RawMessage `json:"discoveryInfo"`

	// A line of the Bazaar's event log: {resource, description, truncated,
	// first_date, last_event, last_date} (see events.go).
	LastEvent json.RawMessage `json:"last_event"`
	LastDate  json.RawMessage `json:"last_date"`

	// A list response: {x402Version, items, pagination}; some facilitators answer
	// {resources, total, limit, offset} instead.
	Items      json.RawMessage `json:"items"`
	Resources  json.RawMessage `json:"resources"`
	Pagination json.RawMessage `json:"pagination"`
	Total      json.RawMessage `json:"total"`
	Limit      json.RawMessage `json:"limit"`
	Offset     json.RawMessage `json:"offset"`
}

func decodeItem(raw []byte) (*bazaarItem, error) {
	var it bazaarItem
	if err := json.Unmarshal(raw, &it); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	return &it, nil
}

// present reports whether a member was given a value other than null.
func present(raw json.RawMessage) bool {
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
}

// isList reports whether the value is a list response rather than an item.
func (it *bazaarItem) isList() bool {
	return !present(it.Resource) && !present(it.URL) && (present(it.Items) || present(it.Resources))
}

// listPage is a discovery list response: its items and what it says of paging.
type listPage struct {
	Items []json.RawMessage
	// Limit, Offset and Total are as the response gives them, -1 when it does not.
	Limit, Offset, Total int
}

func (it *bazaarItem) listPage() (listPage, error) {
	items := it.Items
	if !present(items) {
		items = it.Resources
	}
	p := listPage{Limit: -1, Offset: -1, Total: -1}
	if json.Unmarshal(items, &p.Items) != nil {
		return p, errors.New("items is not a list")
	}
	var pg struct{ Limit, Offset, Total json.RawMessage }
	if json.Unmarshal(it.Pagination, &pg) != nil || !present(it.Pagination) {
		pg.Limit, pg.Offset, pg.Total = it.Limit, it.Offset, it.Total
	}
	p.Limit, p.Offset, p.Total = readCount(pg.Limit), readCount(pg.Offset), readCount(pg.Total)
	return p, nil
}

// readCount reads a non-negative integer that fits an int; anything else is -1.
func readCount(raw json.RawMessage) int {
	s, ok := x402.ReadAmount(raw)
	if !ok {
		return -1
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return -1
	}
	return int(n)
}

func parseBazaarItem(raw []byte) (parsedItem, error) {
	it, err := decodeItem(raw)
	if err != nil {
		return parsedItem{}, err
	}
	return it.parse()
}

// maxProviderName is the longest a provider's name from serviceName gets, in
// characters; maxToolName the longest MCP tool name kept.
const (
	maxProviderName = 100
	maxToolName     = 200
)

// parse makes a method of the item. An x402 v1 item may leave resource, description,
// mimeType and outputSchema to its first accepts entry, where v1 put them.
func (it *bazaarItem) parse() (parsedItem, error) {
	accepts := x402.ReadRequirements(it.Accepts)
	var first x402.Requirement
	if len(accepts) > 0 {
		first = accepts[0]
	}
	resource, err := it.resourceURL(&first)
	if err != nil {
		return parsedItem{}, err
	}
	u, host, err := parseResource(resource)
	if err != nil {
		return parsedItem{}, err
	}
	provider := collapseSpace(truncateWords(collapseSpace(string(it.ServiceName)), maxProviderName))
	if provider == "" {
		if provider, err = publicsuffix.EffectiveTLDPlusOne(host); err != nil {
			if !strings.Contains(host, ".") {
				return parsedItem{}, fmt.Errorf("resource URL: hostname %q has no registrable domain", host)
			}
			provider = host // the hostname is itself a public suffix
		}
	}

	info := readDiscovery(it, &first)
	desc := collapseSpace(string(it.Description))
	if desc == "" {
		desc = collapseSpace(string(first.Description))
	}
	m := Method{
		Kind:      KindX402,
		SourceKey: resource,
		Source:    SourceBazaar,
		Listing:   it.listing(),
	}
	var name string
	if info.mcp() || strings.EqualFold(string(it.Type), "mcp") {
		// An MCP server's tools are each called with a JSON-RPC POST to its one URL.
		m.Endpoint = Endpoint{Method: "POST", URL: resource}
		m.Tool = collapseSpace(truncateWords(collapseSpace(info.input.Tool), maxToolName))
		if toolDesc := collapseSpace(info.input.Description); m.Tool != "" && toolDesc != "" {
			desc = toolDesc
			name = deriveName(desc, "")
		} else if m.Tool != "" {
			name = truncateWords(strings.Join(strings.FieldsFunc(m.Tool, func(r rune) bool {
				return r == '_' || r == '-' || r == '.' || r == ' '
			}), " "), maxNameLen)
		}
	} else {
		m.Endpoint = Endpoint{Method: httpMethod(it, accepts), URL: resource}
	}
	if name == "" {
		name = deriveName(desc, u.Path)
	}
	m.Name, m.Description = name, desc
	for _, a := range accepts {
		m.Offers = append(m.Offers, offerOf(&a))
	}
	category, fromTags := tagCategory(readTags(it.Tags))
	if !fromTags {
		if m.Tool != "" {
			// "mcp" in an MCP server's URL says how it is called, not what about;
			// the tool's name says more.
			category = inferCategory(desc+" "+m.Tool, m.Name, dropLabel(host, "mcp"), dropLabel(u.Path, "mcp"))
		} else {
			category = inferCategory(desc, m.Name, host, u.Path)
		}
	}
	m.Category = category

	mime := collapseSpace(string(it.MimeType))
	if mime == "" {
		mime = collapseSpace(string(first.MimeType))
	}
	m.Guidance = buildGuidance(&m, info, mime)

	slug := baseSlug(host, u.Path)
	if m.Tool != "" {
		if t := Slugify(m.Tool); t != "" {
			slug = truncateSlug(truncateSlug(slug, maxSlugLen/2)+"-"+t, maxSlugLen)
		}
	}
	return parsedItem{method: m, provider: provider, slug: slug}, nil
}

// resourceURL is the item's resource: a URL string (or, leniently, an object with a
// url, as x402 v2 documents carry it, or a url member), else the first accepts
// entry's resource, where x402 v1 put it.
func (it *bazaarItem) resourceURL(first *x402.Requirement) (string, error) {
	var resource string
	switch {
	case present(it.Resource):
		if json.Unmarshal(it.Resource, &resource) != nil {
			var obj struct {
				URL *string `json:"url"`
			}
			if json.Unmarshal(it.Resource, &obj) != nil || obj.URL == nil {
				return "", errors.New("resource is not a string")
			}
			resource = *obj.URL
		}
	case present(it.URL):
		if json.Unmarshal(it.URL, &resource) != nil {
			return "", errors.New("url is not a string")
		}
	default:
		resource = string(first.Resource)
		if resource == "" {
			return "", errors.New("no resource URL")
		}
	}
	resource = strings.TrimSpace(resource)
	if resource == "" && first.Resource != "" {
		resource = string(first.Resource)
	}
	return resource, nil
}

// listing reads the listing's own facts: quality counts and the last update.
func (it *bazaarItem) listing() *Listing {
	var q struct {
		Calls        json.RawMessage `json:"l30DaysTotalCalls"`
		Payers       json.RawMessage `json:"l30DaysUniquePayers"`
		LastCalledAt json.RawMessage `json:"lastCalledAt"`
	}
	_ = json.Unmarshal(it.Quality, &q) // a quality of the wrong shape counts as none
	return &Listing{
		Calls30d:     readCounter(q.Calls),
		Payers30d:    readCounter(q.Payers),
		LastCalledAt: readTime(q.LastCalledAt),
		UpdatedAt:    readTime(it.LastUpdated),
	}
}

// readCounter reads a count a listing reports: a non-negative integer, nil otherwise.
func readCounter(raw json.RawMessage) *int64 {
	s, ok := x402.ReadAmount(raw)
	if !ok {
		return nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return nil
	}
	return &n
}

// readTime reads an RFC 3339 date-time (or whole Unix seconds, as some facilitators
// write lastUpdated) between 1970 and 9999, in UTC to the microsecond as PostgreSQL
// keeps it; anything else is nil.
func readTime(raw json.RawMessage) *time.Time {
	var t time.Time
	var s string
	if json.Unmarshal(raw, &s) == nil {
		v, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(s))
		if err != nil {
			return nil
		}
		t = v
	} else if secs, ok := x402.ReadAmount(raw); ok {
		n, err := strconv.ParseInt(secs, 10, 64)
		if err != nil {
			return nil
		}
		t = time.Unix(n, 0)
	} else {
		return nil
	}
	t = t.UTC().Truncate(time.Microsecond)
	if t.Year() < 1970 || t.Year() > 9999 {
		return nil
	}
	return &t
}

// maxTags bounds how many of an item's tags are read.
const maxTags = 32

// readTags reads a list of tag strings; other values are ignored.
func readTags(raw json.RawMessage) []string {
	var elems []json.RawMessage
	if json.Unmarshal(raw, &elems) != nil {
		return nil
	}
	var tags []string
	for _, e := range elems {
		var s string
		if json.Unmarshal(e, &s) == nil {
			if s = collapseSpace(s); s != "" && len(tags) < maxTags {
				tags = append(tags, s)
			}
		}
	}
	return tags
}

// parseResource checks a resource URL and returns it parsed with its normalised
// hostname.
func parseResource(resource string) (*url.URL, string, error) {
	if resource == "" {
		return nil, "", errors.New("empty resource URL")
	}
	// url.Parse refuses control characters before the fragment only; PostgreSQL
	// cannot keep a NUL anywhere.
	if strings.ContainsFunc(resource, unicode.IsControl) {
		return nil, "", errors.New("resource URL: holds a control character")
	}
	u, err := url.Parse(resource)
	if err != nil {
		return nil, "", fmt.Errorf("resource URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, "", fmt.Errorf("resource URL: scheme %q is not http or https", u.Scheme)
	}
	if u.Host == "" {
		return nil, "", errors.New("resource URL: no hostname")
	}
	if u.User != nil {
		return nil, "", errors.New("resource URL: carries user information")
	}
	host, err := NormalizeHostname(u.Hostname())
	if err != nil {
		return nil, "", fmt.Errorf("resource URL: hostname: %w", err)
	}
	return u, host, nil
}

func offerOf(a *x402.Requirement) Offer {
	o := Offer{
		Scheme:            collapseSpace(string(a.Scheme)),
		Network:           collapseSpace(string(a.Network)),
		Asset:             collapseSpace(string(a.Asset)),
		PayTo:             collapseSpace(string(a.PayTo)),
		MaxTimeoutSeconds: x402.ReadSeconds(a.MaxTimeoutSeconds),
		MimeType:          collapseSpace(string(a.MimeType)),
	}
	if amt, ok := a.AtomicAmount(); ok {
		o.Amount = &amt
	}
	// PostgreSQL's jsonb holds neither NUL nor invalid UTF-8, so such an extra is
	// dropped.
	if extra := bytes.TrimSpace(a.Extra); len(extra) > 0 && !bytes.Equal(extra, []byte("null")) &&
		utf8.Valid(extra) && !bytes.Contains(extra, []byte(`\u0000`)) {
		var buf bytes.Buffer
		if json.Compact(&buf, extra) == nil {
			o.Extra = json.RawMessage(buf.Bytes())
		}
	}
	return o
}

// httpMethod finds the HTTP method an item declares: the item's own "method", the
// Bazaar extension's (or the listed discovery info's) or the output schema's input
// method (item or accepts level), or a "method" in an accepts entry's extra. The
// default is GET.
func httpMethod(it *bazaarItem, accepts []x402.Requirement) string {
	if m, ok := validHTTPMethod(string(it.Method)); ok {
		return m
	}
	cands := []json.RawMessage{
		jsonPath(it.Extensions, "bazaar", "info", "input", "method"),
		jsonPath(it.DiscoveryInfo, "input", "method"),
		jsonPath(it.OutputSchema, "input", "method"),
	}
	for _, a := range accepts {
		cands = append(cands,
			jsonPath(a.OutputSchema, "input", "method"),
			jsonPath(a.Extra, "method"),
			jsonPath(a.Extra, "input", "method"),
		)
	}
	for _, c := range cands {
		var s string
		if c != nil && json.Unmarshal(c, &s) == nil {
			if m, ok := validHTTPMethod(s); ok {
				return m
			}
		}
	}
	return "GET"
}

// jsonPath returns the value at the path of object keys in raw, or nil.
func jsonPath(raw json.RawMessage, keys ...string) json.RawMessage {
	for _, k := range keys {
		if len(raw) == 0 {
			return nil
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return nil
		}
		raw = obj[k]
	}
	return raw
}

func validHTTPMethod(s string) (string, bool) {
	switch m := strings.ToUpper(strings.TrimSpace(s)); m {
	case "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS":
		return m, true
	}
	return "", false
}

// collapseSpace trims s, replaces each run of white space with one space and drops
// control characters (PostgreSQL text cannot hold NUL).
func collapseSpace(s string) string {
	clean := true
	for _, r := range s {
		if unicode.IsControl(r) && !unicode.IsSpace(r) {
			clean = false
			break
		}
	}
	if !clean {
		s = strings.Map(func(r rune) rune {
			if unicode.IsControl(r) && !unicode.IsSpace(r) {
				return -1
			}
			return r
		}, s)
	}
	return strings.Join(strings.Fields(s), " ")
}

// maxNameLen is the longest a derived method name gets, in characters.

const maxNameLen = 60

// nameSeparators end the first clause of a description, which becomes the name.
var nameSeparators = []string{" - ", " – ", " — ", " | ", ": ", ". ", "; ", "! ", "? "}

// deriveName makes a short human name from a description: its first clause, cut to
// maxNameLen characters on a word boundary. A clause of a single word (often just a
// brand) gets the URL path's words appended; an empty description gives the path.
func deriveName(desc, path string) string {
	s := strings.TrimLeftFunc(desc, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '$' && r != '"' && r != '\''
	})
	end := len(s)
	for _, sep := range nameSeparators {
		if i := indexSeparator(s, sep); i >= 0 && i < end {
			end = i
		}
	}
	s = strings.TrimRight(s[:end], " .:;,!?|-–—")
	words := pathWords(path)
	if s == "" {
		s = words
	} else if !strings.Contains(s, " ") && words != "" && !strings.EqualFold(s, words) {
		s += " " + words
	}
	if s == "" {
		return "Untitled"
	}
	s = truncateWords(s, maxNameLen)
	// An unclosed parenthesis is cut off when more than a word is left.
	if i := strings.LastIndex(s, " ("); i > 0 && !strings.Contains(s[i:], ")") && strings.Contains(s[:i], " ") {
		s = strings.TrimRight(s[:i], " .:;,!?|-–—")
	}
	return s
}

// indexSeparator is strings.Index, except that ". " after a common abbreviation
// ("e.g.", "vs.") does not end a clause.
func indexSeparator(s, sep string) int {
	if sep != ". " {
		return strings.Index(s, sep)
	}
	for off := 0; ; {
		i := strings.Index(s[off:], sep)
		if i < 0 {
			return -1
		}
		i += off
		word := strings.ToLower(strings.TrimLeft(s[strings.LastIndexByte(s[:i], ' ')+1:i], "("))
		switch word {
		case "vs", "etc", "incl", "approx", "no", "e.g", "i.e", "cf", "ca":
		default:
			return i
		}
		off = i + len(sep)
	}
}

// pathWords turns a URL path into words: segments other than templates, "api" and
// versions, with punctuation as spaces.
func pathWords(path string) string {
	var b strings.Builder
	for _, seg := range pathSegments(path) {
		for _, w := range strings.FieldsFunc(seg, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(w)
		}
	}
	return b.String()
}

// truncateWords cuts s to at most n characters, at a space when there is one.
func truncateWords(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	cut, count := len(s), 0
	for i := range s {
		if count == n {
			cut = i
			break
		}
		count++
	}
	t := s[:cut]
	if s[cut] != ' ' {
		if i := strings.LastIndexByte(t, ' '); i > 0 {
			t = t[:i]
		}
	}
	return strings.TrimRight(t, " .:;,!?|-–—(&/")
}

// pathSegments returns the meaningful segments of a URL path: template segments
// (":hash", "{id}", "<id>", "[id]", "*"), "api" and version segments ("v1") are
// dropped.
func pathSegments(path string) []string {
	var out []string
	for seg := range strings.SplitSeq(path, "/") {
		if seg == "" || isTemplateSegment(seg) || strings.EqualFold(seg, "api") || isVersionSegment(seg) {
			continue
		}
		out = append(out, seg)
	}
	return out
}

func isTemplateSegment(seg string) bool {
	switch seg[0] {
	case ':', '*', '$', '{', '<', '[':
		return true
	}
	return false
}

func isVersionSegment(seg string) bool {
	if len(seg) < 2 || (seg[0] != 'v' && seg[0] != 'V') {
		return false
	}
	for i := 1; i < len(seg); i++ {
		if seg[i] < '0' || seg[i] > '9' {
			return false
		}
	}
	return true
}

// maxSlugLen is the longest slug the importer makes.
const maxSlugLen = 64

// baseSlug derives a method's slug from its hostname and URL path: the hostname
// without a leading "api." or "www." and without its public suffix, then the path's
// meaningful segments, cut to maxSlugLen on a hyphen.
func baseSlug(host, path string) string {
	name := host
	if suffix, _ := publicsuffix.PublicSuffix(host); suffix != "" && len(suffix) < len(host) {
		name = strings.TrimSuffix(host, "."+suffix)
	}
	for {
		trimmed := strings.TrimPrefix(strings.TrimPrefix(name, "api."), "www.")
		if trimmed == name {
			break
		}
		name = trimmed
	}
	if strings.Contains(name, "xn--") {
		if u, err := idna.ToUnicode(name); err == nil {
			name = u
		}
	}
	slug := Slugify(name)
	if slug == "" {
		slug = Slugify(host)
	}
	if p := Slugify(strings.Join(pathSegments(path), "-")); p != "" {
		slug += "-" + p
	}
	return truncateSlug(slug, maxSlugLen)
}

// uniqueSlug returns slug, or when it is taken, slug with a hash of the source key
// appended (longer hashes, then a counter, should that be taken too).
func uniqueSlug(slug, key string, taken map[string]bool) string {
	if slug == "" {
		slug = "method"
	}
	if !taken[slug] {
		return slug
	}
	sum := sha256.Sum256([]byte(key))
	h := hex.EncodeToString(sum[:])
	for n := 6; n <= len(h); n += 2 {
		s := truncateSlug(slug, maxSlugLen-1-n) + "-" + h[:n]
		if !taken[s] {
			return s
		}
	}
	for i := 2; ; i++ {
		s := fmt.Sprintf("%s-%s-%d", truncateSlug(slug, 40), h[:6], i)
		if !taken[s] {
			return s
		}
	}
}

// truncateSlug cuts a slug to at most n bytes, at a hyphen when there is one.
func truncateSlug(s string, n int) string {
	if len(s) <= n {
		return s
	}
	t := s[:n]
	if s[n] != '-' {
		if i := strings.LastIndexByte(t, '-'); i > 0 {
			t = t[:i]
		}
	}
	return strings.Trim(t, "-")
}

// Slugify lower-cases s, transliterates common Latin letters with diacritics to ASCII
// (dropping other non-ASCII characters), turns each run of anything other than a
// letter or digit into one hyphen and trims hyphens from both ends. The result matches
// ^[a-z0-9]+(-[a-z0-9]+)*$ or is empty.
func Slugify(s string) string {
	b := make([]byte, 0, len(s))
	hyphen := false
	emit := func(c byte) {
		if hyphen && len(b) > 0 {
			b = append(b, '-')
		}
		hyphen = false
		b = append(b, c)
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			emit(byte(r))
		case r >= 'A' && r <= 'Z':
			emit(byte(r) + 'a' - 'A')
		case r < utf8.RuneSelf:
			hyphen = true
		default:
			if t, ok := translit[unicode.ToLower(r)]; ok {
				for i := 0; i < len(t); i++ {
					emit(t[i])
				}
			} else if !unicode.IsMark(r) && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
				// Punctuation, symbols and spaces separate words; other letters
				// are dropped.
				hyphen = true
			}
		}
	}
	return string(b)
}

// translit maps lower-case Latin letters with diacritics (and a few ligatures) to
// ASCII.
var translit = func() map[rune]string {
	m := map[rune]string{}
	for _, e := range []struct{ from, to string }{
		{"àáâãäåāăąǎǻ", "a"}, {"çćĉċč", "c"}, {"ďđ", "d"}, {"èéêëēĕėęěǝə", "e"},
		{"ĝğġģ", "g"}, {"ĥħ", "h"}, {"ìíîïĩīĭįıǐ", "i"}, {"ĵ", "j"}, {"ķ", "k"},
		{"ĺļľŀł", "l"}, {"ñńņňŉ", "n"}, {"òóôõöøōŏőǒǿ", "o"}, {"ŕŗř", "r"},
		{"śŝşšș", "s"}, {"ţťŧț", "t"}, {"ùúûüũūŭůűųǔǖǘǚǜ", "u"}, {"ŵ", "w"},
		{"ýÿŷ", "y"}, {"źżž", "z"},
	} {
		for _, r := range e.from {
			m[r] = e.to
		}
	}
	for r, t := range map[rune]string{'æ': "ae", 'œ': "oe", 'ß': "ss", 'ð': "d", 'þ': "th", 'ĳ': "ij"} {
		m[r] = t
	}
	return m
}()

// categoryRules infer a method's category from words. The table is ordered: each
// keyword found adds weight × place to its category's score, where place is 3 when
// the keyword is in the URL (hostname or path), 2 in the name (the description's
// first clause) and 1 elsewhere in the description; each keyword counts once. The
// highest score wins, a tie goes to the category whose first rule comes first, and
// no keyword at all gives "other".
//
// A keyword matches a whole word ("eth" is not in "method"); "pre*" matches words
// starting with pre; words separated by a space match consecutive words. Text is cut
// into words at anything but ASCII letters and digits and at camelCase humps.
// Weak rules (weight 1) hold words common in boilerplate ("ai", "data", "api");
// "agent" is left out altogether, as nearly every x402 description is "for agents".
// The table was tuned on the 2026-08 Bazaar snapshot (about 4% "other").
var categoryRules = []struct {
	category string
	weight   int
	keywords []string
}{
	{"blockchain", 2, []string{"token", "tokens", "wallet*", "eth", "ethereum", "solana", "nft*", "chain", "onchain", "on chain", "blockchain*", "block", "blocks", "erc20", "erc721", "erc1155", "evm", "defi", "dex", "dexscreener", "gas", "gwei", "smart contract*", "transaction*", "tx", "txs", "mint*", "staking", "validator*", "web3", "ens", "airdrop*", "memecoin*", "whale*", "liquidity", "swap*", "rpc", "testnet", "mainnet", "hyperliquid", "uniswap", "aave", "tvl", "rug*", "honeypot", "pump", "jupiter", "crosschain", "cross chain", "stablecoin*", "bridge*", "tron", "trx", "kaspa", "ipfs", "basename*"}},
	{"finance", 2, []string{"price", "prices", "stock*", "forex", "fx", "market", "markets", "crypto price*", "trading", "trade", "trades", "trader*", "funding", "yield*", "perp", "perps", "perpetual*", "futures", "options", "invest*", "portfolio*", "currency", "currencies", "treasury", "macro", "economic*", "sec", "edgar", "filing*", "earnings", "fear greed", "ohlc*", "candle*", "btc", "bitcoin", "coin", "coins", "cryptocurrenc*", "polymarket", "prediction market*", "arbitrage", "exchange rate*", "interest", "inflation", "bank*", "credit", "mortgage", "finance", "financial", "fiat", "tradfi", "equit*", "dividend*", "signal", "signals", "alpha", "volatility", "leverage", "pnl", "ticker*", "iban", "bic", "swift", "loan*", "bond*", "position sizing"}},
	{"weather", 3, []string{"weather", "weather forecast*", "hourly forecast*", "daily forecast*", "climate", "temperature", "precipitation", "humidity", "rain*", "wind", "uv", "air quality", "aqi", "storm*", "heat", "metar", "wildfire*"}},
	{"weather", 1, []string{"forecast", "forecasts"}},
	{"news", 3, []string{"news", "hackernews", "hacker news", "headline*", "article*", "journalis*", "rss", "press release*", "newsletter*"}},
	{"search", 2, []string{"search", "serp", "web search", "google", "bing", "duckduckgo", "exa", "tavily", "neural search", "search engine*"}},
	{"media", 2, []string{"image*", "video*", "audio*", "tts", "text to speech", "speech", "voiceover*", "voices", "music", "song*", "podcast*", "photo*", "picture*", "avatar*", "icon*", "svg", "identicon", "animation*", "transcri*", "youtube", "thumbnail*", "meme*", "illustration*", "render*", "gif*", "mp3", "mp4", "png", "jpeg", "screenshot*", "artwork*", "concept art"}},
	{"ai", 2, []string{"llm*", "gpt*", "summar*", "inference", "openai", "claude", "anthropic", "gemini", "chat", "completion*", "prompt*", "embedding*", "rag", "model", "models", "machine learning", "ml", "translat*", "classif*", "sentiment", "deep learning", "neural", "grammar", "spelling", "paraphras*", "rewrite", "eli5", "prompt injection", "jailbreak*"}},
	{"ai", 1, []string{"ai", "agentic"}},
	{"geo", 3, []string{"geocod*", "geolocat*", "map", "maps", "postal", "zip code*", "postcode*", "cep", "timezone*", "time zone*", "places", "poi", "openstreetmap", "osm", "elevation", "address lookup", "ip lookup", "ip intel*", "asn", "earthquake*", "radius"}},
	{"geo", 1, []string{"location*", "latitude", "longitude", "lat lon", "coordinate*", "distance", "country", "countries", "city", "cities"}},
	{"communication", 3, []string{"email*", "sms", "inbox*", "mail*", "phone*", "messaging", "telegram", "whatsapp", "notification*", "notify", "fax", "voicemail"}},
	{"security", 3, []string{"security", "scan", "scanner", "phishing", "ssl", "tls", "certificate*", "malware", "vulnerab*", "exploit*", "threat*", "fraud*", "audit*", "password*", "secret*", "encrypt*", "sanction*", "kyc", "aml", "safety", "risk", "spam", "captcha*", "csprng", "cve*", "hack", "hacks", "hacked", "redact*", "pii", "xss", "breach*", "firewall"}},
	{"social", 3, []string{"twitter", "tweet*", "farcaster", "social", "reddit", "instagram", "tiktok", "linkedin", "discord", "bluesky", "warpcast", "followers", "influencer*", "kol*", "x com", "cast", "casts", "threads", "subreddit*"}},
	{"travel", 3, []string{"flight*", "hotel*", "travel*", "airport*", "airline*", "trip*", "itinerar*", "esim*", "visa", "vacation*", "tourism", "passport*", "reservation*", "restaurant*"}},
	{"commerce", 3, []string{"shop*", "product", "products", "commerce", "ecommerce", "e commerce", "storefront", "amazon", "ebay", "gift card*", "giftcard*", "voucher*", "invoice*", "checkout", "cart", "merchant*", "retail*", "deal", "deals", "coupon*", "resale", "marketplace", "loyalty", "rewards", "real estate", "property", "supply chain", "grocery", "shopping"}},
	{"data", 2, []string{"scrap*", "pdf*", "extract*", "crawl*", "parse*", "parser", "csv", "markdown", "dataset*", "enrich*", "firmographic*", "wikipedia", "sql", "database*", "registry", "records", "company", "companies", "people", "person", "lead", "leads", "contact*", "web page*", "webpage*", "url", "urls", "html", "ocr", "chunk*", "text", "convert*", "conversion", "lookup", "statistic*", "holiday*", "dictionary", "facts", "fact", "calculator", "calculate*", "sports", "league*", "statistics"}},
	{"data", 1, []string{"data"}},
	{"developer", 2, []string{"developer*", "testnet", "ping", "pong", "echo", "github", "git", "sdk", "debug*", "regex", "uuid", "random", "randomness", "rng", "dice", "shuffle", "mock*", "fake", "dns", "rdap", "whois", "headers", "uptime", "monitor*", "sandbox*", "compute", "browser*", "deploy*", "hosting", "upload*", "storage", "kv", "key value", "queue*", "cron", "webhook*", "domain*", "diff", "schema*", "openapi", "swagger", "mcp", "npm", "docker", "lint*", "base64", "jwt", "xml", "yaml", "commit*", "code review", "repair json", "json repair", "qr code", "slo"}},
	{"developer", 1, []string{"api", "test", "tests", "testing", "code", "json", "http", "validat*", "checksum", "hash", "endpoint*", "server*", "status", "healthcheck*", "health check*", "format*"}},
}

// keyword is one compiled keyword of categoryRules.
type keyword struct {
	rule  int
	parts []string // words; one ending in '*' is a prefix
}

// ruleIndex holds categoryRules' keywords, found by their first word: exactly or,
// for prefix keywords, by trying those that start with the word's first letter.
var ruleIndex = func() (ix struct {
	keywords []keyword
	exact    map[string][]int
	prefix   [128][]int
}) {
	ix.exact = map[string][]int{}
	for i, r := range categoryRules {
		for _, k := range r.keywords {
			id := len(ix.keywords)
			kw := keyword{rule: i, parts: strings.Fields(k)}
			ix.keywords = append(ix.keywords, kw)
			if strings.HasSuffix(kw.parts[0], "*") {
				ix.prefix[kw.parts[0][0]] = append(ix.prefix[kw.parts[0][0]], id)
			} else {
				ix.exact[kw.parts[0]] = append(ix.exact[kw.parts[0]], id)
			}
		}
	}
	return ix
}()

// inferCategory picks a category for a method by categoryRules.
func inferCategory(desc, name, host, path string) string {
	place := make([]int8, len(ruleIndex.keywords))
	mark := func(ws []string, p int8) {
		for i, w := range ws {
			for _, id := range ruleIndex.exact[w] {
				if place[id] < p && matchesAt(ws, i, ruleIndex.keywords[id].parts) {
					place[id] = p
				}
			}
			for _, id := range ruleIndex.prefix[w[0]] {
				if place[id] < p && matchesAt(ws, i, ruleIndex.keywords[id].parts) {
					place[id] = p
				}
			}
		}
	}
	mark(words(desc), 1)
	mark(words(name), 2)
	mark(words(hostWords(host)+" "+strings.Join(pathSegments(path), " ")), 3)

	var scores [32]int // by rule index of the category's first rule
	firstRule := func(c string) int {
		for i, r := range categoryRules {
			if r.category == c {
				return i
			}
		}
		return len(categoryRules)
	}
	for id, p := range place {
		if p > 0 {
			r := ruleIndex.keywords[id].rule
			scores[firstRule(categoryRules[r].category)] += int(p) * categoryRules[r].weight
		}
	}
	best, bestScore := "other", 0
	for i, r := range categoryRules {
		// The first rule of a category holds its score; earlier rules win ties.
		if scores[i] > bestScore {
			best, bestScore = r.category, scores[i]
		}
	}
	return best
}

// tagCategory maps a listing's own tags to a category. A tag that names a category
// ("weather", "AI") weighs most; otherwise the keywords of categoryRules found in a
// tag add their rule's weight, counting only rules of weight 2 and more (the weak
// ones hold boilerplate such as "api"). Tags that name a protocol rather than a
// subject ("mcp", "x402") are passed over. The highest score wins, a tie goes to the
// category tagged first, and ok is false when no tag maps to a category.
func tagCategory(tags []string) (category string, ok bool) {
	scores := map[string]int{}
	var order []string
	add := func(c string, n int) {
		if _, seen := scores[c]; !seen {
			order = append(order, c)
		}
		scores[c] += n
	}
	for _, t := range tags {
		switch s := Slugify(t); {
		case s == "" || s == "mcp" || s == "x402" || s == "other":
		case slices.Contains(Categories, s):
			add(s, 10)
		default:
			ws := words(t)
			counted := map[int]bool{}
			for i, w := range ws {
				ids := append(slices.Clone(ruleIndex.exact[w]), ruleIndex.prefix[w[0]]...)
				for _, id := range ids {
					kw := ruleIndex.keywords[id]
					r := categoryRules[kw.rule]
					if r.weight >= 2 && !counted[id] && matchesAt(ws, i, kw.parts) {
						counted[id] = true
						add(r.category, r.weight)
					}
				}
			}
		}
	}
	for _, c := range order {
		if scores[c] > scores[category] {
			category = c
		}
	}
	return category, category != ""
}

// dropLabel removes the dot- or slash-separated parts of s equal to label.
func dropLabel(s, label string) string {
	sep := "."
	if strings.HasPrefix(s, "/") || !strings.Contains(s, ".") {
		sep = "/"
	}
	parts := strings.Split(s, sep)
	return strings.Join(slices.DeleteFunc(parts, func(p string) bool { return strings.EqualFold(p, label) }), sep)
}

// hostWords returns the hostname without its public suffix and without "api",
// "www" and "x402" labels, as words.
func hostWords(host string) string {
	if suffix, _ := publicsuffix.PublicSuffix(host); suffix != "" && len(suffix) < len(host) {
		host = strings.TrimSuffix(host, "."+suffix)
	}
	var keep []string
	for l := range strings.SplitSeq(host, ".") {
		if l != "api" && l != "www" && l != "x402" {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, " ")
}

// words cuts text into lower-case ASCII words at anything but letters and digits
// and at camelCase humps ("getBalance" is "get balance").
func words(s string) []string {
	var out []string
	start := -1
	for i := 0; i <= len(s); i++ {
		var c byte
		if i < len(s) {
			c = s[i]
		}
		alnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		hump := alnum && start >= 0 && 'A' <= c && c <= 'Z' && 'a' <= s[i-1] && s[i-1] <= 'z'
		if start >= 0 && (!alnum || hump) {
			out = append(out, strings.ToLower(s[start:i]))
			start = -1
		}
		if alnum && start < 0 {
			start = i
		}
	}
	return out
}

// matchesAt reports whether the keyword's words occur in ws from position i on.
func matchesAt(ws []string, i int, kw []string) bool {
	if i+len(kw) > len(ws) {
		return false
	}
	for j, k := range kw {
		if !wordMatches(ws[i+j], k) {
			return false
		}
	}
	return true
}

func wordMatches(w, k string) bool {
	if p, ok := strings.CutSuffix(k, "*"); ok {
		return strings.HasPrefix(w, p)
	}
	return w == k
}
