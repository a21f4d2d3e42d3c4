package web

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/waystation/waystation/internal/auth"
	"github.com/waystation/waystation/internal/memory"
	"github.com/waystation/waystation/internal/problem"
)

// MemoryView is the person's saved items: what each holds (never the values), a form
// to save one, and one to archive each.
type MemoryView struct {
	Page
	Bar        AppBar
	Items      []MemoryRow
	ValueTypes []string
	Message    string
}

// MemoryRow is one saved item, and what its change form starts from.
type MemoryRow struct {
	ID, Label, Sites, Ask, ArchiveAction string
	Fields                               []string
	EditAction, Revision, SitesInput     string
	AskBeforeUse, ReadOnly               bool
	Edit                                 []MemoryFieldRow
}

// MemoryFieldRow is one field of an item in its change form: never its value.
type MemoryFieldRow struct {
	Ref, Label string
	Saved      bool
}

// memoryShown is how many items the page lists.
const memoryShown = 200

func (s *Server) memoryPage(w http.ResponseWriter, r *http.Request, ws auth.WebSession, message string, status int) {
	items, _, err := s.approvals.Memory.Items(r.Context(), ws.UserID, memory.Scope{}, nil, memoryShown)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	v := MemoryView{Page: s.appPage("Memory"), Bar: appBar(ws), ValueTypes: memory.ValueTypes, Message: message}
	for _, st := range items {
		it := st.View()
		row := MemoryRow{ID: it.ID, Label: it.Label, Sites: "every site", Ask: "used without asking you",
			ArchiveAction: appPath + "/memory/" + it.ID + "/archive", EditAction: appPath + "/memory/" + it.ID,
			Revision: strconv.Itoa(it.Revision), SitesInput: strings.Join(it.Hosts, ", "), AskBeforeUse: it.AskBeforeUse, ReadOnly: it.ReadOnly}
		if len(it.Hosts) > 0 {
			row.Sites = strings.Join(it.Hosts, ", ")
		}
		if it.AskBeforeUse {
			row.Ask = "asks you before each use"
		}
		for _, f := range it.Fields {
			state := "empty"
			if f.HasValue {
				state = "saved"
			}
			row.Fields = append(row.Fields, f.Label+" ("+f.ValueType+", "+state+")")
			row.Edit = append(row.Edit, MemoryFieldRow{Ref: f.FieldRef, Label: f.Label, Saved: f.HasValue})
		}
		v.Items = append(v.Items, row)
	}
	s.renderApp(w, r, MemoryPage(v), status)
}

func (s *Server) handleMemory() http.HandlerFunc {
	return s.consolePage(s.memoryPage)
}

// handleSaveMemory saves an item of one value from the form: the value goes to the
// sealer and nowhere else, and is never shown back.
func (s *Server) handleSaveMemory() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ws, ok := s.consoleForm(w, r)
		if !ok {
			return
		}
		value := r.PostForm.Get("value")
		ask := r.PostForm.Get("askBeforeUse") == "true"
		n := memory.New{Label: r.PostForm.Get("label"), AskBeforeUse: &ask, Fields: []memory.FieldInput{{
			FieldRef: strings.TrimSpace(r.PostForm.Get("fieldRef")), Label: r.PostForm.Get("fieldLabel"), ValueType: r.PostForm.Get("valueType"),
			Secret: r.PostForm.Get("secret") == "true", Value: &value}}}
		if h := strings.TrimSpace(r.PostForm.Get("site")); h != "" {
			host, err := memory.HostOf(h)
			if err != nil {
				s.memoryPage(w, r, ws, "Nothing was saved: the site must be an address or a hostname.", http.StatusUnprocessableEntity)
				return
			}
			n.Hosts = []string{host}
		}
		_, err := s.approvals.Memory.Create(r.Context(), ws.Principal, n)
		f := form{page: func(message string, status int) { s.memoryPage(w, r, ws, message, status) },
			refusals: append([]refusal{{err: memory.ErrNoSealer, message: "This server has no key to keep values sealed, so it saves none.", status: http.StatusServiceUnavailable}},
				detailed("Nothing was saved: ", http.StatusUnprocessableEntity, problem.ValidationFailed, problem.QuotaExceeded)...)}
		s.answer(w, r, f, err, seeOther(w, r, appPath+"/memory"))
	}
}

// handleEditMemory changes an item from its form: its name, sites, whether it asks,
// whether it is read-only, and for each field its label and a new value (typed ones
// only: an empty box keeps the value) or forgetting it. The form carries the revision
// it was drawn from, so a change made meanwhile elsewhere is not overwritten.
func (s *Server) handleEditMemory() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, ws, ok := s.consoleItemForm(w, r)
		if !ok {
			return
		}
		rev, err := strconv.Atoi(r.PostForm.Get("revision"))
		if err != nil || rev < 1 {
			s.memoryPage(w, r, ws, "Nothing was changed: the form was incomplete. Change it again from this page.", http.StatusUnprocessableEntity)
			return
		}
		cur, err := s.approvals.Memory.Item(r.Context(), ws.UserID, id)
		if !s.found(w, r, err) {
			return
		}
		stale := "Nothing was changed: “" + cur.Label + "” changed since you opened this page. Here it is as it is now."
		if cur.Revision != rev {
			s.memoryPage(w, r, ws, stale, http.StatusConflict)
			return
		}
		label, ask, readOnly := r.PostForm.Get("label"), r.PostForm.Get("askBeforeUse") == "true", r.PostForm.Get("readOnly") == "true"
		hosts := strings.FieldsFunc(r.PostForm.Get("sites"), func(c rune) bool { return c == ',' || c == ' ' || c == '\n' || c == '\r' })
		if hosts == nil {
			hosts = []string{}
		}
		if cur.ReadOnly && readOnly {
			s.memoryPage(w, r, ws, "Nothing was changed: “"+cur.Label+"” is read-only. Untick Read-only to change it.", http.StatusUnprocessableEntity)
			return
		}
		p := memory.Patch{Label: &label, Hosts: &hosts, AskBeforeUse: &ask, ReadOnly: &readOnly}
		for _, f := range cur.Fields {
			fp := memory.FieldPatch{FieldRef: f.FieldRef}
			if l, ok := r.PostForm["label."+f.FieldRef]; ok && l[0] != f.Label {
				fp.Label = &l[0]
			}
			if v := r.PostForm.Get("value." + f.FieldRef); v != "" {
				fp.Value = &v
			} else if r.PostForm.Get("forget."+f.FieldRef) == "true" {
				fp.ClearValue = true
			}
			if fp.Label != nil || fp.Value != nil || fp.ClearValue {
				p.Fields = append(p.Fields, fp)
			}
		}
		_, err = s.approvals.Memory.Update(r.Context(), ws.UserID, id, rev, p)
		f := form{page: func(message string, status int) { s.memoryPage(w, r, ws, message, status) }, refusals: []refusal{
			{err: memory.ErrNoSealer, message: "This server has no key to keep values sealed, so it changes none.", status: http.StatusServiceUnavailable},
			{err: memory.ErrStale, message: stale, status: http.StatusConflict},
			{code: problem.ValidationFailed, message: "Nothing was changed: ", detail: true, status: http.StatusUnprocessableEntity},
		}}
		s.answer(w, r, f, err, seeOther(w, r, appPath+"/memory"))
	}
}

// handleArchiveMemory archives an item, forgetting its values.
func (s *Server) handleArchiveMemory() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, ws, ok := s.consoleItemForm(w, r)
		if !ok {
			return
		}
		err := s.approvals.Memory.Archive(r.Context(), ws.UserID, id, 0)
		s.answer(w, r, form{}, err, seeOther(w, r, appPath+"/memory"))
	}
}
