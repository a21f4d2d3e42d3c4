package catalog

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/waystation/waystation/internal/x402"
	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"
)

// maxBazaarLine is the longest line ParseBazaar reads; a longer line is skipped.
const maxBazaarLine = 4 << 20

// LineError reports a line of a Bazaar file that could not be read.
type LineError struct {
	Line int // 1-based
	Err  error
}

func (e LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

// Unwrap returns the reason the line was skipped.
func (e LineError) Unwrap() error { return e.Err }

// ParseBazaar reads Bazaar discovery items, one JSON object per line, and returns the
// catalog of what it could read plus one LineError per line it skipped. Only an I/O
// error of r is returned as err.
//
// Each item becomes one x402 Method; methods are grouped into providers by the
// registrable domain of their hostname (providers in order of first appearance,
// methods in file order). A resource listed twice keeps the later item, in the place
// of the first. Slugs depend only on the file: derived from the resource URL, with a
// short hash of the URL appended when an earlier item already took the slug.
func ParseBazaar(r io.Reader) (cat Catalog, skipped []LineError, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		items   []parsedItem
		byKey   = map[string]int{}
		lineNo  int
		scratch []byte
	)
	for {
		var line []byte
		var tooLong bool
		line, scratch, tooLong, err = readLine(br, scratch)
		if line == nil && err != nil {
			break
		}
		lineNo++
		if tooLong {
			skipped = append(skipped, LineError{lineNo, fmt.Errorf("line longer than %d bytes", maxBazaarLine)})
		} else if len(bytes.TrimSpace(line)) > 0 {
			if lineNo == 1 {
				line = bytes.TrimPrefix(line, []byte("\ufeff"))
			}
			it, perr := parseBazaarItem(line)
			if perr != nil {
				skipped = append(skipped, LineError{lineNo, perr})
			} else if i, ok := byKey[it.method.SourceKey]; ok {
				items[i] = it
			} else {
				byKey[it.method.SourceKey] = len(items)
				items = append(items, it)
			}
		}
		if err != nil {
			break
		}
	}
	if err == io.EOF {
		err = nil
	}
	if err != nil {
		return Catalog{}, skipped, err
	}

	taken := make(map[string]bool, len(items))
	provIndex := map[string]int{}
	for _, it := range items {
		m := it.method
		m.Slug = uniqueSlug(it.slug, m.SourceKey, taken)
		taken[m.Slug] = true
		pi, ok := provIndex[it.provider]
		if !ok {
			pi = len(cat.Providers)
			provIndex[it.provider] = pi
			cat.Providers = append(cat.Providers, Provider{Name: it.provider})
		}
		cat.Providers[pi].Methods = append(cat.Providers[pi].Methods, m)
	}
	return cat, skipped, nil
}

// readLine returns the next line without its line ending. The returned slice is
// valid until the next call. tooLong reports a line over maxBazaarLine, which is
// consumed and not returned. At the end of input it returns a nil line and io.EOF (or
// the last line together with io.EOF when the input does not end in a newline).
func readLine(br *bufio.Reader, scratch []byte) (line, buf []byte, tooLong bool, err error) {
	buf = scratch[:0]
	for {
		chunk, rerr := br.ReadSlice('\n')
		if !tooLong {
			if len(buf)+len(chunk) > maxBazaarLine+2 {
				tooLong = true
				buf = buf[:0]
			} else {
				buf = append(buf, chunk...)
			}
		}
		if rerr == bufio.ErrBufferFull {
			continue
		}
		if rerr != nil && len(buf) == 0 && !tooLong {
			return nil, buf, false, rerr
		}
		buf = bytes.TrimSuffix(buf, []byte("\n"))
		buf = bytes.TrimSuffix(buf, []byte("\r"))
		if len(buf) > maxBazaarLine {
			tooLong = true
		}
		if tooLong {
			return []byte{}, buf[:0], true, rerr
		}
		return buf, buf, false, rerr
	}
}

// parsedItem is one item read from a line, before slugs are made unique.
type parsedItem struct {
	method   Method
	provider string
	slug     string
}

// bazaarItem is the part of a Bazaar discovery item the importer reads. Fields other
// than resource are read leniently: a value of the wrong type is ignored. Its
// accepts entries are x402 payment requirements, v1 or v2.
type bazaarItem struct {
	Resource     json.RawMessage `json:"resource"`
	Description  x402.String     `json:"description"`
	Method       x402.String     `json:"method"`
	Accepts      json.RawMessage `json:"accepts"`
	OutputSchema json.RawMessage `json:"outputSchema"`
	Extensions   json.RawMessage `json:"extensions"`
}

func parseBazaarItem(line []byte) (parsedItem, error) {
	var it bazaarItem
	if err := json.Unmarshal(line, &it); err != nil {
		return parsedItem{}, fmt.Errorf("invalid JSON: %w", err)
	}
	if len(it.Resource) == 0 || bytes.Equal(it.Resource, []byte("null")) {
		return parsedItem{}, errors.New("no resource URL")
	}
	var resource string
	if json.Unmarshal(it.Resource, &resource) != nil {
		return parsedItem{}, errors.New("resource is not a string")
	}
	resource = strings.TrimSpace(resource)
	u, host, err := parseResource(resource)
	if err != nil {
		return parsedItem{}, err
	}
	provider, err := publicsuffix.EffectiveTLDPlusOne(host)
	if err != nil {
		if !strings.Contains(host, ".") {
			return parsedItem{}, fmt.Errorf("resource URL: hostname %q has no registrable domain", host)
		}
		provider = host // the hostname is itself a public suffix
	}

	accepts := x402.ReadRequirements(it.Accepts)
	desc := collapseSpace(string(it.Description))
	m := Method{
		Name:        deriveName(desc, u.Path),
		Description: desc,
		Kind:        KindX402,
		Endpoint:    Endpoint{Method: httpMethod(&it, accepts), URL: resource},
		SourceKey:   resource,
	}
	m.Category = inferCategory(desc, m.Name, host, u.Path)
	for _, a := range accepts {
		m.Offers = append(m.Offers, offerOf(&a))
	}
	return parsedItem{method: m, provider: provider, slug: baseSlug(host, u.Path)}, nil
}

// parseResource checks a resource URL and returns it parsed with its normalised
// hostname.
func parseResource(resource string) (*url.URL, string, error) {
	if resource == "" {
		return nil, "", errors.New("empty resource URL")
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

// offerOf is an accepts entry as the catalog stores it.
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
// Bazaar extension's or the output schema's input method (item or accepts level), or
// a "method" in an accepts entry's extra. The default is GET.
func httpMethod(it *bazaarItem, accepts []x402.Requirement) string {
	if m, ok := validHTTPMethod(string(it.Method)); ok {
		return m
	}
	cands := []json.RawMessage{
		jsonPath(it.Extensions, "bazaar", "info", "input", "method"),
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
