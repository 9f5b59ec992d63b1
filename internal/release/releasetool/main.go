// Command releasetool reads and stamps the agentrt workspace for the
// Makefile, .ci and scripts/release.sh. Run it from the repository root:
//
//	go run ./internal/release/releasetool COMMAND [flags]
//
// Commands:
//
//	version            the version our modules require each other at
//	binaries [-all]    NAME PACKAGE DIR of every binary a release holds
//	                   (-all: of every command of every published module)
//	tags -version V    the tags that publish V, one per published module
//	proxy -out DIR [-version V]
//	                   a file-based module proxy serving a stamped copy of
//	                   the tree at V (default: the version above)
//	stamp -version V   set every requirement on our modules to V and every
//	                   go.sum's lines for them to V's hashes, in place, and
//	                   the README's install lines to @V
//	tidy               go mod tidy in every module, outside the workspace,
//	                   our modules from a local proxy; our go.sum lines are
//	                   left as they were
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/agentrt/agentrt/internal/release"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "releasetool: %v\n", err)
		os.Exit(1)
	}
}

const usage = "usage: releasetool version | binaries [-all] | tags -version V | proxy -out DIR [-version V] | stamp -version V | tidy"

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	version := fs.String("version", "", "the release version, vX.Y.Z")
	out := fs.String("out", "", "the proxy directory to write")
	all := fs.Bool("all", false, "every command, not one per name")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q; %s", fs.Arg(0), usage)
	}
	w, err := release.Load(".")
	if err != nil {
		return err
	}
	switch args[0] {
	case "version":
		v, err := w.Version()
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, v)
	case "binaries":
		bs, err := w.ReleaseBinaries()
		if *all {
			bs, err = w.Binaries()
		}
		if err != nil {
			return err
		}
		for _, b := range bs {
			fmt.Fprintf(stdout, "%s %s %s\n", b.Name, b.Package, b.Dir)
		}
	case "tags":
		if *version == "" {
			return errors.New("tags needs -version V")
		}
		for _, t := range w.Tags(*version) {
			fmt.Fprintln(stdout, t)
		}
	case "proxy":
		if *out == "" {
			return errors.New("proxy needs -out DIR")
		}
		v := *version
		if v == "" {
			if v, err = w.Version(); err != nil {
				return err
			}
		}
		tree, err := os.MkdirTemp("", "agentrt-release-tree-")
		if err != nil {
			return err
		}
		defer release.RemoveAll(tree)
		if err := release.Copy(w.Root, filepath.Join(tree, "src")); err != nil {
			return err
		}
		if _, err := release.Stamp(filepath.Join(tree, "src"), v, *out, release.StampOptions{}); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "releasetool: %s serves our modules at %s\n", *out, v)
	case "stamp":
		if *version == "" {
			return errors.New("stamp needs -version V")
		}
		return stampInPlace(w, *version, stderr)
	case "tidy":
		return tidy(w, stderr)
	default:
		return fmt.Errorf("unknown command %q; %s", args[0], usage)
	}
	return nil
}

// copyTree copies the workspace to src in a fresh temporary directory,
// tree, which the caller removes; on an error nothing is left behind.
func copyTree(w *release.Workspace) (tree, src string, err error) {
	tree, err = os.MkdirTemp("", "agentrt-release-tree-")
	if err != nil {
		return "", "", err
	}
	src = filepath.Join(tree, "src")
	if err := release.Copy(w.Root, src); err != nil {
		release.RemoveAll(tree)
		return "", "", err
	}
	return tree, src, nil
}

// stampInPlace stamps a copy and brings its go.mod and go.sum files, and
// the README's install lines, back into the tree.
func stampInPlace(w *release.Workspace, v string, stderr io.Writer) error {
	tree, src, err := copyTree(w)
	if err != nil {
		return err
	}
	defer release.RemoveAll(tree)
	if _, err := release.Stamp(src, v, filepath.Join(tree, "proxy"), release.StampOptions{}); err != nil {
		return err
	}
	if err := bringBack(src, w.Root, "go.work", nil); err != nil {
		return err
	}
	for _, m := range w.Modules {
		for _, f := range []string{"go.mod", "go.sum"} {
			if err := bringBack(src, w.Root, filepath.Join(filepath.FromSlash(m.Dir), f), nil); err != nil {
				return err
			}
		}
	}
	readme := filepath.Join(w.Root, "README.md")
	b, err := os.ReadFile(readme)
	if err != nil {
		return err
	}
	nb := release.SetInstallVersion(b, w.ModulePathPrefix(), v)
	if err := os.WriteFile(readme, nb, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "releasetool: every module requires ours at %s; go.sum files hold their hashes\n", v)
	return nil
}

// tidy runs go mod tidy in a stamped copy, each module after the modules
// it requires are in the proxy, and brings back go.mod and go.sum with the
// tree's own lines for our modules.
func tidy(w *release.Workspace, stderr io.Writer) error {
	v, err := w.Version()
	if err != nil {
		return err
	}
	prefix := w.ModulePathPrefix()
	modcache, err := release.ReleaseModCache(prefix)
	if err != nil {
		return err
	}
	tree, src, err := copyTree(w)
	if err != nil {
		return err
	}
	defer release.RemoveAll(tree)
	before := func(m *release.Module, dir, proxy string) error {
		env, err := release.GoEnv(os.Environ(), proxy, prefix, modcache, "-mod=mod")
		if err != nil {
			return err
		}
		env = release.WithoutModIndex(env)
		fmt.Fprintf(stderr, "== go mod tidy in %s\n", m.Dir)
		cmd := exec.Command("go", "mod", "tidy")
		cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, stderr, stderr
		return cmd.Run()
	}
	if _, err := release.Stamp(src, v, filepath.Join(tree, "proxy"), release.StampOptions{Before: before}); err != nil {
		return err
	}
	if err := bringBack(src, w.Root, "go.work", nil); err != nil {
		return err
	}
	for _, m := range w.Modules {
		mod := filepath.Join(filepath.FromSlash(m.Dir), "go.mod")
		if err := bringBack(src, w.Root, mod, nil); err != nil {
			return err
		}
		sum := filepath.Join(filepath.FromSlash(m.Dir), "go.sum")
		old, err := os.ReadFile(filepath.Join(w.Root, sum))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		keep := release.OurSums(old, prefix)
		if err := bringBack(src, w.Root, sum, func(name string) error {
			return release.ReplaceSums(name, prefix, keep)
		}); err != nil {
			return err
		}
	}
	return nil
}

// bringBack copies the file rel from the tree src to dst (removing it
// there if src has none), then runs fix on it.
func bringBack(src, dst, rel string, fix func(string) error) error {
	b, err := os.ReadFile(filepath.Join(src, rel))
	to := filepath.Join(dst, rel)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.Remove(to); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	case err != nil:
		return err
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		return err
	}
	if fix != nil {
		return fix(to)
	}
	return nil
}
