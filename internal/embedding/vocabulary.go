package embedding

import (
	"math"
	"net/url"
	"strings"

	"github.com/waystation/waystation/internal/catalog"
)

// MethodText is the text a method is embedded from: its name, provider, description,
// category and the words of its endpoint's path. Every model embeds the same text, and
// its hash tells when a method must be embedded again.
func MethodText(name, provider, description, category, endpointURL string) string {
	path := endpointURL
	if u, err := url.Parse(endpointURL); err == nil {
		path = u.Host + " " + u.Path
	}
	return strings.Join([]string{name, provider, description, category, path}, "\n")
}

// stopWords carry no meaning for search: English function words and the words every
// agent's request and every listing share ("api", "endpoint", "returns").
var stopWords = setOf(`
a an the of for to in on and or with by from is are be been it its as at this that these
those me my i you your we our us can could do does did how what which who whom whose
want wants need needs needed looking something anything thing way please would should
will shall any some all one via into per about than then there their them they he she
also just only so such very more most other else if but not no yes has have had was were
let lets able use used using api apis endpoint endpoints service services tool tools
get gets give gives given return returns returned provide provides providing call calls
http https www com io dev xyz app net org ai's x402 json rest v1 v2 v3 me`)

// genericWords are common in listings and requests but say little about what a method
// does; they keep a small weight.
var genericWords = setOf(`
data info information latest current live real time realtime fast simple quick instant
easy best top new agent agents request response query queries result results pay paid
payment micropayment usdc onchain base public free full list lookup check tool fetch
support supports powered access based per call premium basic advanced mode`)

// synonyms are groups of words agents use interchangeably about APIs; each group adds
// one shared feature, so "token quote" meets "coin price".
var synonyms = [][]string{
	{"price", "prices", "quote", "quotes", "rate", "rates", "cost", "pricing", "valuation"},
	{"wallet", "address", "account", "holder"},
	{"balance", "holdings", "portfolio"},
	{"crypto", "cryptocurrency", "coin", "token", "altcoin", "memecoin"},
	{"bitcoin", "btc"},
	{"ethereum", "eth", "ether", "evm"},
	{"solana", "sol"},
	{"weather", "forecast", "temperature", "meteo", "meteorological", "rain"},
	{"twitter", "tweet", "tweets"},
	{"image", "picture", "photo", "img", "illustration"},
	{"search", "find", "discover", "lookup"},
	{"scrape", "crawl", "scraper", "crawler", "extract", "extraction"},
	{"convert", "conversion", "converter", "transform"},
	{"company", "business", "firm", "organization", "corporate", "startup"},
	{"people", "person", "individual", "contact", "profile", "lead"},
	{"email", "mail", "inbox"},
	{"translate", "translation", "translator"},
	{"news", "headline", "headlines", "article"},
	{"stock", "equity", "equities", "shares", "ticker"},
	{"flight", "airline", "plane", "airfare"},
	{"hotel", "lodging", "accommodation"},
	{"gas", "gwei"},
	{"nft", "collectible"},
	{"llm", "gpt", "chat", "completion", "chatbot", "inference", "model"},
	{"summarize", "summary", "summarization", "tldr"},
	{"geocode", "geocoding", "coordinates", "latitude", "longitude", "lat", "lon"},
	{"transaction", "tx", "txs", "transfer"},
	{"domain", "whois", "rdap", "dns"},
	{"screenshot", "capture"},
	{"sentiment", "mood", "emotion"},
	{"random", "rng", "randomness"},
	{"validate", "validation", "validator", "verify", "verification"},
	{"phone", "sms", "mobile"},
	{"video", "clip", "movie"},
	{"audio", "speech", "voice", "tts"},
	{"music", "song"},
	{"document", "pdf", "doc"},
	{"vulnerability", "cve", "exploit"},
	{"risk", "scam", "fraud", "rug", "honeypot", "safety"},
	{"job", "career", "hiring", "vacancy"},
	{"recipe", "cooking", "food", "meal"},
	{"yield", "apy", "apr", "farming"},
	{"dex", "swap", "uniswap", "liquidity"},
	{"loan", "lending", "borrow", "mortgage", "amortization"},
	{"timezone", "tz"},
	{"ip", "geoip", "ipv4", "ipv6"},
	{"reddit", "subreddit"},
	{"perp", "perpetual", "perpetuals", "futures"},
	{"forex", "fx", "currency", "fiat"},
	{"holiday", "holidays"},
	{"upload", "hosting", "storage", "store"},
	{"text", "string"},
	{"ens", "basename"},
	{"generate", "generation", "generator", "create"},
	{"polymarket", "kalshi", "prediction"},
}

// stemExceptions map words the suffix rules get wrong.
var stemExceptions = map[string]string{
	"news": "news", "analysis": "analysis", "status": "status", "address": "address",
	"business": "business", "gas": "gas", "series": "series", "species": "species",
	"sms": "sms", "dns": "dns", "ens": "ens", "ios": "ios", "https": "https", "bus": "bus",
}

var (
	synonymGroup map[string]string
	idfTable     map[string]float64
	idfUnseen    float64
)

func setOf(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// The IDF table is computed once from the demo catalog the project ships (its own
// texts) and the generic vocabulary above, both part of the model's recipe; a test
// pins its checksum so that a change cannot slip in under the same model id.
func init() {
	synonymGroup = map[string]string{}
	for _, g := range synonyms {
		head := stem(g[0])
		for _, w := range g {
			synonymGroup[stem(w)] = head
		}
	}
	cat, err := catalog.Demo()
	if err != nil {
		panic(err)
	}
	df := map[string]int{}
	n := 0
	var lengths [fieldCount]int
	for _, p := range cat.Providers {
		for _, m := range p.Methods {
			n++
			seen := map[string]bool{}
			text := MethodText(m.Name, p.Name, m.Description, m.Category, m.Endpoint.URL)
			fields, _ := MethodFields(text)
			for f, t := range fields {
				lengths[f] += len(Words(t))
			}
			for _, w := range Words(text) {
				s := stem(w)
				if !seen[s] {
					seen[s] = true
					df[s]++
				}
			}
		}
	}
	for w := range genericWords {
		df[stem(w)] = max(df[stem(w)], n)
	}
	for f, l := range lengths {
		fieldLength[f] = float64(l) / float64(max(n, 1))
	}
	idf := func(d int) float64 { return math.Log(float64(n+1)/float64(d+1)) + 1 }
	idfTable = make(map[string]float64, len(df))
	for s, d := range df {
		idfTable[s] = idf(d)
	}
	idfUnseen = idf(0)
}
