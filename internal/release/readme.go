package release

import (
	"regexp"
)

// installLine matches a `go install` of one of our commands at a version.
func installLine(prefix string) *regexp.Regexp {
	return regexp.MustCompile(`go install (` + regexp.QuoteMeta(prefix) + `(?:/[\w.-]+)*/cmd/[\w.-]+)@(v[0-9A-Za-z.+-]+)`)
}

// InstallLines returns the package and version of every `go install` of
// one of our commands in text (the README's install section).
func InstallLines(text []byte, prefix string) [][2]string {
	var out [][2]string
	for _, m := range installLine(prefix).FindAllSubmatch(text, -1) {
		out = append(out, [2]string{string(m[1]), string(m[2])})
	}
	return out
}

// SetInstallVersion sets the version of every such line in text to v.
func SetInstallVersion(text []byte, prefix, v string) []byte {
	return installLine(prefix).ReplaceAll(text, []byte("go install ${1}@"+v))
}
