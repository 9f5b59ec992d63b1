package cli

import (
	"bufio"
	"crypto/ed25519"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/eventlog"
	"github.com/agentrt/agentrt/internal/cliflag"
	"github.com/agentrt/agentrt/view"
)

var (
	approveCommand = decideCommand("approve", "show a waiting approval, then grant it", true)
	rejectCommand  = decideCommand("reject", "show a waiting approval, then refuse it, which cancels the run", false)
)

// decideCommand is approve (approve true) or reject: the same flags, the
// same run function.
func decideCommand(name, summary string, approve bool) *command {
	return fromKit(&kitCmd{
		Name:    name,
		Summary: summary,
		Usage:   "<run> [-approval ID | -yes] [-hash HASH] [-key FILE | -by WHO] [-note TEXT]",
		Bind: cliflag.With(decideFlags, func(x *inv, o *decideOptions, pos []string) int {
			return runDecide(x, o, pos, approve)
		}),
	})
}

// decideOptions are approve's and reject's flags.
type decideOptions struct {
	approval string
	yes      bool
	hash     string
	by       byFlag
	note     string
	key      string
}

func decideFlags(fs *flag.FlagSet, o *decideOptions) {
	fs.StringVar(&o.approval, "approval", "", "the approval to decide; naming it is the confirmation")
	fs.BoolVar(&o.yes, "yes", false, "decide the run's only pending approval without asking")
	fs.StringVar(&o.hash, "hash", "", "decide only if the approval still has this hash, as show printed it")
	fs.Var(&o.by, "by", "a label for who decided, recorded as given (default $USER, else your account's name)")
	fs.StringVar(&o.note, "note", "", "a note recorded with the decision")
	fs.StringVar(&o.key, "key", "", "sign the decision with this enrolled ed25519 key file; decided_by is then its approver's name")
}

// decision is one approve or reject once its arguments are checked.
type decision struct {
	x       *inv
	o       *decideOptions
	approve bool
	// verb is "approve" or "reject".
	verb string
	// runID is the run as typed until the database is open, then as
	// resolved; by is who to record, "" when key signs.
	runID, by string
	key       ed25519.PrivateKey
	// ask is whether to ask at the terminal before deciding.
	ask bool
}

// runDecide is approve and reject: print the approval the operator means,
// read whole, make sure they meant it, then decide bound to the hash of
// what was printed, or, with -hash, to the hash the operator read earlier
// (from show), which the stored approval must still have.
func runDecide(x *inv, o *decideOptions, pos []string, approve bool) int {
	d, code := x.checkDecide(o, pos, approve)
	if code != ExitOK {
		return code
	}
	st, _, runID, code := x.openRunToChange(d.runID)
	if code != ExitOK {
		return code
	}
	defer st.Close()
	d.runID = runID

	a, err := view.PendingApproval(background(), st, runID, o.approval)
	if err != nil {
		return x.selectError(runID, o.approval, err)
	}
	// The operator read the approval earlier; it is decided only if it is
	// still that one, and nothing of what it has become is printed.
	if o.hash != "" && o.hash != a.Hash {
		return x.fail("approval %s no longer has hash %s, the one given with -hash, so it changed since it was read; nothing was decided", clip(a.ID, 64), o.hash)
	}
	p := &printer{w: x.stdout}
	shown, code := d.present(st, p, a)
	if code != ExitOK {
		return code
	}
	if d.ask {
		if code := d.confirm(p, a); code != ExitOK {
			return code
		}
	}
	if code := d.decide(st, a.ID, shown); code != ExitOK {
		return code
	}
	return d.report(st, p, a.ID, shown)
}

// checkDecide checks approve's and reject's arguments before anything is
// opened. Unless code is ExitOK a usage error was printed.
func (x *inv) checkDecide(o *decideOptions, pos []string, approve bool) (d decision, code int) {
	d = decision{x: x, o: o, approve: approve, verb: "reject"}
	if approve {
		d.verb = "approve"
	}
	if d.runID, code = x.runArg(pos); code != ExitOK {
		return d, code
	}
	if o.approval != "" {
		if msg := checkID("-approval", o.approval); msg != "" {
			return d, x.usageError(x.c, msg)
		}
	}
	if o.hash != "" {
		o.hash = strings.ToLower(o.hash)
		if !hashPattern.MatchString(o.hash) {
			return d, x.usageError(x.c, "-hash must be the 64 hex digits show prints after hash")
		}
	}
	if o.key != "" {
		k, err := readPrivateKey(o.key)
		if err != nil {
			return d, x.usageError(x.c, err.Error())
		}
		d.key = k
	}
	// With a key the decision is recorded as its approver's.
	d.by = o.by.who
	if d.key == nil {
		if d.by, code = x.requireBy(&o.by, " as deciding"); code != ExitOK {
			return d, code
		}
	}
	d.ask = o.approval == "" && !o.yes
	if d.ask && x.g.json {
		return d, x.usageError(x.c, "with -json agentrt never asks; pass -approval ID or -yes")
	}
	if d.ask && !x.interactive(x.stdin) {
		return d, x.usageError(x.c, "stdin is not a terminal, so agentrt will not ask and will not guess; read the approval with 'agentrt show', then pass -approval ID or -yes")
	}
	return d, ExitOK
}

// present prints the approval being decided and returns the hash of what
// was printed, computed from the fields printed; a record whose stored
// hash disagrees was altered and is not decided.
func (d *decision) present(st agentrt.Store, p *printer, a agentrt.Approval) (shown string, code int) {
	shown, herr := agentrt.ApprovalHashWith(a.Kind, a.Capability, a.Presentation, a.Request, a.Requirement, a.PolicyVersion)
	if d.x.g.json {
		// The approval being decided, as read, before the decision.
		writeJSON(p, struct {
			Deciding agentrt.Approval `json:"deciding"`
		}{view.BoundApproval(a)})
	} else {
		writeApproval(p, a, blockOptions{stages: stagesFor(st, a)})
	}
	if p.err != nil {
		return "", d.x.done(p, ExitFailure)
	}
	if herr != nil || shown != a.Hash {
		return "", d.x.fail("approval %s does not match its own hash, so its record was altered; nothing was decided", a.ID)
	}
	return shown, ExitOK
}

// confirm asks at the terminal; anything but yes leaves the approval
// pending.
func (d *decision) confirm(p *printer, a agentrt.Approval) int {
	x, verb := d.x, d.verb
	p.printf("%s approval %s of run %s? Type yes to %s it; anything else leaves it pending: ",
		strings.ToUpper(verb[:1])+verb[1:], clip(a.ID, 64), clip(d.runID, 64), verb)
	if p.err != nil {
		return x.done(p, ExitFailure)
	}
	answer, err := bufio.NewReader(x.stdin).ReadString('\n')
	if err != nil && !(errors.Is(err, io.EOF) && answer != "") {
		p.printf("\n")
		fmt.Fprintln(x.stderr, "agentrt: no answer before the end of input; nothing was decided")
		return ExitUsage
	}
	if !strings.EqualFold(strings.TrimSpace(answer), "yes") {
		fmt.Fprintf(x.stderr, "agentrt: not %sd; approval %s is still pending\n", verb, clip(a.ID, 64))
		return ExitFailure
	}
	return ExitOK
}

// decide records the decision, conditional on shown inside the deciding
// transaction (with -hash, o.hash equals shown here). Unless it returns
// ExitOK it printed why nothing was decided.
func (d *decision) decide(st agentrt.Store, approvalID, shown string) int {
	x := d.x
	op := agentrt.Operator{Store: st, Now: x.now}
	if !x.g.json {
		op.Observer = eventlog.Writer(x.stderr)
	}
	var opts []agentrt.DecideOption
	if d.key != nil {
		sig, msg := x.signDecision(st, d.key, d.runID, approvalID, shown, d.verb, d.o.note)
		if msg != "" {
			return x.fail("%s; nothing was decided", msg)
		}
		opts = append(opts, agentrt.WithSignature(sig))
	}
	var err error
	if d.approve {
		err = op.ApproveShown(background(), d.runID, approvalID, shown, d.by, d.o.note, opts...)
	} else {
		err = op.RejectShown(background(), d.runID, approvalID, shown, d.by, d.o.note, opts...)
	}
	if err != nil {
		return x.decideError(d.runID, approvalID, err)
	}
	return ExitOK
}

// report prints what was decided and where the run stands now.
func (d *decision) report(st agentrt.Store, p *printer, approvalID, shown string) int {
	x, ctx, runID := d.x, background(), d.runID
	after, err := st.GetApproval(ctx, runID, approvalID)
	if err != nil {
		return x.fail("approval %s was %sd, but reading it back failed: %v", approvalID, d.verb, err)
	}
	run, err := view.Summary(ctx, st, runID)
	if err != nil {
		return x.fail("approval %s was %sd, but reading run %s back failed: %v", approvalID, d.verb, runID, err)
	}
	if x.g.json {
		writeJSON(p, struct {
			Run         view.RunSummary  `json:"run"`
			Approval    agentrt.Approval `json:"approval"`
			DecidedHash string           `json:"decided_hash"`
		}{run, view.BoundApproval(after), shown})
		return x.done(p, ExitOK)
	}
	if after.Status == agentrt.ApprovalPending {
		// A vote that met not every stage.
		p.printf("approval %s: vote recorded; it stays pending until every stage is met\n", clip(after.ID, 64))
		writeStages(p, stagesFor(st, after))
		return x.done(p, ExitOK)
	}
	p.printf("approval %s: %s by %s\n", clip(after.ID, 64), clip(string(after.Status), 40), bounded(after.DecidedBy))
	switch {
	case d.approve && run.Status == agentrt.RunWaiting:
		p.printf("run %s: %s; agentrt runs nothing itself: a worker claims the run by itself, agentrt-proxy runs the call when it is held or repeated, any other program when it calls driver.Resume\n",
			clip(run.ID, 64), run.Status)
		p.printf("watch it with: %s -db %s follow -run %s\n", x.prog, clean(shellQuote(x.g.path(x.env))), clean(shellQuote(run.ID)))
	case run.Reason != "":
		p.printf("run %s: %s (%s)\n", clip(run.ID, 64), clip(string(run.Status), 40), clip(string(run.Reason), 40))
	default:
		p.printf("run %s: %s\n", clip(run.ID, 64), clip(string(run.Status), 40))
	}
	return x.done(p, ExitOK)
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
