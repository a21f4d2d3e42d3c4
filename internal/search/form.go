package search

import (
	"strings"

	"github.com/waystation/waystation/internal/embedding"
)

// questionWords open a query that asks a question rather than for an act.
var questionWords = map[string]bool{"who": true, "what": true, "what's": true, "which": true, "whose": true, "how": true,
	"where": true, "when": true, "why": true, "is": true, "are": true, "was": true, "were": true, "does": true, "do": true,
	"did": true, "can": true, "could": true, "has": true, "have": true, "will": true, "would": true, "should": true}

// asks reports whether query (normalised) asks a question, a question word first or
// a question mark last, rather than for an act.
func asks(query string) bool {
	first, _, _ := strings.Cut(query, " ")
	return questionWords[first] || strings.HasSuffix(query, "?")
}

// actGroups are the acts of commerce or transaction a query may ask the catalog to
// do, each the words that name it (a verb and its forms, nouns of the act among
// them): what changes something in the world (an order placed, a payment sent, a name
// registered, a message posted), where most methods only look something up. A query
// whose main verb is one of them asks for that act; a method holds the act when its
// name, path or description holds one of the words.
var actGroups = [][]string{
	{"buy", "buying", "bought", "purchase", "purchasing"},
	{"order", "ordering"},
	{"book", "booking", "reserve", "reserving", "reservation"},
	{"pay", "paying", "payment"},
	{"send", "sending", "sent"},
	{"transfer", "transferring"},
	{"swap", "swapping"},
	{"trade", "trading"},
	{"sell", "selling", "sold", "sale"},
	{"place", "placing"},
	{"bid", "bidding"},
	{"renew", "renewing", "renewal"},
	{"register", "registering", "registration"},
	{"cancel", "cancelling", "canceling", "cancellation"},
	{"refund", "refunding"},
	{"subscribe", "subscribing", "subscription"},
	{"unsubscribe", "unsubscribing"},
	{"mint", "minting"},
	{"deploy", "deploying", "deployment"},
	{"stake", "staking", "unstake", "delegate", "delegating", "delegation"},
	{"bridge", "bridging"},
	{"withdraw", "withdrawal"},
	{"deposit", "depositing"},
	{"cash", "cashing"},
	{"lend", "lending", "borrow", "borrowing"},
	{"donate", "donating", "donation", "tip"},
	{"claim", "claiming", "redeem", "redeeming", "redemption"},
	{"apply", "applying"},
	{"file", "filing"},
	{"submit", "submitting", "submission"},
	{"ship", "shipping", "shipment", "deliver", "delivering", "delivery"},
	{"rent", "renting", "rental", "hire"},
	{"schedule", "scheduling"},
	{"post", "posting"},
	{"publish", "publishing"},
	{"reply", "replying"},
	{"delete", "deleting", "deletion", "remove", "removing", "revoke", "revoking"},
	{"block", "blocking"},
	{"pin", "pinning"},
	{"print", "printing"},
	{"fax", "faxing"},
	{"install", "installing"},
	{"vote", "voting"},
	{"invite", "inviting", "invitation"},
	{"sign", "signing", "signup"},
	{"fund", "funding"},
	{"charge", "charging", "bill", "billing", "invoice", "invoicing"},
	{"approve", "approving", "approval"},
	{"sync", "syncing"},
}

// taskVerbs are verbs a request opens with that ask for something other than an act of
// actGroups: a lookup or a computation the catalog's methods do.
var taskVerbs = setOfWords(`get find check look list show fetch search tell give read pull track monitor compare
verify estimate calculate convert turn translate summarize summarise scrape extract generate make draw
compose write draft create render transcribe detect classify score rank screen analyze analyse predict
forecast resolve decode encode validate shorten format parse run simulate test scan map geocode recommend
identify count measure explain describe`)

// actOf maps each word of actGroups, and its stem, to its group: a word read by its
// stem ("bookings", "booking") finds its act either way.
var actOf = func() map[string]int {
	out := map[string]int{}
	for g, words := range actGroups {
		for _, w := range words {
			out[w], out[embedding.Stem(w)] = g, g
		}
	}
	return out
}()

func setOfWords(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.Fields(s) {
		out[w] = true
	}
	return out
}

// requestFrames open a request before its verb ("can you", "i want to", "help me");
// a question that opens with one of them ("how do i", "can you") asks for the act
// its verb names, not about something.
var requestFrames = []string{"please", "kindly", "can you", "could you", "would you", "will you", "can i", "could i",
	"how do i", "how can i", "how do we", "how can we", "how would i", "how to", "is there a way to", "is it possible to",
	"i want you to", "i want to", "i need to", "i'd like to", "i would like to", "we want to", "we need to",
	"help me to", "help me", "help us", "let me", "let's", "go ahead and", "just", "quickly"}

// mainVerb is the word a request (normalised) opens with once any request frame is
// cut off, and whether it is one: "" for a question about something ("what is",
// "which") or an empty query.
func mainVerb(query string) string {
	rest, framed := query, false
	for cut := true; cut; {
		cut = false
		for _, f := range requestFrames {
			if r, ok := strings.CutPrefix(rest, f); ok && strings.HasPrefix(r, " ") {
				rest, framed, cut = r[1:], true, true
				break
			}
		}
	}
	if !framed && asks(query) {
		return ""
	}
	w, _, _ := strings.Cut(rest, " ")
	return strings.Trim(w, ",.:;!?\"'()")
}

// act is the group of actGroups the act query asks for belongs to, or -1.
func act(verb string) int {
	if verb == "" {
		return -1
	}
	if g, ok := actOf[embedding.Stem(verb)]; ok {
		return g
	}
	return -1
}

// actsOf is the set of actGroups text's words hold, a bit each.
func actsOf(words []string) uint64 {
	var out uint64
	for _, w := range words {
		if g, ok := actOf[embedding.Stem(w)]; ok {
			out |= 1 << g
		}
	}
	return out
}
