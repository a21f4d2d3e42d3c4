package request

import (
	"strings"
	"testing"

	"github.com/waystation/waystation/internal/problem"
)

// wantInvalid fails unless err is validation_failed saying want.
func wantInvalid(t *testing.T, name string, err error, want string) {
	t.Helper()
	p, ok := problem.As(err)
	if !ok || p.Code != problem.ValidationFailed || !strings.Contains(p.Detail, want) {
		t.Errorf("%s: %v, want validation_failed saying %q", name, err, want)
	}
}

func TestParamsCheck(t *testing.T) {
	if err := (Params{Summary: "Pay the plumber", Amount: "12.50", Currency: "USD", Recipient: "Bob"}).check(); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		p    Params
		want string
	}{
		"service's own": {Params{PaymentID: "p"}, "the service's own"},
		"verdict":       {Params{Verdict: "proceed"}, "the service's own"},
		"bad amount":    {Params{Amount: "12,50", Currency: "USD"}, "params.amount must be"},
		"bad currency":  {Params{Amount: "1", Currency: "usd"}, "params.currency must be"},
		"alone":         {Params{Amount: "1"}, "go together"},
		"long summary":  {Params{Summary: strings.Repeat("s", 2001)}, "params.summary"},
	} {
		wantInvalid(t, name, c.p.check(), c.want)
	}
}

func TestCheckShapeHoldsEachKindToItsOwn(t *testing.T) {
	two := []Option{{ID: "a", Label: "A"}, {ID: "b", Label: "B"}}
	one := []Field{{Key: "email", Label: "Email"}}
	for _, ok := range []New{
		{Kind: KindConfirm, Params: Params{Summary: "s", Amount: "1", Currency: "USD"}},
		{Kind: KindChoice, Options: two},
		{Kind: KindProvideMissing, Fields: one},
		{Kind: KindChooseCandidate, Fields: one, Options: two},
		{Kind: KindCaptcha},
	} {
		if err := ok.checkShape(); err != nil {
			t.Errorf("%s: %v", ok.Kind, err)
		}
	}
	for name, c := range map[string]struct {
		n    New
		want string
	}{
		"confirm without summary":    {New{Kind: KindConfirm}, "needs params.summary"},
		"amount outside confirm":     {New{Kind: KindChoice, Options: two, Params: Params{Recipient: "Bob"}}, "belong to confirm requests"},
		"one option":                 {New{Kind: KindChoice, Options: two[:1]}, "2 to 20 options"},
		"options outside choices":    {New{Kind: KindProvideMissing, Fields: one, Options: two}, "options belong to"},
		"candidate of two fields":    {New{Kind: KindChooseCandidate, Options: two, Fields: append(one, Field{Key: "b", Label: "B"})}, "the one field"},
		"no fields":                  {New{Kind: KindAskBeforeUse}, "1 to 20 fields"},
		"fields outside their kinds": {New{Kind: KindConfirm, Params: Params{Summary: "s"}, Fields: one}, "fields belong to"},
	} {
		wantInvalid(t, name, c.n.checkShape(), c.want)
	}
}

func TestCheckFieldsFillsDefaults(t *testing.T) {
	n := New{Kind: KindAskBeforeUse, Fields: []Field{
		{Key: "email", Label: "Email"},
		{Key: "pw", Label: "Password", Type: "password"},
		{Key: "card", Label: "Card", Type: "card_number", Handle: "wh_" + strings.Repeat("x", 30)},
	}}
	if err := n.checkFields(); err != nil {
		t.Fatal(err)
	}
	if f := n.Fields[0]; f.Type != "text" || f.Secret {
		t.Errorf("a field of no type: %+v", f)
	}
	if !n.Fields[1].Secret || !n.Fields[2].Secret {
		t.Error("passwords and card data are always secret")
	}
	handle := "wh_" + strings.Repeat("x", 30)
	for name, c := range map[string]struct {
		n    New
		want string
	}{
		"repeated key":            {New{Kind: KindProvideMissing, Fields: []Field{{Key: "a", Label: "A"}, {Key: "a", Label: "B"}}}, "fields[1].key"},
		"bad key":                 {New{Kind: KindProvideMissing, Fields: []Field{{Key: "-a", Label: "A"}}}, "fields[0].key"},
		"no label":                {New{Kind: KindProvideMissing, Fields: []Field{{Key: "a"}}}, "fields[0].label"},
		"bad type":                {New{Kind: KindProvideMissing, Fields: []Field{{Key: "a", Label: "A", Type: "ssn"}}}, "fields[0].type"},
		"handle outside its kind": {New{Kind: KindProvideMissing, Fields: []Field{{Key: "a", Label: "A", Handle: handle}}}, "belongs to ask_before_use"},
		"not a handle":            {New{Kind: KindAskBeforeUse, Fields: []Field{{Key: "a", Label: "A", Handle: "sk_" + strings.Repeat("x", 30)}}}, "a handle of this session's"},
	} {
		wantInvalid(t, name, c.n.checkFields(), c.want)
	}
}

func TestCheckOptions(t *testing.T) {
	ok := New{Kind: KindChoice, Options: []Option{{ID: "a", Label: "A", Description: "d"}, {ID: "b", Label: "B"}}}
	if err := ok.checkOptions(); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		n    New
		want string
	}{
		"repeated id":            {New{Kind: KindChoice, Options: []Option{{ID: "a", Label: "A"}, {ID: "a", Label: "B"}}}, "options[1].id"},
		"candidate not a handle": {New{Kind: KindChooseCandidate, Options: []Option{{ID: "a", Label: "A"}}}, "a handle of this session's"},
		"no label":               {New{Kind: KindChoice, Options: []Option{{ID: "a"}}}, "options[0].label"},
		"long description":       {New{Kind: KindChoice, Options: []Option{{ID: "a", Label: "A", Description: strings.Repeat("d", 1001)}}}, "options[0].description"},
	} {
		wantInvalid(t, name, c.n.checkOptions(), c.want)
	}
}
