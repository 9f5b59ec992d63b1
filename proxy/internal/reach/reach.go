// Package reach refuses a stdio server whose arguments name one of the
// proxy's own files (the configuration, the databases, a manifest, a
// secret) or a directory holding one: such a server could rewrite the
// policy or forge an approval. It reads the spellings servers take paths
// in. It is a guard against a mistake in the configuration, not a
// boundary: what a server reaches by other means is not seen.
package reach

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentrt/agentrt/trace"
)

// ErrReach marks a stdio server whose arguments name one of the proxy's
// own files or a directory holding one.
var ErrReach = errors.New("proxy: a server's arguments reach the proxy's files")

// Error names the server, the argument and the file it reaches.
type Error struct {
	Server   string
	Argument string
	Reaches  string
}

func (e *Error) Error() string {
	return fmt.Sprintf("proxy: server %q: argument %q reaches %s, which the server could then rewrite (the policy, the pins or an approval); give it a directory that holds none of the proxy's files, or set skip_path_check for it",
		e.Server, trace.Sanitize(e.Argument), e.Reaches)
}

// Is matches ErrReach.
func (e *Error) Is(target error) bool { return target == ErrReach }

// Server is what the check reads of a configured stdio server.
type Server struct {
	Name    string
	Command []string
}

// protected is the set a server's argument must not name: each protected
// file and each directory above it, as written and with symbolic links
// resolved, and the identities of those that exist.
type protected struct {
	paths map[string]string // path form -> the protected file it leads to
	infos []protectedInfo
}

type protectedInfo struct {
	fi   fs.FileInfo
	file string
}

func newProtected(files []string) *protected {
	p := &protected{paths: map[string]string{}}
	seen := map[string]bool{}
	for _, f := range files {
		if f == "" {
			continue
		}
		for _, form := range pathForms(f) {
			for d := form; ; d = filepath.Dir(d) {
				if _, ok := p.paths[d]; !ok {
					p.paths[d] = f
				}
				if !seen[d] {
					seen[d] = true
					if fi, err := os.Stat(d); err == nil {
						p.infos = append(p.infos, protectedInfo{fi, f})
					}
				}
				if filepath.Dir(d) == d {
					break
				}
			}
		}
	}
	return p
}

// reaches says which protected file c leads to, if any.
func (p *protected) reaches(c string) (string, bool) {
	for _, form := range pathForms(c) {
		if f, ok := p.paths[form]; ok {
			return f, true
		}
	}
	fi, err := os.Stat(c)
	if err != nil {
		return "", false
	}
	for _, pi := range p.infos {
		if os.SameFile(fi, pi.fi) {
			return pi.file, true
		}
	}
	return "", false
}

// pathForms are an absolute path as written (cleaned) and with every
// symbolic link in its longest existing prefix resolved, so a file that
// does not exist yet is still compared by where it would be.
func pathForms(abs string) []string {
	abs = filepath.Clean(abs)
	forms := []string{abs}
	if r := resolvePath(abs); r != abs {
		forms = append(forms, r)
	}
	return forms
}

func resolvePath(abs string) string {
	rest := ""
	for d := abs; ; d = filepath.Dir(d) {
		if r, err := filepath.EvalSymlinks(d); err == nil {
			if rest == "" {
				return r
			}
			return filepath.Join(r, rest)
		}
		if filepath.Dir(d) == d {
			return abs
		}
		if rest == "" {
			rest = filepath.Base(d)
		} else {
			rest = filepath.Join(filepath.Base(d), rest)
		}
	}
}

// argCandidates are the paths one argument may name, in the spellings
// servers commonly take: the argument itself, what follows its first "="
// or ":", a file:// URL's path, the rest of a short flag ("-r/p"), each
// with a leading "~" expanded to home.
func argCandidates(arg, home string) []string {
	var out []string
	add := func(s string) {
		if s == "" {
			return
		}
		out = append(out, s)
		if home != "" && (s == "~" || strings.HasPrefix(s, "~/")) {
			out = append(out, filepath.Join(home, strings.TrimPrefix(s, "~")))
		}
	}
	add(arg)
	if _, after, ok := strings.Cut(arg, "="); ok {
		add(after)
	}
	if _, after, ok := strings.Cut(arg, ":"); ok {
		add(after)
	}
	if strings.HasPrefix(strings.ToLower(arg), "file:") {
		if u, err := url.Parse(arg); err == nil && u.Path != "" {
			add(u.Path)
		}
	}
	if len(arg) > 2 && arg[0] == '-' && arg[1] != '-' {
		add(arg[2:])
		if len(arg) > 3 && arg[2] == '=' {
			add(arg[3:])
		}
	}
	return out
}

// Check says whether any argument of servers, read as a path (and each
// spelling argCandidates finds in it), absolute or relative to where the
// server starts (the working directory) and to configDir, names one of
// files or a directory holding one; the first that does is an *Error.
func Check(files []string, configDir string, servers []Server) error {
	p := newProtected(files)
	home, _ := os.UserHomeDir()
	cwd, _ := os.Getwd()
	bases := []string{cwd, configDir}
	for _, s := range servers {
		for _, arg := range s.Command {
			for _, c := range argCandidates(arg, home) {
				var abs []string
				if filepath.IsAbs(c) {
					abs = []string{c}
				} else {
					for _, b := range bases {
						if b != "" {
							abs = append(abs, filepath.Join(b, c))
						}
					}
				}
				for _, a := range abs {
					if f, ok := p.reaches(a); ok {
						return &Error{Server: s.Name, Argument: arg, Reaches: f}
					}
				}
			}
		}
	}
	return nil
}
