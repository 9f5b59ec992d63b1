package cli

import (
	"bufio"
	"crypto/ed25519"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/eventlog"
	"github.com/agentrt/agentrt/view"
)

var approveCommand = &command{
	name:    "approve",
	summary: "show a waiting approval, then grant it",
	usage:   "<run> [-approval ID | -yes] [-hash HASH] [-key FILE | -by WHO] [-note TEXT]",
	run:     func(e *env, g *global, c *command, args []string) int { return runDecide(e, g, c, args, true) },
}

// decideFlags are approve's and reject's flags.
type decideFlags struct {
	approval string
	yes      bool
	hash     string
	by       string
	note     string
	key      string
}

// runDecide is approve and reject: print the approval the operator means,
// read whole, make sure they meant it, then decide bound to the hash of
// what was printed, or, with -hash, to the hash the operator read earlier
// (from show), which the stored approval must still have.
func runDecide(e *env, g *global, c *command, args []string, approve bool) int {
	fs := e.flags(c, g)
	var f decideFlags
	fs.StringVar(&f.approval, "approval", "", "the approval to decide; naming it is the confirmation")
	fs.BoolVar(&f.yes, "yes", false, "decide the run's only pending approval without asking")
	fs.StringVar(&f.hash, "hash", "", "decide only if the approval still has this hash, as show printed it")
	fs.StringVar(&f.by, "by", "", "a label for who decided, recorded as given (default $USER, else your account's name)")
	fs.StringVar(&f.note, "note", "", "a note recorded with the decision")
	fs.StringVar(&f.key, "key", "", "sign the decision with this enrolled ed25519 key file; decided_by is then its approver's name")
	runID, code, ok := e.parseRun(c, fs, args)
	if !ok {
		return code
	}
	if f.approval != "" {
		if msg := checkID("-approval", f.approval); msg != "" {
			return e.usageError(c, msg)
		}
	}
	if f.hash != "" {
		f.hash = strings.ToLower(f.hash)
		if !hashPattern.MatchString(f.hash) {
			return e.usageError(c, "-hash must be the 64 hex digits show prints after hash")
		}
	}
	var key ed25519.PrivateKey
	if f.key != "" {
		k, err := readPrivateKey(f.key)
		if err != nil {
			return e.usageError(c, err.Error())
		}
		key = k
	}
	if key == nil {
		if code, ok := e.requireBy(c, fs, &f.by, "deciding"); !ok {
			return code
		}
	}
	ask := f.approval == "" && !f.yes
	if ask && g.json {
		return e.usageError(c, "with -json agentrt never asks; pass -approval ID or -yes")
	}
	if ask && !e.interactive(e.stdin) {
		return e.usageError(c, "stdin is not a terminal, so agentrt will not ask and will not guess; read the approval with 'agentrt show', then pass -approval ID or -yes")
	}
	st, name, code := g.openDB(e, c, false)
	if code != ExitOK {
		return code
	}
	defer st.Close()
	if runID, code, ok = e.resolveRun(st, name, runID); !ok {
		return code
	}

	ctx := background()
	a, err := view.PendingApproval(ctx, st, runID, f.approval)
	if err != nil {
		return e.selectError(runID, f.approval, err)
	}
	// The operator read the approval earlier; it is decided only if it is
	// still that one, and nothing of what it has become is printed.
	if f.hash != "" && f.hash != a.Hash {
		return e.fail("approval %s no longer has hash %s, the one given with -hash, so it changed since it was read; nothing was decided", clip(a.ID, 64), f.hash)
	}
	// The hash of what is printed, computed from the fields printed; a
	// record whose stored hash disagrees was altered and is not decided.
	shown, herr := agentrt.ApprovalHashWith(a.Kind, a.Capability, a.Presentation, a.Request, a.Requirement, a.PolicyVersion)
	p := &printer{w: e.stdout}
	if g.json {
		// The approval being decided, as read, before the decision.
		writeJSON(p, struct {
			Deciding agentrt.Approval `json:"deciding"`
		}{view.BoundApproval(a)})
	} else {
		writeApproval(p, a, blockOptions{stages: stagesFor(st, a)})
	}
	if p.err != nil {
		return e.done(p, ExitFailure)
	}
	if herr != nil || shown != a.Hash {
		return e.fail("approval %s does not match its own hash, so its record was altered; nothing was decided", a.ID)
	}
	verb := "reject"
	if approve {
		verb = "approve"
	}
	if ask {
		p.printf("%s approval %s of run %s? Type yes to %s it; anything else leaves it pending: ",
			strings.ToUpper(verb[:1])+verb[1:], clip(a.ID, 64), clip(runID, 64), verb)
		if p.err != nil {
			return e.done(p, ExitFailure)
		}
		answer, err := bufio.NewReader(e.stdin).ReadString('\n')
		if err != nil && !(errors.Is(err, io.EOF) && answer != "") {
			p.printf("\n")
			fmt.Fprintln(e.stderr, "agentrt: no answer before the end of input; nothing was decided")
			return ExitUsage
		}
		if !strings.EqualFold(strings.TrimSpace(answer), "yes") {
			fmt.Fprintf(e.stderr, "agentrt: not %sd; approval %s is still pending\n", verb, clip(a.ID, 64))
			return ExitFailure
		}
	}

	// With -hash, f.hash equals shown here; either way the decision is
	// conditional on it inside the deciding transaction.
	op := agentrt.Operator{Store: st, Now: e.now}
	if !g.json {
		op.Observer = eventlog.Writer(e.stderr)
	}
	var opts []agentrt.DecideOption
	if key != nil {
		sig, msg := e.signDecision(st, key, runID, a.ID, shown, verb, f.note)
		if msg != "" {
			return e.fail("%s; nothing was decided", msg)
		}
		opts = append(opts, agentrt.WithSignature(sig))
	}
	if approve {
		err = op.ApproveShown(ctx, runID, a.ID, shown, f.by, f.note, opts...)
	} else {
		err = op.RejectShown(ctx, runID, a.ID, shown, f.by, f.note, opts...)
	}
	if err != nil {
		return e.decideError(runID, a.ID, err)
	}
	after, err := st.GetApproval(ctx, runID, a.ID)
	if err != nil {
		return e.fail("approval %s was %sd, but reading it back failed: %v", a.ID, verb, err)
	}
	run, err := view.Summary(ctx, st, runID)
	if err != nil {
		return e.fail("approval %s was %sd, but reading run %s back failed: %v", a.ID, verb, runID, err)
	}
	if g.json {
		writeJSON(p, struct {
			Run         view.RunSummary  `json:"run"`
			Approval    agentrt.Approval `json:"approval"`
			DecidedHash string           `json:"decided_hash"`
		}{run, view.BoundApproval(after), shown})
		return e.done(p, ExitOK)
	}
	if after.Status == agentrt.ApprovalPending {
		// A vote that met not every stage.
		p.printf("approval %s: vote recorded; it stays pending until every stage is met\n", clip(after.ID, 64))
		writeStages(p, stagesFor(st, after))
		return e.done(p, ExitOK)
	}
	p.printf("approval %s: %s by %s\n", clip(after.ID, 64), clip(string(after.Status), 40), bounded(after.DecidedBy))
	switch {
	case approve && run.Status == agentrt.RunWaiting:
		p.printf("run %s: %s; agentrt runs nothing itself: a worker claims the run by itself, agentrt-proxy runs the call when it is held or repeated, any other program when it calls driver.Resume\n",
			clip(run.ID, 64), run.Status)
		p.printf("watch it with: %s -db %s follow -run %s\n", e.prog, clean(shellQuote(g.path(e))), clean(shellQuote(run.ID)))
	case run.Reason != "":
		p.printf("run %s: %s (%s)\n", clip(run.ID, 64), clip(string(run.Status), 40), clip(string(run.Reason), 40))
	default:
		p.printf("run %s: %s\n", clip(run.ID, 64), clip(string(run.Status), 40))
	}
	return e.done(p, ExitOK)
}

// selectError reports why no approval could be chosen.
func (e *env) selectError(runID, approvalID string, err error) int {
	var amb *view.AmbiguousApprovalError
	var nw *view.RunNotWaitingError
	switch {
	case errors.As(err, &nw):
		return e.fail("run %s is %s, not waiting for approval; nothing was decided", runID, nw.Status)
	case errors.As(err, &amb):
		return e.fail("%s", strings.TrimPrefix(amb.Error(), "agentrt: "))
	case errors.Is(err, view.ErrNoPendingApproval):
		return e.fail("run %s has no pending approval; nothing was decided", runID)
	case errors.Is(err, agentrt.ErrNotPending):
		return e.fail("approval %s was already decided; nothing was changed", approvalID)
	case errors.Is(err, agentrt.ErrNotFound):
		if approvalID != "" {
			return e.fail("no approval %s in run %s (or no such run)", approvalID, runID)
		}
		return e.fail("no run %s", runID)
	}
	return e.fail("reading run %s: %v", runID, err)
}

// signDecision signs the statement of a decision with key, as the
// unremoved approver enrolled with its public half.
func (e *env) signDecision(st agentrt.StoreReader, key ed25519.PrivateKey, runID, approvalID, hash, verb, note string) (agentrt.DecisionSignature, string) {
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return agentrt.DecisionSignature{}, err.Error()
	}
	fp := agentrt.KeyFingerprint(der)
	aps, err := st.ListApprovers(background())
	if err != nil {
		return agentrt.DecisionSignature{}, "reading approvers: " + err.Error()
	}
	for _, ap := range aps {
		if ap.CredentialID != fp || ap.Removed() {
			continue
		}
		now := time.Now()
		if e.now != nil {
			now = e.now()
		}
		sig, err := agentrt.SignStatement(key, ap, agentrt.Statement{RunID: runID, ApprovalID: approvalID, ApprovalHash: hash,
			Decision: verb, Note: note, Nonce: agentrt.NewNonce(), Time: now.UTC()})
		if err != nil {
			return agentrt.DecisionSignature{}, err.Error()
		}
		return sig, ""
	}
	return agentrt.DecisionSignature{}, fmt.Sprintf("the key %s is not enrolled (or its approver was removed); enroll it with 'agentrt approvers add NAME -key FILE'", fp)
}
