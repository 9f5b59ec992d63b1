package cli

import (
	"fmt"
	"strings"

	"github.com/agentrt/agentrt/checkpoint"
	"github.com/agentrt/agentrt/internal/files"
)

var checkpointCommand = &command{
	name:    "checkpoint",
	summary: "fold every committed event into a checkpoint now, or make a checkpoint signing key",
	usage:   "[-key FILE] | -new-key FILE -name NAME",
	run:     runCheckpoint,
}

func runCheckpoint(e *env, g *global, c *command, args []string) int {
	fs := e.flags(c, g)
	keyPath := fs.String("key", "", "sign the checkpoints with the private key in this owner-only file")
	newKey := fs.String("new-key", "", "write a new private signing key to this file (owner-only, never replaced) and print its public key")
	name := fs.String("name", "", "with -new-key, the key's name, as verifiers will see it")
	pos, code, ok := e.parse(c, fs, args)
	if !ok {
		return code
	}
	if len(pos) > 0 {
		return e.usageError(c, fmt.Sprintf("unexpected argument %q", clip(pos[0], 80)))
	}
	if *newKey != "" {
		return writeNewKey(e, c, *newKey, *name)
	}
	if *name != "" {
		return e.usageError(c, "-name needs -new-key")
	}
	var cfg checkpoint.Config
	if *keyPath != "" {
		s, err := checkpoint.LoadSigner(*keyPath)
		if err != nil {
			return e.usageError(c, strings.TrimPrefix(err.Error(), "agentrt: "))
		}
		cfg.Signer = s
	}
	st, where, code := g.openDB(e, c, false)
	if code != ExitOK {
		return code
	}
	defer st.Close()
	cs, err := checkpoint.For(st)
	if err != nil {
		return e.fail("%s: %v", where, err)
	}
	in, err := checkpoint.NewIntegrator(cs, cfg)
	if err != nil {
		return e.fail("%v", err)
	}
	n, latest, ok, err := in.Fold(background())
	if err != nil {
		return e.fail("folding events in %s: %v", where, err)
	}
	p := &printer{w: e.stdout}
	if g.json {
		writeJSON(p, struct {
			Folded int                    `json:"folded"`
			Latest *checkpoint.Checkpoint `json:"latest,omitempty"`
		}{n, ptrIf(ok, latest)})
		return e.done(p, ExitOK)
	}
	p.printf("folded: %d event(s)\n", n)
	if ok {
		p.printf("checkpoint: size %d hash %s\n", latest.Size, latest.Hash)
		p.printf("keep it as: %s\n", keptText(latest))
	} else {
		p.printf("checkpoint: none (no events)\n")
	}
	return e.done(p, ExitOK)
}

func writeNewKey(e *env, c *command, path, name string) int {
	if name == "" || strings.ContainsAny(name, "+ \t\n") {
		return e.usageError(c, "-new-key needs -name, a key name with no '+' or spaces")
	}
	skey, vkey, err := checkpoint.NewKey(name)
	if err != nil {
		return e.fail("making a key: %v", err)
	}
	if err := files.WriteNew(path, []byte(skey+"\n"), 0o600); err != nil {
		return e.fail("writing the key: %v", err)
	}
	p := &printer{w: e.stdout}
	p.printf("%s\n", vkey)
	return e.done(p, ExitOK)
}

// keptText is a checkpoint as -head takes it: SIZE:ROOT.
func keptText(c checkpoint.Checkpoint) string { return c.Kept() }

func ptrIf[T any](ok bool, v T) *T {
	if !ok {
		return nil
	}
	return &v
}
