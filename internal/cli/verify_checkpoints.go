package cli

import (
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/checkpoint"
	"github.com/agentrt/agentrt/internal/files"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// maxKeptFile bounds a kept checkpoint or public key file.
const maxKeptFile = 64 << 10

// parseKeptCheckpoint reads a -head that names a checkpoint: SIZE:ROOT
// (the root in base64, as `agentrt checkpoint` prints it), or a file
// holding a checkpoint's text or signed note. ok is false for anything
// else (a chain head, SEQ:HASH).
func parseKeptCheckpoint(arg string, v note.Verifier) (kept *checkpoint.Checkpoint, ok bool, msg string) {
	if _, err := os.Lstat(arg); err == nil {
		c, err := readKeptFile(arg, v)
		if err != nil {
			return nil, true, "-head: " + strings.TrimPrefix(err.Error(), "agentrt: ")
		}
		return &c, true, ""
	}
	sizeText, root, cut := strings.Cut(arg, ":")
	if !cut || hashPattern.MatchString(strings.ToLower(root)) {
		return nil, false, ""
	}
	size, err := strconv.ParseInt(sizeText, 10, 64)
	raw, rerr := base64.StdEncoding.DecodeString(root)
	if err != nil || size < 1 || rerr != nil || len(raw) != tlog.HashSize {
		return nil, true, "-head: a checkpoint is SIZE:ROOT, a positive size and the base64 root agentrt checkpoint prints, or a file holding one"
	}
	c := &checkpoint.Checkpoint{Size: size}
	copy(c.Root[:], raw)
	return c, true, ""
}

// readKeptFile reads a checkpoint kept in a file: a signed note, checked
// with v when v is set, or the bare text.
func readKeptFile(path string, v note.Verifier) (checkpoint.Checkpoint, error) {
	b, err := files.ReadOwned(path, maxKeptFile)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return checkpoint.Checkpoint{}, fmt.Errorf("no checkpoint file at %s", path)
		}
		return checkpoint.Checkpoint{}, err
	}
	text := string(b)
	if v != nil {
		return checkpoint.Open(b, v)
	}
	if body, _, signed := strings.Cut(text, "\n\n"); signed {
		text = body + "\n"
	}
	return checkpoint.Parse(text)
}

// loadVerifier reads -key: a public key as `agentrt checkpoint -new-key`
// prints it, or a file holding one.
func loadVerifier(arg string) (note.Verifier, error) {
	if arg == "" {
		return nil, nil
	}
	if _, err := os.Lstat(arg); err != nil {
		return checkpoint.ParseVerifier(arg)
	}
	b, err := files.ReadOwned(arg, maxKeptFile)
	if err != nil {
		return nil, err
	}
	return checkpoint.ParseVerifier(string(b))
}

// checkpointFlags are verify's flags for the checkpoints, and what
// resolve made of them.
type checkpointFlags struct {
	key      string
	stale    durationFlag
	verifier note.Verifier
	kept     *checkpoint.Checkpoint
}

func (f *checkpointFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.key, "key", "", "every checkpoint must be signed by this public key (the key, or a file holding it)")
	f.stale.d = time.Minute
	fs.Var(&f.stale, "stale", "fail when an event committed longer ago than this is not folded into a checkpoint")
}

// durationFlag is a duration flag that knows whether it was given.
type durationFlag struct {
	d     time.Duration
	given bool
}

func (f *durationFlag) String() string { return f.d.String() }

func (f *durationFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("not a duration such as 90s or 5m")
	}
	f.d, f.given = d, true
	return nil
}

// resolve reads -key and, when -head names a checkpoint rather than a
// chain head, takes it from head (leaving head empty). Unless code is
// ExitOK a usage error was printed.
func (f *checkpointFlags) resolve(e *env, c *command, head *string) int {
	v, err := loadVerifier(f.key)
	if err != nil {
		return e.usageError(c, "-key: "+trimAgentrt(err))
	}
	f.verifier = v
	kept, isCP, msg := parseKeptCheckpoint(*head, v)
	if msg != "" {
		return e.usageError(c, msg)
	}
	if isCP {
		f.kept, *head = kept, ""
	}
	return ExitOK
}

// verify checks the checkpoints into rep, failing it on a problem.
func (f *checkpointFlags) verify(e *env, st agentrt.Store, rep *verifyReport) error {
	r, err := verifyCheckpoints(e, st, f.verifier, f.kept, f.stale.d, f.stale.given)
	if err != nil {
		return err
	}
	rep.Checkpoints = r
	rep.OK = rep.OK && (r == nil || r.Problem == nil)
	return nil
}

// verifyCheckpoints is verify's check of the checkpoints: run after the
// chain's, it fails verify on any checkpoint problem. Events left
// unfolded longer than stale fail it once the database has a checkpoint
// (an integrator has run), or whenever -stale was given.
func verifyCheckpoints(e *env, st agentrt.Store, v note.Verifier, kept *checkpoint.Checkpoint, stale time.Duration, staleSet bool) (*checkpoint.Report, error) {
	cs, err := checkpoint.For(st)
	if err != nil {
		return nil, nil
	}
	o := checkpoint.VerifyOptions{Verifier: v, Kept: kept, Stale: stale, Now: e.now}
	if e.progress != nil && e.progress(e.stderr) {
		o.Progress = func(done, total int64) {
			fmt.Fprintf(e.stderr, "\rverifying checkpoints: %d of %d leaves", done, total)
		}
		defer fmt.Fprint(e.stderr, "\r\x1b[K")
	}
	rep, err := checkpoint.Verify(background(), cs, o)
	if err != nil {
		return nil, err
	}
	if rep.Latest == nil && !staleSet && rep.Problem != nil && rep.Unfolded > 0 {
		// No integrator has ever run here: unfolded is the state, not a fault.
		rep.Problem = nil
	}
	return &rep, nil
}

func writeCheckpointReport(p *printer, r *checkpoint.Report) {
	if r == nil {
		return
	}
	if r.Latest == nil {
		p.printf("checkpoints: none (agentrt checkpoint folds the events into one)\n")
	} else {
		p.printf("checkpoints: %d, consistent; latest size %d hash %s; %d folded event(s) included\n", r.Checkpoints, r.Latest.Size, r.Latest.Hash, r.Leaves)
	}
	if r.KeptExtended {
		p.printf("kept checkpoint: extended\n")
	}
	if pr := r.Problem; pr != nil {
		p.printf("checkpoints NOT verified: %s\n", clip(pr.Detail, textClipBytes))
	}
}
