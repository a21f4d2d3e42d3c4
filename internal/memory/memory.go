// Package memory is the domain of what a user keeps for their agents: items of
// fields (a card, an address, a login), their values sealed at rest and never shown
// by a list or a read, the handles a session gets for them, and materialisation, the
// one way a value leaves in the clear.
package memory

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/catalog"
	"github.com/waystation/waystation/internal/problem"
)

// ValueTypes are the types a field's value may have; card fields and passwords are
// always secret.
var ValueTypes = []string{"text", "name", "email", "phone", "address", "date", "number", "url",
	"password", "card_number", "card_expiry", "card_cvc"}

// AlwaysSecret tells whether values of type t are secret whatever the user says.
func AlwaysSecret(t string) bool { return t == "password" || CardLike(t) }

// CardLike tells whether values of type t are payment card data, which only an
// authorize_payment approval releases.
func CardLike(t string) bool { return strings.HasPrefix(t, "card_") }

// Field is one field of an item as lists and reads show it: never its value.
type Field struct {
	FieldRef  string `json:"fieldRef"`
	Label     string `json:"label"`
	Hint      string `json:"hint,omitempty"`
	ValueType string `json:"valueType"`
	Secret    bool   `json:"secret"`
	HasValue  bool   `json:"hasValue"`
}

// Item is a user's item as lists and reads show it.
type Item struct {
	ID    string `json:"id"`
	Label string `json:"label"`
	// Hosts are the sites the item is for; empty means every site.
	Hosts        []string  `json:"hosts"`
	AskBeforeUse bool      `json:"askBeforeUse"`
	ReadOnly     bool      `json:"readOnly"`
	Revision     int       `json:"revision"`
	Fields       []Field   `json:"fields"`
	CreatedAt    time.Time `json:"createdAt"`
	UpdatedAt    time.Time `json:"updatedAt"`
}

// Sealed is a value encrypted for storage.
type Sealed struct {
	KeyID      string
	Nonce      []byte
	Ciphertext []byte
}

// StoredField is a field as the store keeps it: its value sealed, or none.
type StoredField struct {
	Field
	Value *Sealed
}

// Stored is an item as the store keeps it.
type Stored struct {
	Item
	UserID    string
	CreatedBy string
	Fields    []StoredField
}

// View is the item with the value-free fields a list or read shows.
func (s Stored) View() Item {
	it := s.Item
	it.Fields = make([]Field, len(s.Fields))
	for i, f := range s.Fields {
		f.HasValue = f.Value != nil
		it.Fields[i] = f.Field
	}
	if it.Hosts == nil {
		it.Hosts = []string{}
	}
	return it
}

// Who made an item.
const (
	ByUser    = "user"
	ByAgent   = "agent"
	ByRequest = "request"
)

// Errors of memory.
var (
	ErrNotFound     = problem.New(problem.NotFound, "No memory item with this id is visible to this key.")
	ErrStale        = problem.New(problem.PreconditionFailed, "The item changed since the revision in If-Match; read it again and retry with its ETag.")
	ErrTooManyItems = problem.New(problem.QuotaExceeded, "This user keeps as many memory items as one user may; archive one to add another.")
)

// FieldInput is one field as a writer gives it; Value, when set, is sealed and never
// shown again.
type FieldInput struct {
	FieldRef  string  `json:"fieldRef"`
	Label     string  `json:"label"`
	Hint      string  `json:"hint"`
	ValueType string  `json:"valueType"`
	Secret    bool    `json:"secret"`
	Value     *string `json:"value"`
}

// New is an item as a writer gives it.
type New struct {
	Label        string       `json:"label"`
	Hosts        []string     `json:"hosts"`
	AskBeforeUse *bool        `json:"askBeforeUse"`
	ReadOnly     bool         `json:"readOnly"`
	Fields       []FieldInput `json:"fields"`
}

// Patch changes an item: what is set changes, what is nil stays. A field of Fields
// whose FieldRef is new is added; Remove drops one; ClearValue forgets its value.
type Patch struct {
	Label        *string      `json:"label"`
	Hosts        *[]string    `json:"hosts"`
	AskBeforeUse *bool        `json:"askBeforeUse"`
	ReadOnly     *bool        `json:"readOnly"`
	Fields       []FieldPatch `json:"fields"`
}

// FieldPatch changes one field.
type FieldPatch struct {
	FieldRef   string  `json:"fieldRef"`
	Label      *string `json:"label"`
	Hint       *string `json:"hint"`
	ValueType  *string `json:"valueType"`
	Secret     *bool   `json:"secret"`
	Value      *string `json:"value"`
	ClearValue bool    `json:"clearValue"`
	Remove     bool    `json:"remove"`
}

// Bounds of an item.
const (
	MaxFields   = 20
	MaxHosts    = 20
	MaxValueLen = 4096
)

var refPattern = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_.-]{0,63}$`)

// Hosts reads the sites an item is for: hostnames (or URLs, whose host is taken),
// normalised; none means every site.
func Hosts(in []string) ([]string, error) {
	if len(in) > MaxHosts {
		return nil, problem.Invalid("hosts lists at most " + strconv.Itoa(MaxHosts) + " sites.")
	}
	out := make([]string, 0, len(in))
	for _, h := range in {
		host, err := HostOf(h)
		if err != nil {
			return nil, problem.Invalid("hosts must be hostnames such as shop.example, or URLs.")
		}
		if !slices.Contains(out, host) {
			out = append(out, host)
		}
	}
	return out, nil
}

// HostOf is the normalised hostname of a hostname or an http(s) URL.
func HostOf(s string) (string, error) {
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			return "", fmt.Errorf("memory: %q is not an http URL", s)
		}
		s = u.Hostname()
	}
	return catalog.NormalizeHostname(s)
}

func (f *FieldInput) check(at string) error {
	if !refPattern.MatchString(f.FieldRef) {
		return problem.Invalid(at + ".fieldRef must be a name of letters, digits, _ . - (at most 64).")
	}
	if err := problem.Text(at+".label", f.Label, true, 200); err != nil {
		return err
	}
	if err := problem.Text(at+".hint", f.Hint, false, 500); err != nil {
		return err
	}
	if f.ValueType == "" {
		f.ValueType = "text"
	}
	if !slices.Contains(ValueTypes, f.ValueType) {
		return problem.Invalid(at + ".valueType must be one of " + strings.Join(ValueTypes, ", ") + ".")
	}
	f.Secret = f.Secret || AlwaysSecret(f.ValueType)
	if f.Value != nil {
		if v := *f.Value; strings.TrimSpace(v) == "" || len(v) > MaxValueLen || !utf8.ValidString(v) || strings.ContainsRune(v, 0) {
			return problem.Invalid(at + ".value must be text of 1 to " + strconv.Itoa(MaxValueLen) + " bytes.")
		}
	}
	return nil
}

// Validate checks n and fills in defaults: a new item asks before use unless told
// otherwise.
func (n *New) Validate() error {
	if err := problem.Text("label", n.Label, true, 200); err != nil {
		return err
	}
	hosts, err := Hosts(n.Hosts)
	if err != nil {
		return err
	}
	n.Hosts = hosts
	if n.AskBeforeUse == nil {
		yes := true
		n.AskBeforeUse = &yes
	}
	if len(n.Fields) == 0 || len(n.Fields) > MaxFields {
		return problem.Invalid("An item has 1 to " + strconv.Itoa(MaxFields) + " fields.")
	}
	seen := map[string]bool{}
	for i := range n.Fields {
		f := &n.Fields[i]
		if err := f.check("fields[" + strconv.Itoa(i) + "]"); err != nil {
			return err
		}
		if seen[f.FieldRef] {
			return problem.Invalid("fields[" + strconv.Itoa(i) + "].fieldRef repeats another field's.")
		}
		seen[f.FieldRef] = true
	}
	return nil
}

// Sealer encrypts a value bound to additional data under the server's current key.
type Sealer interface {
	Seal(plaintext, aad []byte) (keyID string, nonce, ciphertext []byte, err error)
}

// Opener decrypts a value sealed under keyID with its additional data.
type Opener interface {
	Open(keyID string, nonce, ciphertext, aad []byte) ([]byte, error)
}

// AAD is the additional data of a memory value: user|item|fieldRef, so that a
// ciphertext moved to another row does not open.
func AAD(userID, itemID, fieldRef string) []byte {
	return []byte(userID + "|" + itemID + "|" + fieldRef)
}

func seal(s Sealer, userID, itemID, ref, value string) (*Sealed, error) {
	if s == nil {
		return nil, problem.New(problem.Internal, "")
	}
	keyID, nonce, ct, err := s.Seal([]byte(value), AAD(userID, itemID, ref))
	if err != nil {
		return nil, err
	}
	return &Sealed{KeyID: keyID, Nonce: nonce, Ciphertext: ct}, nil
}

// NewID is a random (version 4) UUID, the id of a new item: it is known before the
// item is stored, since its values are sealed to it.
func NewID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// Build makes the stored form of a checked new item of userID, sealing its values.
func Build(s Sealer, userID, createdBy string, n New) (Stored, error) {
	st := Stored{UserID: userID, CreatedBy: createdBy, Item: Item{ID: NewID(), Label: n.Label, Hosts: n.Hosts,
		AskBeforeUse: *n.AskBeforeUse, ReadOnly: n.ReadOnly, Revision: 1}}
	for _, f := range n.Fields {
		sf := StoredField{Field: Field{FieldRef: f.FieldRef, Label: f.Label, Hint: f.Hint, ValueType: f.ValueType, Secret: f.Secret}}
		if f.Value != nil {
			v, err := seal(s, userID, st.ID, f.FieldRef, *f.Value)
			if err != nil {
				return st, err
			}
			sf.Value = v
		}
		st.Fields = append(st.Fields, sf)
	}
	return st, nil
}

// Apply changes cur as p says, sealing new values; the revision is the store's to
// advance. A read-only item takes no change but clearing readOnly.
func Apply(s Sealer, cur Stored, p Patch) (Stored, error) {
	if cur.ReadOnly && (p.ReadOnly == nil || *p.ReadOnly) {
		return cur, problem.Invalid("The item is read-only: set readOnly to false (alone or with the change) to change it.")
	}
	next := cur
	next.Fields = slices.Clone(cur.Fields)
	if p.Label != nil {
		if err := problem.Text("label", *p.Label, true, 200); err != nil {
			return cur, err
		}
		next.Label = *p.Label
	}
	if p.Hosts != nil {
		hosts, err := Hosts(*p.Hosts)
		if err != nil {
			return cur, err
		}
		next.Hosts = hosts
	}
	if p.AskBeforeUse != nil {
		next.AskBeforeUse = *p.AskBeforeUse
	}
	if p.ReadOnly != nil {
		next.ReadOnly = *p.ReadOnly
	}
	for i, fp := range p.Fields {
		at := "fields[" + strconv.Itoa(i) + "]"
		j := slices.IndexFunc(next.Fields, func(f StoredField) bool { return f.FieldRef == fp.FieldRef })
		if fp.Remove {
			if j < 0 {
				return cur, problem.Invalid(at + ".fieldRef names no field of the item.")
			}
			next.Fields = slices.Delete(next.Fields, j, j+1)
			continue
		}
		in := FieldInput{FieldRef: fp.FieldRef, Value: fp.Value}
		if j >= 0 {
			f := next.Fields[j]
			in.Label, in.Hint, in.ValueType, in.Secret = f.Label, f.Hint, f.ValueType, f.Secret
		}
		if fp.Label != nil {
			in.Label = *fp.Label
		}
		if fp.Hint != nil {
			in.Hint = *fp.Hint
		}
		if fp.ValueType != nil {
			in.ValueType = *fp.ValueType
		}
		if fp.Secret != nil {
			in.Secret = *fp.Secret
		}
		if err := in.check(at); err != nil {
			return cur, err
		}
		sf := StoredField{Field: Field{FieldRef: in.FieldRef, Label: in.Label, Hint: in.Hint, ValueType: in.ValueType, Secret: in.Secret}}
		if j >= 0 {
			sf.Value = next.Fields[j].Value
		}
		switch {
		case fp.ClearValue && fp.Value != nil:
			return cur, problem.Invalid(at + " sets a value and clears it at once.")
		case fp.ClearValue:
			sf.Value = nil
		case fp.Value != nil:
			v, err := seal(s, cur.UserID, cur.ID, in.FieldRef, *fp.Value)
			if err != nil {
				return cur, err
			}
			sf.Value = v
		}
		if j >= 0 {
			next.Fields[j] = sf
		} else {
			next.Fields = append(next.Fields, sf)
		}
	}
	if len(next.Fields) == 0 || len(next.Fields) > MaxFields {
		return cur, problem.Invalid("An item has 1 to " + strconv.Itoa(MaxFields) + " fields.")
	}
	return next, nil
}

// Scope selects items by site: those for Host and those for every site; AllSites
// alone: only those for every site; neither: all.
type Scope struct {
	Host     string
	AllSites bool
}

// Entry is one handle of a session's catalog: a field with a value of one of the
// user's items, never the value.
type Entry struct {
	Handle       string `json:"handle"`
	ItemID       string `json:"itemId"`
	ItemLabel    string `json:"itemLabel"`
	FieldRef     string `json:"fieldRef"`
	Label        string `json:"label"`
	ValueType    string `json:"valueType"`
	AskBeforeUse bool   `json:"askBeforeUse"`
}

// Unavailable is a field the catalog holds back, and why.
type Unavailable struct {
	ItemID   string `json:"itemId"`
	FieldRef string `json:"fieldRef"`
	Reason   string `json:"reason"`
}

// ReasonPaymentApproval is why card data is held back: only a fulfilled
// authorize_payment approval in the session releases it.
const ReasonPaymentApproval = "payment_approval_required"

// Releasable is what the store knows of a handle a session asks to materialise.
type Releasable struct {
	Handle string
	// Found is false for a handle that is not this session's (or whose value is
	// gone); the rest is then empty.
	Found bool
	// Covered is true when a fulfilled request of the session names the handle in
	// its artifact (a provided value's own request, or an ask_before_use approval).
	Covered  bool
	CardLike bool
	Value    Sealed
	AAD      []byte
}

// Statuses of a materialised handle.
const (
	Released          = "released"
	NeedsApproval     = "approval_required"
	UnknownHandle     = "not_found"
	MaxMaterializeLen = 50
)

// Value is one handle's answer to a materialisation; Value only when Released.
type Value struct {
	Handle string  `json:"handle"`
	Status string  `json:"status"`
	Value  *string `json:"value,omitempty"`
}

// Materializer releases values to the agent that owns a session: only handles of
// that session, each covered by a fulfilled approval in it, card data never without
// a payment approval. Every call that releases a value writes exactly one audit row.
type Materializer struct {
	Store  Sessions
	Opener Opener
}

// ErrApprovalRequired is a materialisation that could release nothing.
var ErrApprovalRequired = problem.New(problem.ApprovalRequired, "")

// Materialize answers handles for purpose in session sessionID of agent p.
func (m Materializer) Materialize(ctx context.Context, p auth.Principal, sessionID string, handles []string, purpose string) ([]Value, error) {
	rs, err := m.Store.Releasable(ctx, p, sessionID, handles)
	if err != nil {
		return nil, err
	}
	out := make([]Value, len(rs))
	var released []string
	for i, r := range rs {
		out[i] = Value{Handle: r.Handle, Status: UnknownHandle}
		switch {
		case !r.Found:
			continue
		case !r.Covered || r.CardLike:
			out[i].Status = NeedsApproval
			continue
		}
		if m.Opener == nil {
			return nil, problem.New(problem.Internal, "")
		}
		plain, err := m.Opener.Open(r.Value.KeyID, r.Value.Nonce, r.Value.Ciphertext, r.AAD)
		if err != nil {
			return nil, fmt.Errorf("memory: a sealed value did not open: %w", err)
		}
		v := string(plain)
		out[i] = Value{Handle: r.Handle, Status: Released, Value: &v}
		released = append(released, r.Handle)
	}
	if len(released) == 0 {
		return nil, ErrApprovalRequired
	}
	if err := m.Store.RecordMaterialization(ctx, p, sessionID, released, purpose); err != nil {
		return nil, err
	}
	return out, nil
}

// Protected is the redaction source: the plaintexts of a user's values that must
// never reach a model or the event log (of its items, secret fields, items that ask
// before use and card data; every value provided through a request).
type Protected struct {
	Store interface {
		ProtectedSealed(ctx context.Context, userID string) ([]Releasable, error)
		GivenSealed(ctx context.Context, userID, agentID string) ([]Releasable, error)
	}
	Opener Opener
}

// Protected opens the user's protected values.
func (p Protected) Protected(ctx context.Context, userID string) ([]string, error) {
	rs, err := p.Store.ProtectedSealed(ctx, userID)
	if err != nil {
		return nil, err
	}
	return p.open(rs)
}

// Given opens the values that were materialised to agentID of userID.
func (p Protected) Given(ctx context.Context, userID, agentID string) ([]string, error) {
	rs, err := p.Store.GivenSealed(ctx, userID, agentID)
	if err != nil {
		return nil, err
	}
	return p.open(rs)
}

func (p Protected) open(rs []Releasable) ([]string, error) {
	if len(rs) > 0 && p.Opener == nil {
		return nil, fmt.Errorf("memory: no key to open protected values")
	}
	out := make([]string, 0, len(rs))
	for _, r := range rs {
		plain, err := p.Opener.Open(r.Value.KeyID, r.Value.Nonce, r.Value.Ciphertext, r.AAD)
		if err != nil {
			return nil, fmt.Errorf("memory: a protected value did not open: %w", err)
		}
		out = append(out, string(plain))
	}
	return out, nil
}

// Want is a field an agent needs for a task.
type Want struct {
	Key   string `json:"key"`
	Label string `json:"label"`
	Type  string `json:"type"`
}

// Candidate is a saved value that may fill a wanted field: a handle of the session,
// and whether using it waits for the user's approval.
type Candidate struct {
	Handle           string `json:"handle"`
	ItemID           string `json:"itemId"`
	ItemLabel        string `json:"itemLabel"`
	RequiresApproval bool   `json:"requiresApproval"`
}

// Candidates are a wanted field's candidates.
type Candidates struct {
	Key        string      `json:"key"`
	Candidates []Candidate `json:"candidates"`
}

// Next actions of a resolution.
const (
	// NextProvideMissing: some field has no saved value; raise provide_missing.
	NextProvideMissing = "provide_missing"
	// NextAskBeforeUse: every field has a candidate; raise ask_before_use naming the
	// chosen handles (approved at once when none requires approval), then
	// materialize.
	NextAskBeforeUse = "ask_before_use"
	// NextNone: no field was asked for.
	NextNone = "none"
)

// Match finds, deterministically, the catalog entries that may fill each wanted
// field: the same field ref, or the same value type under the same label (case and
// spacing aside), in catalog order, those usable without a question first. It says
// which fields have none, and what the agent does next.
func Match(entries []Entry, want []Want) (fields []Candidates, missing []string, next string) {
	norm := func(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }
	next = NextNone
	fields = []Candidates{}
	missing = []string{}
	for _, w := range want {
		c := Candidates{Key: w.Key, Candidates: []Candidate{}}
		for _, e := range entries {
			if strings.EqualFold(e.FieldRef, w.Key) || (w.Type != "" && e.ValueType == w.Type && norm(e.Label) == norm(w.Label)) {
				c.Candidates = append(c.Candidates, Candidate{Handle: e.Handle, ItemID: e.ItemID, ItemLabel: e.ItemLabel, RequiresApproval: e.AskBeforeUse})
			}
		}
		slices.SortStableFunc(c.Candidates, func(a, b Candidate) int {
			switch {
			case a.RequiresApproval == b.RequiresApproval:
				return 0
			case !a.RequiresApproval:
				return -1
			}
			return 1
		})
		if len(c.Candidates) == 0 {
			missing = append(missing, w.Key)
		}
		fields = append(fields, c)
	}
	switch {
	case len(want) == 0:
	case len(missing) > 0:
		next = NextProvideMissing
	default:
		next = NextAskBeforeUse
	}
	return fields, missing, next
}
