package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os/user"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/internal/cliflag"
	"github.com/agentrt/agentrt/sqlite"
	"github.com/agentrt/agentrt/trace"
)

var eraseCommand = fromKit(&kitCmd{
	Name:    "erase",
	Summary: "remove the content of a run that has ended, keeping the chain verifiable",
	Usage:   "<run> -by WHO -reason TEXT [-vacuum]",
	Bind:    cliflag.With(eraseFlags, runErase),
})

// vacuumer is a store that can rewrite its files so no freed copy of
// erased content stays in them.
type vacuumer interface {
	Vacuum(ctx context.Context) error
}

// postgresNote says what a Postgres erasure leaves until VACUUM.
const postgresNote = "note: Postgres keeps the replaced row versions, content included, in its table files until VACUUM reclaims their space and later writes reuse it, and in its write-ahead log, replicas and backups until they are recycled; erase -vacuum runs VACUUM FULL on the tables erasure changed, which rewrites them under an exclusive lock."

// eraseOptions are erase's flags.
type eraseOptions struct {
	by     byFlag
	reason string
	vacuum bool
}

func eraseFlags(fs *flag.FlagSet, o *eraseOptions) {
	fs.Var(&o.by, "by", "who erases the run, recorded in its run.erased event (default $USER, else your account's name)")
	fs.StringVar(&o.reason, "reason", "", "why, recorded in the run.erased event (required)")
	fs.BoolVar(&o.vacuum, "vacuum", false, "then rewrite the database files (SQLite VACUUM, Postgres VACUUM FULL) so no freed copy of the content stays")
}

func runErase(x *inv, o *eraseOptions, pos []string) int {
	typed, by, code := x.runAndBy(pos, &o.by, " as erasing")
	if code != ExitOK {
		return code
	}
	if o.reason == "" {
		return x.usageError(x.c, "-reason is required: say why the run's content is erased")
	}
	st, name, runID, code := x.openRunToChange(typed)
	if code != ExitOK {
		return code
	}
	defer st.Close()
	ctx := background()
	op := agentrt.Operator{Store: st, Now: x.now}
	er, err := op.Erase(ctx, runID, by, o.reason)
	walNote, code := x.eraseRefusal(err, runID, name)
	if code != ExitOK {
		return code
	}
	if o.vacuum {
		if v, ok := st.(vacuumer); ok {
			if err := v.Vacuum(ctx); err != nil {
				return x.fail("run %s was erased, but the vacuum failed: %v", runID, err)
			}
		}
	}
	_, isSQLite := st.(*sqlite.Store)
	return x.printErased(er, o.vacuum, walNote, !isSQLite)
}

// eraseRefusal says why Erase refused, or returns the note to print when
// the SQLite write-ahead log still holds the content.
func (x *inv) eraseRefusal(err error, runID, name string) (walNote string, code int) {
	switch {
	case errors.Is(err, sqlite.ErrWALRetained):
		walNote = "note: " + err.Error() + "; run 'agentrt erase' on another run or reopen the database when readers are done to empty it."
	case errors.Is(err, agentrt.ErrNotFound):
		return "", x.fail("no run %s in %s", runID, name)
	case errors.Is(err, agentrt.ErrRunState):
		return "", x.fail("run %s was not erased: %s; nothing was changed", runID, trimAgentrt(err))
	case errors.Is(err, agentrt.ErrNotErasable):
		return "", x.fail("%s cannot erase content; nothing was changed", name)
	case err != nil:
		return "", x.fail("erasing run %s: %v", runID, err)
	}
	return walNote, ExitOK
}

// printErased prints what Erase removed, then on stderr the WAL note and,
// for a database server (server), what it keeps until VACUUM.
func (x *inv) printErased(er agentrt.ErasedRun, vacuum bool, walNote string, server bool) int {
	e := x.env
	p := &printer{w: e.stdout}
	if x.g.json {
		writeJSON(p, struct {
			Erased agentrt.ErasedRun `json:"erased"`
			Vacuum bool              `json:"vacuum"`
		}{er, vacuum})
	} else {
		p.printf("run %s: erased %d event payload(s), %d step(s), %d approval(s), %d model call(s); run.erased is seq %d\n",
			clip(er.RunID, 64), er.Events, er.Rows["steps"], er.Rows["approvals"], er.Rows["model_calls"], er.Seq)
	}
	if walNote != "" {
		fmt.Fprintln(e.stderr, "agentrt: "+trace.Sanitize(walNote))
	}
	if server && !vacuum {
		fmt.Fprintln(e.stderr, "agentrt: "+postgresNote)
	}
	return e.done(p, ExitOK)
}

// whoami is $USER, else the current account's user name, else "".
func (e *env) whoami() string {
	if u := e.getenv("USER"); u != "" {
		return u
	}
	if e.osUser != nil {
		return e.osUser()
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return ""
}

func trimAgentrt(err error) string {
	s := err.Error()
	const p = "agentrt: "
	for len(s) > len(p) && s[:len(p)] == p {
		s = s[len(p):]
	}
	return s
}
