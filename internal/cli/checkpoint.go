package cli

import (
	"flag"
	"fmt"
	"strings"

	"github.com/agentrt/agentrt/checkpoint"
	"github.com/agentrt/agentrt/internal/cliflag"
	"github.com/agentrt/agentrt/internal/files"
)

var checkpointCommand = fromKit(&kitCmd{
	Name:    "checkpoint",
	Summary: "fold every committed event into a checkpoint now, or make a checkpoint signing key",
	Usage:   "[-key FILE] | -new-key FILE -name NAME",
	Bind:    cliflag.With(checkpointFlagSet, runCheckpoint),
})

// checkpointOptions are checkpoint's flags.
type checkpointOptions struct {
	key, newKey, name string
}

func checkpointFlagSet(fs *flag.FlagSet, o *checkpointOptions) {
	fs.StringVar(&o.key, "key", "", "sign the checkpoints with the private key in this owner-only file")
	fs.StringVar(&o.newKey, "new-key", "", "write a new private signing key to this file (owner-only, never replaced) and print its public key")
	fs.StringVar(&o.name, "name", "", "with -new-key, the key's name, as verifiers will see it")
}

func runCheckpoint(x *inv, o *checkpointOptions, pos []string) int {
	e, c, g := x.env, x.c, x.g
	if len(pos) > 0 {
		return e.usageError(c, fmt.Sprintf("unexpected argument %q", clip(pos[0], 80)))
	}
	if o.newKey != "" {
		return writeNewKey(e, c, o.newKey, o.name)
	}
	if o.name != "" {
		return e.usageError(c, "-name needs -new-key")
	}
	var cfg checkpoint.Config
	if o.key != "" {
		s, err := checkpoint.LoadSigner(o.key)
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
