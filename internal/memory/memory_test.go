package memory_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/waystation/waystation/internal/memory"
	"github.com/waystation/waystation/internal/problem"
	"github.com/waystation/waystation/internal/vault"
)

func testVault(t *testing.T) *vault.Vault {
	t.Helper()
	v, err := vault.Parse("t1:AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func ptr[T any](v T) *T { return &v }

func invalid(t *testing.T, err error, want string) {
	t.Helper()
	if problem.CodeOf(err) != problem.ValidationFailed {
		t.Fatalf("err = %v, want validation_failed", err)
	}
	if p, _ := problem.As(err); !strings.Contains(p.Detail, want) {
		t.Fatalf("detail %q does not say %q", p.Detail, want)
	}
}

func TestValidateFillsDefaultsAndNormalises(t *testing.T) {
	n := memory.New{Label: "Home", Hosts: []string{"https://Shop.Example/cart", "shop.example", "other.example"},
		Fields: []memory.FieldInput{
			{FieldRef: "street", Label: "Street", Value: ptr("1 Main St")},
			{FieldRef: "pin", Label: "PIN", ValueType: "password"},
			{FieldRef: "card", Label: "Card", ValueType: "card_number"},
		}}
	if err := n.Validate(); err != nil {
		t.Fatal(err)
	}
	if n.AskBeforeUse == nil || !*n.AskBeforeUse {
		t.Error("a new item asks before use unless told otherwise")
	}
	if !slices.Equal(n.Hosts, []string{"shop.example", "other.example"}) {
		t.Errorf("hosts = %q, want the hosts of URLs, lower-cased, once each", n.Hosts)
	}
	if f := n.Fields[0]; f.ValueType != "text" || f.Secret {
		t.Errorf("a field of no type is text and not secret: %+v", f)
	}
	if !n.Fields[1].Secret || !n.Fields[2].Secret {
		t.Error("passwords and card data are always secret")
	}
}

func TestValidateRefuses(t *testing.T) {
	field := func(f memory.FieldInput) memory.New {
		if f.Label == "" {
			f.Label = "L"
		}
		return memory.New{Label: "Item", Fields: []memory.FieldInput{f}}
	}
	many := memory.New{Label: "Item"}
	for i := range memory.MaxFields + 1 {
		many.Fields = append(many.Fields, memory.FieldInput{FieldRef: "f" + strings.Repeat("x", i), Label: "L"})
	}
	cases := []struct {
		name string
		n    memory.New
		want string
	}{
		{"no label", memory.New{Fields: []memory.FieldInput{{FieldRef: "a", Label: "A"}}}, "label"},
		{"no fields", memory.New{Label: "Item"}, "1 to 20 fields"},
		{"too many fields", many, "1 to 20 fields"},
		{"bad ref", field(memory.FieldInput{FieldRef: "1st"}), "fields[0].fieldRef"},
		{"bad type", field(memory.FieldInput{FieldRef: "a", ValueType: "ssn"}), "fields[0].valueType"},
		{"blank value", field(memory.FieldInput{FieldRef: "a", Value: ptr("  ")}), "fields[0].value"},
		{"NUL in value", field(memory.FieldInput{FieldRef: "a", Value: ptr("a\x00b")}), "fields[0].value"},
		{"long value", field(memory.FieldInput{FieldRef: "a", Value: ptr(strings.Repeat("v", memory.MaxValueLen+1))}), "fields[0].value"},
		{"bad host", memory.New{Label: "Item", Hosts: []string{"ftp://x.example"}, Fields: []memory.FieldInput{{FieldRef: "a", Label: "A"}}}, "hosts"},
		{"repeated ref", memory.New{Label: "Item", Fields: []memory.FieldInput{{FieldRef: "a", Label: "A"}, {FieldRef: "a", Label: "B"}}}, "fields[1].fieldRef repeats"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { invalid(t, c.n.Validate(), c.want) })
	}
}

func TestBuildSealsEachValueToItsRow(t *testing.T) {
	v := testVault(t)
	n := memory.New{Label: "Login", Fields: []memory.FieldInput{
		{FieldRef: "user", Label: "User", Value: ptr("ada")},
		{FieldRef: "note", Label: "Note"},
	}}
	if err := n.Validate(); err != nil {
		t.Fatal(err)
	}
	st, err := memory.Build(v, "u1", memory.ByAgent, n)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(st.ID) {
		t.Errorf("id %q is no version 4 UUID", st.ID)
	}
	if st.UserID != "u1" || st.CreatedBy != memory.ByAgent || st.Revision != 1 || !st.AskBeforeUse {
		t.Errorf("stored = %+v", st)
	}
	sv := st.Fields[0].Value
	if sv == nil || st.Fields[1].Value != nil {
		t.Fatal("only the field given a value holds one")
	}
	if strings.Contains(string(sv.Ciphertext), "ada") {
		t.Error("the value is stored in the clear")
	}
	plain, err := v.Open(sv.KeyID, sv.Nonce, sv.Ciphertext, memory.AAD("u1", st.ID, "user"))
	if err != nil || string(plain) != "ada" {
		t.Fatalf("open = %q, %v", plain, err)
	}
	if _, err := v.Open(sv.KeyID, sv.Nonce, sv.Ciphertext, memory.AAD("u2", st.ID, "user")); err == nil {
		t.Error("a value moved to another user's row opened")
	}
	view := st.View()
	if !view.Fields[0].HasValue || view.Fields[1].HasValue || view.Hosts == nil {
		t.Errorf("view = %+v", view)
	}
	if _, err := memory.Build(nil, "u1", memory.ByUser, n); err == nil {
		t.Error("a value was kept with no key to seal it")
	}
}

func stored(t *testing.T, v *vault.Vault, readOnly bool) memory.Stored {
	t.Helper()
	n := memory.New{Label: "Card", ReadOnly: readOnly, Fields: []memory.FieldInput{
		{FieldRef: "number", Label: "Number", ValueType: "card_number", Value: ptr("4242424242424242")},
		{FieldRef: "name", Label: "Name", Value: ptr("Ada")},
	}}
	if err := n.Validate(); err != nil {
		t.Fatal(err)
	}
	st, err := memory.Build(v, "u1", memory.ByUser, n)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestApplyChangesWhatIsSet(t *testing.T) {
	v := testVault(t)
	cur := stored(t, v, false)
	next, err := memory.Apply(v, cur, memory.Patch{Label: ptr("Work card"), Hosts: &[]string{"HTTPS://pay.example/x"},
		Fields: []memory.FieldPatch{
			{FieldRef: "name", ClearValue: true, Label: ptr("Holder")},
			{FieldRef: "number", Remove: true},
			{FieldRef: "zip", Label: ptr("ZIP"), Value: ptr("90210")},
		}})
	if err != nil {
		t.Fatal(err)
	}
	if next.Label != "Work card" || !slices.Equal(next.Hosts, []string{"pay.example"}) || next.Revision != cur.Revision {
		t.Errorf("next = %+v", next.Item)
	}
	if len(next.Fields) != 2 || next.Fields[0].FieldRef != "name" || next.Fields[0].Label != "Holder" || next.Fields[0].Value != nil {
		t.Fatalf("fields = %+v", next.Fields)
	}
	zip := next.Fields[1]
	if zip.FieldRef != "zip" || zip.ValueType != "text" || zip.Value == nil {
		t.Fatalf("added field = %+v", zip)
	}
	if plain, err := v.Open(zip.Value.KeyID, zip.Value.Nonce, zip.Value.Ciphertext, memory.AAD("u1", cur.ID, "zip")); err != nil || string(plain) != "90210" {
		t.Errorf("added value opens to %q, %v", plain, err)
	}
	if len(cur.Fields) != 2 || cur.Fields[0].Value == nil || cur.Label != "Card" {
		t.Error("Apply changed the item it was given")
	}
}

func TestApplyRefuses(t *testing.T) {
	v := testVault(t)
	cur := stored(t, v, false)
	cases := []struct {
		name string
		cur  memory.Stored
		p    memory.Patch
		want string
	}{
		{"read-only", stored(t, v, true), memory.Patch{Label: ptr("x")}, "read-only"},
		{"read-only kept", stored(t, v, true), memory.Patch{ReadOnly: ptr(true), Label: ptr("x")}, "read-only"},
		{"remove unknown", cur, memory.Patch{Fields: []memory.FieldPatch{{FieldRef: "nope", Remove: true}}}, "names no field"},
		{"set and clear", cur, memory.Patch{Fields: []memory.FieldPatch{{FieldRef: "name", Value: ptr("B"), ClearValue: true}}}, "sets a value and clears it"},
		{"no fields left", cur, memory.Patch{Fields: []memory.FieldPatch{{FieldRef: "name", Remove: true}, {FieldRef: "number", Remove: true}}}, "1 to 20 fields"},
		{"blank label", cur, memory.Patch{Label: ptr(" ")}, "label"},
		{"bad type", cur, memory.Patch{Fields: []memory.FieldPatch{{FieldRef: "name", ValueType: ptr("ssn")}}}, "fields[0].valueType"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := memory.Apply(v, c.cur, c.p)
			invalid(t, err, c.want)
		})
	}
	ro := stored(t, v, true)
	next, err := memory.Apply(v, ro, memory.Patch{ReadOnly: ptr(false), Label: ptr("Open")})
	if err != nil || next.ReadOnly || next.Label != "Open" {
		t.Errorf("clearing readOnly with a change: %+v, %v", next.Item, err)
	}
}

func TestHostOf(t *testing.T) {
	for in, want := range map[string]string{"Shop.Example": "shop.example", "http://a.example:8080/p?q": "a.example", "https://b.example": "b.example"} {
		if got, err := memory.HostOf(in); err != nil || got != want {
			t.Errorf("HostOf(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"ftp://a.example", "javascript://x", "", "a b"} {
		if got, err := memory.HostOf(in); err == nil {
			t.Errorf("HostOf(%q) = %q, want an error", in, got)
		}
	}
	if _, err := memory.Hosts(make([]string, memory.MaxHosts+1)); err == nil {
		t.Error("more hosts than an item holds were taken")
	}
}

func TestMatch(t *testing.T) {
	entries := []memory.Entry{
		{Handle: "h-ask", ItemID: "i1", ItemLabel: "Personal", FieldRef: "email", Label: "Email", ValueType: "email", AskBeforeUse: true},
		{Handle: "h-free", ItemID: "i2", ItemLabel: "Work", FieldRef: "work_email", Label: "E-mail  address", ValueType: "email"},
		{Handle: "h-name", ItemID: "i1", ItemLabel: "Personal", FieldRef: "name", Label: "Name", ValueType: "name"},
	}
	fields, missing, next := memory.Match(entries, []memory.Want{
		{Key: "EMAIL", Label: "e-mail address", Type: "email"},
		{Key: "phone", Label: "Phone", Type: "phone"},
	})
	if next != memory.NextProvideMissing || !slices.Equal(missing, []string{"phone"}) {
		t.Fatalf("missing %q, next %q", missing, next)
	}
	var got []string
	for _, c := range fields[0].Candidates {
		got = append(got, c.Handle)
	}
	if !slices.Equal(got, []string{"h-free", "h-ask"}) {
		t.Errorf("candidates = %q, want the one usable without asking first, then by ref", got)
	}
	if !fields[0].Candidates[1].RequiresApproval || len(fields[1].Candidates) != 0 {
		t.Errorf("fields = %+v", fields)
	}
	if _, _, next := memory.Match(entries, []memory.Want{{Key: "name"}}); next != memory.NextAskBeforeUse {
		t.Errorf("every field found: next = %q", next)
	}
	if f, m, next := memory.Match(entries, nil); next != memory.NextNone || len(f) != 0 || m == nil {
		t.Errorf("nothing wanted: %v %v %q", f, m, next)
	}
}

func TestCheckMaterialize(t *testing.T) {
	h := func(c byte) string { return strings.Repeat(string(c), 32) }
	ok := []string{h('a'), h('b')}
	if err := memory.CheckMaterialize(ok, "fill the checkout form"); err != nil {
		t.Fatal(err)
	}
	many := make([]string, memory.MaxMaterializeLen+1)
	for i := range many {
		many[i] = h('a') + strings.Repeat("x", i)
	}
	for name, c := range map[string]struct {
		handles []string
		purpose string
	}{
		"none":       {nil, "p"},
		"too many":   {many, "p"},
		"short":      {[]string{"abc"}, "p"},
		"repeated":   {[]string{h('a'), h('a')}, "p"},
		"no purpose": {ok, " "},
		"long":       {ok, strings.Repeat("p", 501)},
	} {
		err := memory.CheckMaterialize(c.handles, c.purpose)
		if p, isProblem := problem.As(err); !isProblem || p.Code != problem.ValidationFailed || p.Detail != "" {
			t.Errorf("%s: err = %v, want validation_failed saying nothing of the handles", name, err)
		}
	}
}
