package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/trace"
	"github.com/agentrt/agentrt/view"
)

// Text is a value as a page shows it: escaped as trace.Sanitize escapes it
// (every bidi, zero-width and control character a visible escape), and
// when long, its head and tail around a marker the value cannot forge.
type Text struct {
	Head, Tail string
	Omitted    int
	Cut        bool
	Size       int
}

// show makes the Text of s.
func show(s string) Text {
	head, tail, omitted, cut := view.Cut(s)
	return Text{Head: trace.Sanitize(head), Tail: trace.Sanitize(tail), Omitted: omitted, Cut: cut, Size: len(s)}
}

var funcs = template.FuncMap{
	"show": show,
	"time": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"dollars": func(m agentrt.Micros) string { return m.Dollars() },
	"bytes":   byteCount,
	"short": func(s string) string {
		if len(s) > 12 {
			return s[:12] + "…"
		}
		return s
	},
	"add": func(a, b int) int { return a + b },
	// runID is a run's id as the CLI's trail prints it short, which agentrt
	// show and every command taking a run id accept back.
	"runID": func(id string) string { return trace.Sanitize(trace.ShortRunID(id)) },
}

// page is what every template gets.
type page struct {
	Title string
	CSRF  string
	Who   string
	Live  bool
	Data  any
}

// render writes a page. Every page is no-store: each shows approvals,
// runs or the chain as one signed-in approver may see them, and none may
// be kept by the browser or anything between it and the console once the
// session ends.
func (h *Handler) render(w http.ResponseWriter, name string, p page) {
	var buf bytes.Buffer
	if err := h.tmpl.ExecuteTemplate(&buf, name, p); err != nil {
		http.Error(w, "the page did not render", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(buf.Bytes())
}

func (h *Handler) pageLogin(w http.ResponseWriter, r *http.Request) {
	h.render(w, "login.html", page{Title: "Sign in", CSRF: h.preToken(w, r)})
}

func (h *Handler) pageEnroll(w http.ResponseWriter, r *http.Request) {
	h.render(w, "enroll.html", page{Title: "Enroll a passkey", CSRF: h.preToken(w, r)})
}

// pageNumber reads ?page=N (from 1).
func pageNumber(r *http.Request) int {
	n, err := strconv.Atoi(r.URL.Query().Get("page"))
	if err != nil || n < 1 || n > 1_000_000 {
		return 1
	}
	return n
}

// pager is the paging row of a list.
type pager struct {
	Page, Pages, Total int
	Prev, Next         string
}

func newPager(base string, n, size, total int) pager {
	p := pager{Page: n, Total: total, Pages: (total + size - 1) / size}
	if p.Pages == 0 {
		p.Pages = 1
	}
	if n > 1 {
		p.Prev = fmt.Sprintf("%spage=%d", base, n-1)
	}
	if n < p.Pages {
		p.Next = fmt.Sprintf("%spage=%d", base, n+1)
	}
	return p
}

type inboxRow struct {
	RunID, ID, Tool, Kind string
	Created               time.Time
	Left                  string
	Expired               bool
}

// timeLeft says how long an approval may still wait.
func timeLeft(now, expires time.Time) (string, bool) {
	if expires.IsZero() {
		return "no expiry", false
	}
	d := expires.Sub(now)
	if d <= 0 {
		return "expired", true
	}
	return d.Truncate(time.Second).String(), false
}

func (h *Handler) pageInbox(w http.ResponseWriter, r *http.Request, s *session) {
	n := pageNumber(r)
	as, total, err := h.cfg.Store.ListWaitingApprovals(r.Context(), h.cfg.PageSize, (n-1)*h.cfg.PageSize)
	if err != nil {
		http.Error(w, "reading the inbox failed", http.StatusInternalServerError)
		return
	}
	now := h.now()
	rows := make([]inboxRow, 0, len(as))
	for _, a := range as {
		left, expired := timeLeft(now, a.ExpiresAt)
		rows = append(rows, inboxRow{RunID: a.RunID, ID: a.ID, Tool: a.Request.Spec.Name, Kind: a.Kind, Created: a.CreatedAt, Left: left, Expired: expired})
	}
	h.render(w, "inbox.html", page{Title: "Inbox", CSRF: s.csrf, Who: s.name, Live: true,
		Data: struct {
			Rows  []inboxRow
			Pager pager
		}{rows, newPager("/?", n, h.cfg.PageSize, total)}})
}

// field is one named value of an approval.
type field struct {
	Name string
	Text Text
	// Size is the value's size by view.ValueSize, the one rule the CLI
	// prints too: a string's decoded bytes, else its compact JSON.
	Size int
}

// jsonFields lists a JSON object's members, each value as its JSON text;
// anything else is one field named by what.
func jsonFields(what string, raw json.RawMessage) []field {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return []field{{Name: what, Text: show(string(raw)), Size: view.ValueSize(raw)}}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]field, 0, len(keys))
	for _, k := range keys {
		v := string(m[k])
		var str string
		if json.Unmarshal(m[k], &str) == nil {
			v = str // a string is shown as its characters, escaped
		}
		out = append(out, field{Name: trace.Sanitize(k), Text: show(v), Size: view.ValueSize(m[k])})
	}
	return out
}

type approvalPage struct {
	A            agentrt.Approval
	Tool         string
	SideEffect   string
	Args         []field
	Presentation []field
	Capability   []field
	ArgsSize     int
	Left         string
	Pending      bool
	Problem      string
	// Stages is the approval's requirement and how far it is; nil for
	// an approval one decision grants.
	Stages []agentrt.StageProgress
}

func (h *Handler) pageApproval(w http.ResponseWriter, r *http.Request, s *session) {
	a, err := h.cfg.Store.GetApproval(r.Context(), r.PathValue("run"), r.PathValue("approval"))
	if errors.Is(err, agentrt.ErrNotFound) {
		http.NotFound(w, r)
		return
	}
	if err != nil {
		http.Error(w, "reading the approval failed", http.StatusInternalServerError)
		return
	}
	shownArgs, _ := agentrt.ApprovalArguments(a) // secrets the policy found shown as [REDACTED:<kind>]
	p := approvalPage{A: a, Tool: trace.Sanitize(a.Request.Spec.Name), SideEffect: trace.Sanitize(string(a.Request.Spec.SideEffect)),
		Args: jsonFields("arguments", shownArgs), Presentation: jsonFields("presentation", a.Presentation),
		Capability: jsonFields("capability", a.Capability), ArgsSize: view.ValueSize(a.Request.Args), Pending: a.Status == agentrt.ApprovalPending}
	p.Left, _ = timeLeft(h.now(), a.ExpiresAt)
	p.Stages, _ = agentrt.ApprovalStages(r.Context(), h.cfg.Store, a)
	// What is shown is what the hash binds: a row that does not match its
	// own hash is shown but cannot be decided.
	if err := agentrt.VerifyApproval(a); err != nil {
		p.Pending, p.Problem = false, "This approval does not match its own hash: its record was altered, and it cannot be decided."
	}
	h.render(w, "approval.html", page{Title: "Approval " + a.ID, CSRF: s.csrf, Who: s.name, Data: p})
}

// runFilters are the statuses the runs page can show alone, in the order
// its links list them.
var runFilters = []agentrt.RunStatus{agentrt.RunWaiting, agentrt.RunRunning, agentrt.RunCompleted, agentrt.RunFailed, agentrt.RunCancelled}

func (h *Handler) pageRuns(w http.ResponseWriter, r *http.Request, s *session) {
	n := pageNumber(r)
	status := agentrt.RunStatus(r.URL.Query().Get("status"))
	if status != "" && !status.Valid() {
		http.Error(w, "not a run status", http.StatusBadRequest)
		return
	}
	runs, total, err := view.RunsByStatusPage(r.Context(), h.cfg.Store, status, h.cfg.PageSize, (n-1)*h.cfg.PageSize)
	if err != nil {
		http.Error(w, "reading runs failed", http.StatusInternalServerError)
		return
	}
	base := "/runs?"
	if status != "" {
		base = "/runs?status=" + url.QueryEscape(string(status)) + "&"
	}
	h.render(w, "runs.html", page{Title: "Runs", CSRF: s.csrf, Who: s.name, Live: true,
		Data: struct {
			Runs    []view.RunSummary
			Pager   pager
			Status  agentrt.RunStatus
			Filters []agentrt.RunStatus
		}{runs, newPager(base, n, h.cfg.PageSize, total), status, runFilters}})
}

// timelineEntry is one event of a run as its timeline lists it.
type timelineEntry struct {
	Seq    int64
	At     time.Time
	Type   string
	Detail Text
}

func (h *Handler) pageRun(w http.ResponseWriter, r *http.Request, s *session) {
	runID := r.PathValue("run")
	n := pageNumber(r)
	offset := (n - 1) * h.cfg.PageSize
	detail, err := view.DetailPage(r.Context(), h.cfg.Store, runID, h.cfg.PageSize, offset)
	if errors.Is(err, agentrt.ErrNotFound) {
		http.NotFound(w, r)
		return
	}
	if err != nil {
		http.Error(w, "reading the run failed", http.StatusInternalServerError)
		return
	}
	steps, _, err := h.cfg.Store.ListStepsPage(r.Context(), runID, h.cfg.PageSize, offset)
	if err != nil {
		http.Error(w, "reading the run's steps failed", http.StatusInternalServerError)
		return
	}
	cards, err := h.stepCards(r.Context(), runID, steps)
	if err != nil {
		http.Error(w, "reading the run's events failed", http.StatusInternalServerError)
		return
	}
	evs, evTotal, err := h.cfg.Store.ListEventsPage(r.Context(), runID, h.cfg.PageSize, offset)
	if err != nil {
		http.Error(w, "reading the run's events failed", http.StatusInternalServerError)
		return
	}
	calls, err := h.cfg.Store.ListModelCalls(r.Context(), runID)
	if err != nil {
		http.Error(w, "reading the run's model calls failed", http.StatusInternalServerError)
		return
	}
	if len(calls) > h.cfg.PageSize {
		calls = calls[len(calls)-h.cfg.PageSize:]
	}
	entries := make([]timelineEntry, 0, len(evs))
	for _, e := range evs {
		entries = append(entries, timelineEntry{Seq: e.Seq, At: e.At, Type: trace.Sanitize(string(e.Type)), Detail: show(string(e.Payload))})
	}
	total := max(detail.StepsTotal, evTotal)
	h.render(w, "run.html", page{Title: "Run " + runID, CSRF: s.csrf, Who: s.name, Live: true,
		Data: struct {
			D       view.RunDetailPage
			Tone    string
			Steps   []stepCard
			Events  []timelineEntry
			EvTotal int
			Calls   []agentrt.ModelCall
			Ended   bool
			Pager   pager
		}{detail.Bounded(), runTone(detail.Run.Status), cards, entries, evTotal, calls, detail.Run.Status.Terminal(),
			newPager("/runs/"+runID+"?", n, h.cfg.PageSize, total)}})
}

// cancelRun cancels a run, recorded as by the signed-in approver.
func (h *Handler) cancelRun(w http.ResponseWriter, r *http.Request, s *session) {
	runID := r.PathValue("run")
	if _, err := h.op.Cancel(r.Context(), runID, s.name, r.PostFormValue("note")); err != nil {
		status, code := decideStatus(err)
		apiError(w, status, code, err.Error())
		return
	}
	http.Redirect(w, r, "/runs/"+runID, http.StatusSeeOther)
}

// budgetRow is one budget as the budgets page shows it: its current
// window's reserved, settled and uncertain amounts, a reservation still
// reserved past its expiry counted as uncertain.
type budgetRow struct {
	Name, Scope, Window, Ceilings, Status string
	Reserved, Settled, Uncertain          agentrt.Amount
	// Cost is the window's use of the cost ceiling, nil without one.
	Cost *usage
}

// pageBudgets lists the budgets runs share, read-only: they are changed
// with agentrt budgets, never here.
func (h *Handler) pageBudgets(w http.ResponseWriter, r *http.Request, s *session) {
	br, ok := h.cfg.Store.(agentrt.BudgetReader)
	var rows []budgetRow
	if ok {
		bs, err := br.ListBudgets(r.Context())
		if err != nil {
			http.Error(w, "reading budgets failed", http.StatusInternalServerError)
			return
		}
		now := h.now()
		for _, b := range bs {
			row := budgetRow{Name: trace.Sanitize(b.Name), Scope: trace.Sanitize(b.Scope), Window: string(b.Window), Status: "active"}
			if b.MaxCost > 0 {
				row.Ceilings = b.MaxCost.Dollars() + " "
			}
			if b.MaxTokens > 0 {
				row.Ceilings += fmt.Sprintf("%d tokens", b.MaxTokens)
			}
			if b.Retired() {
				row.Status = "retired by " + trace.Sanitize(b.RetiredBy)
			}
			ws, err := br.ListBudgetUsage(r.Context(), b.ID, 1)
			if err != nil {
				http.Error(w, "reading budgets failed", http.StatusInternalServerError)
				return
			}
			if len(ws) == 1 && ws[0].WindowStart.Equal(b.Window.Start(now)) {
				row.Reserved, row.Settled, row.Uncertain = ws[0].Reserved, ws[0].Settled, ws[0].Uncertain
				open, err := br.ListReservations(r.Context(), agentrt.ReservationFilter{BudgetID: b.ID, Open: true}, 1000)
				if err != nil {
					http.Error(w, "reading budgets failed", http.StatusInternalServerError)
					return
				}
				for _, res := range open {
					if res.Status == agentrt.ReservationReserved && res.Uncertain(now) && res.WindowStart.Equal(ws[0].WindowStart) {
						row.Reserved.Cost -= res.Reserved.Cost
						row.Reserved.Tokens -= res.Reserved.Tokens
						row.Uncertain.Cost += res.Reserved.Cost
						row.Uncertain.Tokens += res.Reserved.Tokens
					}
				}
			}
			row.Cost = newUsage(row.Reserved.Cost+row.Settled.Cost+row.Uncertain.Cost, b.MaxCost)
			rows = append(rows, row)
		}
	}
	h.render(w, "budgets.html", page{Title: "Budgets", CSRF: s.csrf, Who: s.name, Data: rows})
}
