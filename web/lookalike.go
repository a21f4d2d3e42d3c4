package web

import "github.com/waystation/waystation/internal/directory"

// LookalikeView is a look-alike flag in plain words: whom the seller resembles, and
// whether the flag still caps its verdict.
type LookalikeView struct {
	Resembles []ResemblanceView
	// Standing: the flag caps the verdict at caution; else Cleared says what cleared it.
	Standing bool
	Cleared  string
}

// ResemblanceView is one established seller a look-alike resembles.
type ResemblanceView struct {
	Hostname, URL, How string
}

var signalWords = map[string]string{
	directory.SignalConfusable:  "reads as the same name (one Unicode confusable skeleton)",
	directory.SignalNearDomain:  "is a letter or two from its registrable name",
	directory.SignalBrandInHost: "holds its name inside another hostname",
}

var clearedWords = map[string]string{
	directory.ClearedByOwnerProof: "Cleared: one payee signed both sellers' origins, in their own manifests, and their live offers name it: one owner answers for both.",
	directory.ClearedByOverride:   "Cleared: an operator's override decides the verdict.",
}

func lookalikeView(l *directory.Lookalike) *LookalikeView {
	if l == nil {
		return nil
	}
	v := &LookalikeView{Standing: l.Cleared == nil}
	if l.Cleared != nil {
		v.Cleared = clearedWords[*l.Cleared]
	}
	for _, r := range l.Resembles {
		v.Resembles = append(v.Resembles, ResemblanceView{Hostname: hostText(r.Hostname), URL: "/merchants/" + r.Hostname,
			How: "“" + r.Mine + "” " + signalWords[r.Signal] + ": “" + r.Theirs + "”"})
	}
	return v
}
