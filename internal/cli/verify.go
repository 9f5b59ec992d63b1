package cli

import (
	"flag"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/checkpoint"
	"github.com/agentrt/agentrt/internal/cliflag"
)

var verifyCommand = fromKit(&kitCmd{
	Name:    "verify",
	Summary: "check the event hash chain, that it still reaches a head kept elsewhere, and every signed decision",
	Usage:   "[-from SEQ] [-to SEQ] [-head SEQ:HASH|SIZE:ROOT|FILE] [-key PUB] [-stale DUR] [-decisions [-pinned FILE]]",
	Bind:    cliflag.With(verifyFlags, runVerify),
})

// verifyOptions are verify's flags.
type verifyOptions struct {
	from, to   int64
	head       string
	decisions  bool
	pinnedPath string
	ck         checkpointFlags
}

func verifyFlags(fs *flag.FlagSet, o *verifyOptions) {
	fs.Int64Var(&o.from, "from", 0, "the first seq to check (default the first event)")
	fs.Int64Var(&o.to, "to", 0, "the last seq to check, which must exist (default the head)")
	fs.StringVar(&o.head, "head", "", "a head kept earlier, SEQ:HASH: fail unless the chain still reaches it with that hash")
	fs.BoolVar(&o.decisions, "decisions", false, "also re-verify every signed decision from the stored public keys")
	fs.StringVar(&o.pinnedPath, "pinned", "", "with -decisions, every signing key must be in this owner-only pinned keys file")
	o.ck.register(fs)
}

// verifyWindow is how many events one VerifyEvents call checks, so a long
// verify can show progress between calls.
var verifyWindow int64 = 10000

var hashPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

// keptHead is a -head SEQ:HASH.
type keptHead struct {
	seq  int64
	hash string
}

func parseHead(s string) (keptHead, string) {
	seqText, h, ok := strings.Cut(s, ":")
	if !ok {
		return keptHead{}, "-head must be SEQ:HASH, as verify prints it"
	}
	seq, err := strconv.ParseInt(seqText, 10, 64)
	if err != nil || seq < 1 {
		return keptHead{}, fmt.Sprintf("-head: the seq must be a positive integer, got %q", clip(seqText, 40))
	}
	h = strings.ToLower(h)
	if !hashPattern.MatchString(h) {
		return keptHead{}, "-head: the hash must be the 64 hex digits verify prints"
	}
	return keptHead{seq, h}, ""
}

type verifyReport struct {
	Head struct {
		Seq  int64  `json:"seq"`
		Hash string `json:"hash"`
	} `json:"head"`
	From    int64 `json:"from"`
	To      int64 `json:"to"`
	Checked int64 `json:"checked"`
	// Last is the seq of the last event checked intact, Hash its hash.
	Last   int64               `json:"last"`
	Hash   string              `json:"hash,omitempty"`
	Intact bool                `json:"intact"`
	Break  *agentrt.ChainBreak `json:"break,omitempty"`
	// Erased counts the checked events whose payloads were erased, and
	// ErasedRuns names their runs (at most agentrt.MaxReportedRuns).
	Erased         int64    `json:"erased,omitempty"`
	ErasedRuns     []string `json:"erased_runs,omitempty"`
	ErasedRunCount int      `json:"erased_run_count,omitempty"`
	Requested      *struct {
		To      int64 `json:"to"`
		Reached bool  `json:"reached"`
	} `json:"requested,omitempty"`
	KeptHead *struct {
		Seq     int64  `json:"seq"`
		Hash    string `json:"hash"`
		Found   string `json:"found,omitempty"`
		Reached bool   `json:"reached"`
		Matches bool   `json:"matches"`
	} `json:"kept_head,omitempty"`
	// Checkpoints is what the check of the checkpoints found.
	Checkpoints *checkpoint.Report `json:"checkpoints,omitempty"`
	// Decisions is what -decisions found.
	Decisions *decisionsReport `json:"decisions,omitempty"`
	// OK is whether verify exits 0.
	OK bool `json:"ok"`
}

func runVerify(x *inv, o *verifyOptions, pos []string) int {
	kept, pinned, code := x.checkVerify(o, pos)
	if code != ExitOK {
		return code
	}
	st, where, code := x.g.openDB(x.env, x.c, true)
	if code != ExitOK {
		return code
	}
	defer st.Close()

	rep, err := verifyChain(x.env, st, o.from, o.to, kept)
	if err != nil {
		return x.fail("verifying %s: %v", where, err)
	}
	if o.decisions {
		d, err := verifyDecisions(st, rep.Head.Seq, pinned)
		if err != nil {
			return x.fail("verifying the decisions in %s: %v", where, err)
		}
		rep.Decisions = d
		rep.OK = rep.OK && d.Failure == nil
	}
	if err := o.ck.verify(x.env, st, &rep); err != nil {
		return x.fail("verifying the checkpoints in %s: %v", where, err)
	}
	p := &printer{w: x.stdout}
	exit := ExitOK
	if !rep.OK {
		exit = ExitFailure
	}
	if x.g.json {
		writeJSON(p, rep)
		return x.done(p, exit)
	}
	writeVerify(p, rep)
	writeCheckpointReport(p, rep.Checkpoints)
	return x.done(p, exit)
}

// checkVerify checks verify's arguments and reads the files they name
// before the database is opened. Unless code is ExitOK a usage error was
// printed.
func (x *inv) checkVerify(o *verifyOptions, pos []string) (kept *keptHead, pinned *agentrt.PinnedKeys, code int) {
	if len(pos) > 0 {
		return nil, nil, x.usageError(x.c, fmt.Sprintf("unexpected argument %q", clip(pos[0], 80)))
	}
	if code := o.ck.resolve(x.env, x.c, &o.head); code != ExitOK {
		return nil, nil, code
	}
	if o.from < 0 || o.to < 0 {
		return nil, nil, x.usageError(x.c, "-from and -to must not be negative")
	}
	if o.to > 0 && o.from > o.to {
		return nil, nil, x.usageError(x.c, fmt.Sprintf("-from %d is after -to %d", o.from, o.to))
	}
	if o.head != "" {
		k, msg := parseHead(o.head)
		if msg != "" {
			return nil, nil, x.usageError(x.c, msg)
		}
		if k.seq < o.from || (o.to > 0 && k.seq > o.to) {
			return nil, nil, x.usageError(x.c, fmt.Sprintf("-head seq %d is outside the range checked", k.seq))
		}
		kept = &k
	}
	if o.pinnedPath != "" && !o.decisions {
		return nil, nil, x.usageError(x.c, "-pinned needs -decisions")
	}
	if o.pinnedPath != "" {
		p, err := agentrt.LoadPinnedKeys(o.pinnedPath)
		if err != nil {
			return nil, nil, x.usageError(x.c, trimAgentrt(err))
		}
		pinned = p
	}
	return kept, pinned, ExitOK
}

// verifyChain reads the head first, so events committed during the walk are
// not checked, then walks the chain a window at a time.
func verifyChain(e *env, st agentrt.StoreReader, from, to int64, kept *keptHead) (verifyReport, error) {
	ctx := background()
	var rep verifyReport
	head, headHash, err := st.ChainHead(ctx)
	if err != nil {
		return rep, err
	}
	rep.Head.Seq, rep.Head.Hash = head, headHash
	if from < 1 {
		from = 1
	}
	end := head
	if to > 0 {
		rep.Requested = &struct {
			To      int64 `json:"to"`
			Reached bool  `json:"reached"`
		}{To: to, Reached: to <= head}
		end = min(to, head)
	}
	rep.From, rep.To = from, end
	show := e.progress != nil && e.progress(e.stderr) && end-from+1 > verifyWindow
	erasedRuns := map[string]bool{}
	for cur := from; cur <= end; {
		wEnd := min(cur+verifyWindow-1, end)
		r, err := st.VerifyEvents(ctx, cur, wEnd)
		if err != nil {
			return rep, err
		}
		rep.Checked += r.Checked
		rep.Erased += r.Erased
		for _, id := range r.ErasedRuns {
			if !erasedRuns[id] {
				erasedRuns[id] = true
				if len(rep.ErasedRuns) < agentrt.MaxReportedRuns {
					rep.ErasedRuns = append(rep.ErasedRuns, id)
				}
			}
		}
		rep.ErasedRunCount = max(rep.ErasedRunCount, len(erasedRuns), r.ErasedRunCount)
		if r.Checked > 0 {
			rep.Last, rep.Hash = r.Last, r.Hash
		}
		if r.Break != nil {
			rep.Break = r.Break
			break
		}
		if show {
			fmt.Fprintf(e.stderr, "\rverifying: %d of %d events checked", wEnd-from+1, end-from+1)
		}
		cur = wEnd + 1
	}
	if show {
		fmt.Fprint(e.stderr, "\r\x1b[K")
	}
	rep.Intact = rep.Break == nil
	rep.OK = rep.Intact && (rep.Requested == nil || rep.Requested.Reached) && (head == 0 || from <= head)
	if kept != nil {
		k := &struct {
			Seq     int64  `json:"seq"`
			Hash    string `json:"hash"`
			Found   string `json:"found,omitempty"`
			Reached bool   `json:"reached"`
			Matches bool   `json:"matches"`
		}{Seq: kept.seq, Hash: kept.hash, Reached: kept.seq <= head}
		if k.Reached {
			found, err := st.EventHash(ctx, kept.seq)
			if err != nil {
				return rep, err
			}
			k.Found, k.Matches = found, found == kept.hash
		}
		rep.KeptHead = k
		rep.OK = rep.OK && k.Matches
	}
	return rep, nil
}

func writeVerify(p *printer, rep verifyReport) {
	if rep.Head.Seq == 0 {
		p.printf("head: no events\n")
	} else {
		p.printf("head: seq %d hash %s\n", rep.Head.Seq, clip(rep.Head.Hash, 128))
	}
	switch {
	case rep.Break != nil:
		p.printf("broken at seq %d: %s\n", rep.Break.Seq, clip(rep.Break.Detail, textClipBytes))
		if rep.Break.Expected != "" || rep.Break.Found != "" {
			p.printf("  expected  %s\n", dash(clip(rep.Break.Expected, 128)))
			p.printf("  found     %s\n", dash(clip(rep.Break.Found, 128)))
		}
		if rep.Checked > 0 {
			// Last, not the seq before the break: after a deleted event
			// that seq is the one missing.
			p.printf("intact before it: %d event(s), seq %d to %d\n", rep.Checked, rep.Last-rep.Checked+1, rep.Last)
		}
	case rep.Head.Seq > 0 && rep.From > rep.Head.Seq:
		p.printf("nothing checked: -from %d is past the head, seq %d\n", rep.From, rep.Head.Seq)
	case rep.Checked == 0:
		p.printf("intact: no events\n")
	default:
		p.printf("intact: %d event(s), seq %d to %d\n", rep.Checked, rep.From, rep.To)
		p.printf("last checked: seq %d hash %s\n", rep.Last, clip(rep.Hash, 128))
	}
	if rep.Erased > 0 {
		p.printf("erased: %d event payload(s) in %d run(s), digests kept and recorded by run.erased\n", rep.Erased, rep.ErasedRunCount)
		for _, id := range rep.ErasedRuns {
			p.printf("  erased run %s\n", clip(id, 64))
		}
	}
	if r := rep.Requested; r != nil && !r.Reached {
		p.printf("not reached: -to %d; the last event is seq %d\n", r.To, rep.Head.Seq)
	}
	if d := rep.Decisions; d != nil {
		if f := d.Failure; f != nil {
			at := fmt.Sprintf("at seq %d ", f.Seq)
			if f.Seq == 0 {
				at = ""
			}
			p.printf("decision NOT verified %s(run %s, approval %s): %s\n", at, dash(clip(f.RunID, 64)), dash(clip(f.ApprovalID, 64)), clip(f.Reason, textClipBytes))
			p.printf("  %d signed decision(s) and %d vote(s) verified before it\n", d.Verified, d.Votes)
		} else {
			p.printf("decisions: %d signed of %d verified with %d approver key(s)\n", d.Signed, d.Decisions, d.Approvers)
			p.printf("votes: %d verified on %d approval(s); %d approval(s) granted by votes that meet their requirement\n",
				d.Votes, d.VotedApprovals, d.GrantedByVotes)
			if d.Unsigned > 0 {
				p.printf("unsigned approvals: %d (granted without a signature; -pinned refuses them)\n", d.Unsigned)
			}
		}
	}
	if k := rep.KeptHead; k != nil {
		switch {
		case !k.Reached:
			p.printf("kept head NOT reached: seq %d; the chain ends at seq %d, so events were cut from its end or never written here\n", k.Seq, rep.Head.Seq)
		case !k.Matches:
			p.printf("kept head does NOT match: the event at seq %d has hash %s, not %s\n", k.Seq, clip(k.Found, 128), k.Hash)
		default:
			p.printf("kept head: seq %d matches\n", k.Seq)
		}
	}
}
