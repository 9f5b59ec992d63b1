package cli

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	iofs "io/fs"
	"strings"

	"github.com/agentrt/agentrt/checkpoint"
	"github.com/agentrt/agentrt/internal/cliflag"
	"github.com/agentrt/agentrt/internal/files"
	"github.com/agentrt/agentrt/trace"
)

var receiptCommand = fromKit(&kitCmd{
	Name:    "receipt",
	Summary: "write a run's events with proofs that a checkpoint includes them, for anyone to check offline",
	Usage:   "<run> -o FILE",
	Bind: cliflag.With(func(fs *flag.FlagSet, out *string) {
		fs.StringVar(out, "o", "", "the file to write the receipt to (required; never replaced)")
	}, runReceipt),
})

var verifyReceiptCommand = fromKit(&kitCmd{
	Name:    "verify-receipt",
	Summary: "check a run receipt offline, with no database, against the log's public key or a kept checkpoint",
	Usage:   "FILE (-key PUB | -head SIZE:ROOT|FILE)",
	Bind:    cliflag.With(verifyReceiptFlags, runVerifyReceipt),
})

// verifyReceiptOptions are verify-receipt's flags.
type verifyReceiptOptions struct{ key, head string }

func verifyReceiptFlags(fs *flag.FlagSet, o *verifyReceiptOptions) {
	fs.StringVar(&o.key, "key", "", "the log's public key (the key, or a file holding it)")
	fs.StringVar(&o.head, "head", "", "a checkpoint kept elsewhere: SIZE:ROOT or a file holding one")
}

// maxReceiptFile bounds what verify-receipt reads.
const maxReceiptFile = 256 << 20

func runReceipt(x *inv, out *string, pos []string) int {
	e := x.env
	typed, code := x.runArg(pos)
	if code != ExitOK {
		return code
	}
	if *out == "" {
		return x.usageError(x.c, "receipt needs -o FILE")
	}
	st, where, code := x.g.openDB(e, x.c, true)
	if code != ExitOK {
		return code
	}
	defer st.Close()
	runID, code, ok := e.resolveRun(st, where, typed)
	if !ok {
		return code
	}
	ctx := background()
	cs, err := checkpoint.For(st)
	if err != nil {
		return e.fail("%s: %v", where, err)
	}
	events, err := st.ListEvents(ctx, runID)
	if err != nil {
		return e.fail("reading run %s: %v", runID, err)
	}
	if len(events) > 0 {
		// A receipt vouches for the events as stored: refuse one whose
		// chain does not verify over the run's span.
		r, err := st.VerifyEvents(ctx, events[0].Seq, events[len(events)-1].Seq)
		if err != nil {
			return e.fail("verifying run %s: %v", runID, err)
		}
		if r.Break != nil {
			return e.fail("run %s's events do not verify (at seq %d: %s); no receipt written", runID, r.Break.Seq, r.Break.Detail)
		}
	}
	rc, err := checkpoint.MakeReceipt(ctx, cs, runID, events)
	if err != nil {
		return e.fail("%v", err)
	}
	b, err := json.MarshalIndent(rc, "", "  ")
	if err != nil {
		return e.fail("encoding the receipt: %v", err)
	}
	if err := files.WriteNew(*out, append(b, '\n'), 0o644); err != nil {
		return e.fail("writing the receipt: %v", err)
	}
	p := &printer{w: e.stdout}
	cp, _ := checkpoint.Parse(rc.Checkpoint)
	p.printf("receipt: %d event(s) of run %s against checkpoint size %d, written to %s\n", len(rc.Events), clip(runID, 64), cp.Size, *out)
	return e.done(p, ExitOK)
}

func runVerifyReceipt(x *inv, o *verifyReceiptOptions, pos []string) int {
	e, c := x.env, x.c
	keyArg, headArg := &o.key, &o.head
	if len(pos) != 1 {
		return e.usageError(c, "verify-receipt takes one receipt file")
	}
	if (*keyArg == "") == (*headArg == "") {
		return e.usageError(c, "verify-receipt needs exactly one of -key and -head")
	}
	v, err := loadVerifier(*keyArg)
	if err != nil {
		return e.usageError(c, "-key: "+strings.TrimPrefix(err.Error(), "agentrt: "))
	}
	var kept *checkpoint.Checkpoint
	if *headArg != "" {
		k, isCP, msg := parseKeptCheckpoint(*headArg, nil)
		if msg != "" {
			return e.usageError(c, msg)
		}
		if !isCP {
			return e.usageError(c, "-head: a checkpoint is SIZE:ROOT or a file holding one")
		}
		kept = k
	}
	b, err := files.ReadOwned(pos[0], maxReceiptFile)
	if err != nil {
		if errors.Is(err, iofs.ErrNotExist) {
			return e.usageError(c, fmt.Sprintf("no receipt at %s", pos[0]))
		}
		return e.fail("%v", err)
	}
	var rc checkpoint.Receipt
	if err := json.Unmarshal(b, &rc); err != nil {
		return e.fail("%s is not a receipt: %v", pos[0], err)
	}
	cp, err := checkpoint.VerifyReceipt(rc, v, kept)
	p := &printer{w: e.stdout}
	if err != nil {
		p.printf("receipt NOT verified: %s\n", trace.Sanitize(err.Error()))
		e.done(p, ExitFailure)
		return ExitFailure
	}
	p.printf("receipt verified: %d event(s) of run %s in checkpoint size %d\n", len(rc.Events), trace.Sanitize(clip(rc.RunID, 64)), cp.Size)
	return e.done(p, ExitOK)
}
