package search

import "strings"

// frames are the openings of a request or a question that say how the query asks,
// not what it asks for ("how do i", "is there an api that", "i need a service to"),
// longest first where one opens another.
var frames = []string{
	"is there an api that", "is there an api to", "is there an api for", "is there an endpoint that", "is there an endpoint to",
	"is there a service that", "is there a service to", "is there a service for", "is there a tool that", "is there a tool to",
	"is there a way to", "is there any way to", "is there anything that", "is there something that",
	"i need an api that", "i need an api to", "i need an api for", "i need a service that", "i need a service to", "i need a service for",
	"i need a tool that", "i need a tool to", "i need an endpoint that", "i need an endpoint to", "i need something that", "i need something to",
	"i'm looking for an api that", "i'm looking for a service that", "i am looking for an api that", "looking for an api that", "looking for a service that",
	"find me an api that", "find me a service that", "find me an api to", "find me a service to", "find an api that", "find a service that",
	"which api can", "which api will", "which api", "which service can", "which service", "what api can", "what api", "what service can", "what service",
	"how do i", "how can i", "how would i", "how to", "i want to", "i'd like to", "i need to", "i need",
	"can you", "could you", "would you", "please", "help me", "let me", "give me", "show me", "tell me", "find me",
}

// StripFrame is query (normalised) without the frames that open it, so that the
// encoder and the lexical part read what the query asks for: "how do i get the gas
// price on base?" reads "get the gas price on base?". A query that is all frame is
// left as it is.
func StripFrame(query string) string {
	out := query
	for again := true; again; {
		again = false
		for _, f := range frames {
			if rest, ok := strings.CutPrefix(out, f+" "); ok && strings.TrimSpace(rest) != "" {
				out, again = strings.TrimSpace(rest), true
				break
			}
		}
	}
	return out
}
