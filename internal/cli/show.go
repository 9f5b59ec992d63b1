package cli

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/view"
)

var showCommand = fromKit(&kitCmd{
	Name:    "show",
	Summary: "show a run: its waiting approvals first, then its steps",
	Usage:   "<run> [-limit N] [-offset N]",
	Bind:    onPage(defaultDetail, "how many steps and approvals to show", "how many steps and approvals to skip", runShow),
})

func runShow(x *inv, rp runPage) int {
	e := x.env
	st, runID, limit, offset := rp.st, rp.runID, rp.limit, rp.offset

	page, err := view.DetailPage(background(), st, runID, limit, offset)
	if errors.Is(err, agentrt.ErrNotFound) {
		return e.fail("no run %s in %s", runID, rp.name)
	}
	if err != nil {
		return e.fail("reading run %s: %v", runID, err)
	}
	calls, err := runCalls(st, runID)
	if err != nil {
		return e.fail("reading run %s's model calls: %v", runID, err)
	}
	p := &printer{w: e.stdout}
	if x.g.json {
		writeShowJSON(p, st, page, limit, offset, calls)
		return e.done(p, ExitOK)
	}
	x.writeShow(p, st, rp, page)
	writeRunCalls(p, calls, e.clock())
	writeShowApprovals(p, page, offset)
	return e.done(p, ExitOK)
}

// writeShow prints show's text up to the model calls: the run, its
// pending approvals with the command that decides each, its steps and
// their blocks and disclosures.
func (x *inv) writeShow(p *printer, st agentrt.StoreReader, rp runPage, page view.RunDetailPage) {
	runID, limit, offset := rp.runID, rp.limit, rp.offset
	writeRunHeader(p, page.Run)
	tools := map[string]string{}
	for _, s := range page.Steps {
		tools[s.ID] = s.Tool
	}
	for _, a := range page.Pending {
		p.printf("\n")
		hint := fmt.Sprintf("decide with: %s -db %s approve %s -approval %s", x.prog, clean(shellQuote(rp.path)),
			clean(shellQuote(a.RunID)), clean(shellQuote(a.ID)))
		writeApproval(p, a, blockOptions{hint: hint, tool: tools[a.StepID], stages: stagesFor(st, a)})
	}
	if more := page.PendingTotal - len(page.Pending); more > 0 {
		p.printf("... %d more pending approval(s) not shown\n", more)
	}
	p.printf("\n")
	if len(page.Steps) == 0 {
		if page.StepsTotal > 0 {
			p.printf("no steps from offset %d; there are %d\n", offset, page.StepsTotal)
		} else {
			p.printf("no steps\n")
		}
	} else {
		tp := p.table()
		tp.printf("STEP\tTOOL\tDECISION\tSTATUS\tPOLICY\tOBSERVATION\tSUMMARY\n")
		for _, s := range page.Steps {
			tool := s.Tool
			if s.CallID != "" {
				tool += " [" + s.CallID + "]"
			}
			tp.printf("%d\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Index, dash(clip(tool, 40)), dash(clip(string(s.Decision), 40)),
				dash(clip(string(s.Status), 40)), dash(clip(string(s.Policy), 40)), dash(clip(string(s.Observation), 40)),
				dash(clip(summaryOf(s), cellClipBytes)))
		}
		tp.end()
		if more := page.StepsTotal - offset - len(page.Steps); more > 0 {
			p.printf("... %d more step(s) of %d; rerun with -offset %d\n", more, page.StepsTotal, offset+len(page.Steps))
		}
	}
	writeBlocks(p, st, runID, page.Steps, limit, offset)
	writeDisclosures(p, st, runID, page.Steps)
}

// writeShowApprovals prints the table of the run's approvals, decided
// ones too.
func writeShowApprovals(p *printer, page view.RunDetailPage, offset int) {
	if len(page.Approvals) == 0 {
		return
	}
	tp := p.section("APPROVAL\tSTATUS\tKIND\tCREATED\tDECIDED\tBY\tNOTE")
	for _, a := range page.Approvals {
		tp.printf("%s\t%s\t%s\t%s\t%s\t%s\t%s\n", clip(a.ID, cellClipBytes), clip(string(a.Status), 40), clip(a.Kind, 40),
			when(a.CreatedAt), when(a.DecidedAt), dash(clip(a.DecidedBy, 40)), dash(clip(a.Note, cellClipBytes)))
	}
	tp.end()
	if more := page.ApprovalsTotal - offset - len(page.Approvals); more > 0 {
		p.printf("... %d more approval(s) of %d; rerun with -offset %d\n", more, page.ApprovalsTotal, offset+len(page.Approvals))
	}
}

// summaryOf is a step's summary, or what stopped it from being read.
func summaryOf(s view.StepSummary) string {
	if s.DecodeError != "" {
		return "unread: " + s.DecodeError
	}
	return s.Summary
}

// writeRunHeader prints a run's own fields, one per line.
func writeRunHeader(p *printer, r view.RunSummary) {
	p.printf("run       %s\n", clip(r.ID, cellClipBytes))
	p.printf("goal      %s\n", capped(r.Goal, textClipBytes))
	p.printf("status    %s\n", clip(string(r.Status), 40))
	if r.Reason != "" {
		reason := clip(string(r.Reason), 40)
		if r.ReasonDetail != "" {
			reason += ": " + capped(r.ReasonDetail, textClipBytes)
		}
		p.printf("reason    %s\n", reason)
	}
	p.printf("steps     %d\n", r.Steps)
	p.printf("created   %s\n", when(r.CreatedAt))
	if !r.FinishedAt.IsZero() {
		p.printf("finished  %s\n", when(r.FinishedAt))
	}
	if r.ModelCalls > 0 {
		p.printf("model     %d call(s), %d tokens in (%d cached), %d out, estimated %s\n", r.ModelCalls,
			r.Usage.InputTokens, r.Usage.CachedInputTokens, r.Usage.OutputTokens, r.EstimatedCost.Dollars())
	}
	if len(r.Result) > 0 {
		p.printf("result    %s\n", bounded(string(r.Result)))
	}
	if r.DecodeError != "" {
		p.printf("unread    %s\n", bounded(r.DecodeError))
	}
}

// maxBlockSteps bounds the steps whose result blocks show lists, and
// blockEvents the tool_finished events it reads for them, in one read.
const (
	maxBlockSteps = 50
	blockEvents   = 4 * maxBlockSteps
)

// writeBlocks lists the typed blocks of the page's tool results, by type,
// media type, size and hash, as the chain's step.tool_finished event
// holds them, and for a resource or a resource link its URI, escaped, as
// the step's stored result holds it (the chain keeps no URI).
func writeBlocks(p *printer, st agentrt.StoreReader, runID string, steps []view.StepSummary, limit, offset int) {
	var ids []string
	index := map[string]int{}
	for _, s := range steps {
		if s.Observation != agentrt.ObsToolResult {
			continue
		}
		if len(ids) == maxBlockSteps {
			p.printf("\n... blocks of further steps not listed; rerun with -offset\n")
			break
		}
		ids = append(ids, s.ID)
		index[s.ID] = s.Index
	}
	evs, err := st.ListStepsEvents(background(), runID, ids, agentrt.EventToolFinished, blockEvents)
	if err != nil {
		return
	}
	// In page order, and within a step in commit order.
	byStep := map[string][]agentrt.BlockDigest{}
	for _, ev := range evs {
		var fin struct {
			Blocks []agentrt.BlockDigest `json:"blocks"`
		}
		if json.Unmarshal(ev.Payload, &fin) != nil {
			continue
		}
		byStep[ev.StepID] = append(byStep[ev.StepID], fin.Blocks...)
	}
	var lines []blockLine
	for _, id := range ids {
		for _, b := range byStep[id] {
			lines = append(lines, blockLine{index[id], b})
		}
	}
	if len(lines) == 0 {
		return
	}
	uris := resourceURIs(st, runID, lines, limit, offset)
	tp := p.section("STEP\tBLOCK\tTYPE\tMEDIA\tSIZE\tSHA256\tURI")
	n := map[int]int{}
	for _, l := range lines {
		size := fmt.Sprint(l.b.Size)
		if l.b.Truncated {
			size += " (cut)"
		}
		uri := ""
		// The stored step may hold fewer blocks than the chain lists (a
		// result not read whole, a late outcome): then no URI is known.
		if us := uris[l.step]; isResource(l.b.Type) && n[l.step] < len(us) {
			uri = clip(us[n[l.step]], maxURIBytes)
		}
		tp.printf("%d\t%d\t%s\t%s\t%s\t%s\t%s\n", l.step, n[l.step], clip(string(l.b.Type), 40), dash(clip(l.b.MIMEType, 80)), size,
			dash(clip(l.b.SHA256, 64)), dash(uri))
		n[l.step]++
	}
	tp.end()
}

// blockLine is one row of the block table: a step's index and a block.
type blockLine struct {
	step int
	b    agentrt.BlockDigest
}

// maxURIBytes bounds a URI in the block table; a longer one is cut.
const maxURIBytes = 200

func isResource(t agentrt.ResultBlockType) bool {
	return t == agentrt.ResultResource || t == agentrt.ResultResourceLink
}

// resourceURIs reads, when any block listed is a resource or a link, the
// page's steps as stored and returns each step's block URIs by step index
// and block position; a step whose result was not read whole has none.
func resourceURIs(st agentrt.StoreReader, runID string, lines []blockLine, limit, offset int) map[int][]string {
	found := false
	for _, l := range lines {
		found = found || isResource(l.b.Type)
	}
	out := map[int][]string{}
	if !found {
		return out
	}
	steps, _, err := st.ListStepsPage(background(), runID, limit, offset)
	if err != nil {
		return out
	}
	for _, s := range steps {
		if s.Observation == nil {
			continue
		}
		for _, b := range s.Observation.Blocks {
			out[s.Index] = append(out[s.Index], b.URI)
		}
	}
	return out
}

// writeShowJSON writes show -json: the page, each pending approval with its
// stages, and the run's model calls.
func writeShowJSON(p *printer, st agentrt.StoreReader, page view.RunDetailPage, limit, offset int, calls []callEgress) {
	b := page.Bounded()
	if b.Steps == nil {
		b.Steps = []view.StepSummary{}
	}
	if b.Pending == nil {
		b.Pending = []agentrt.Approval{}
	}
	if b.Approvals == nil {
		b.Approvals = []agentrt.Approval{}
	}
	writeJSON(p, struct {
		view.RunDetailPage
		// Pending shadows the page's own, each approval with its stages.
		Pending        []pendingJSON `json:"pending"`
		StepsTruncated bool          `json:"steps_truncated"`
		Limit          int           `json:"limit"`
		Offset         int           `json:"offset"`
		ModelCalls     []callEgress  `json:"model_calls,omitempty"`
	}{b, pendingWithStages(st, b.Pending), offset+len(b.Steps) < b.StepsTotal, limit, offset, calls})
}
