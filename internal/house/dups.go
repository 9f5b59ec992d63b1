package house

import (
	"bytes"
	"path"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file counts duplicate pairs the way /work/shared/tools/dups.sh
// does (which runs the `duplicates` tool over a copy of the tree), so CI,
// which has neither, prints the same figure. A pair is two files (or two
// places in one file) sharing a run of six source lines that are the same
// after white space is folded, or the same in shape (names, strings and
// numbers each replaced by a letter) when the run has substance. A run
// found in more than eight places is too common to pair.

const (
	dupWindow     = 6         // lines in a run
	dupBucketMax  = 8         // places a run may stand in and still pair
	dupMinTokens  = 4         // per line, on average, for a run to pair by shape
	dupMinStmts   = 2         // statements in a run for it to pair by shape
	dupFileCap    = 1 << 20   // larger files are left out
	dupLineMax    = 2000      // longer lines are passed over
	dupFilesMax   = 20_000    // files read at most
	dupBytesMax   = 256 << 20 // bytes read at most
	dupWindowsMax = 600_000   // runs read at most
)

// commentMarks maps a file ending to its line-comment mark; a file whose
// ending is not here does not count (prose, data).
var commentMarks = func() map[string]string {
	m := map[string]string{}
	for mark, endings := range map[string]string{
		"#": "py pyi pyx pxd sh bash zsh fish bats nim ex exs rb rake s r pm t tcl cr jl nix tf" +
			" hcl cmake mk bzl bazel ps1 psm1 pyw gd awk sed graphql",
		"//": "rs go v sv sol dart php java kt kts scala sc groovy gradle cs fs fsx swift js mjs" +
			" cjs jsx ts tsx mts cts c h cc cpp cxx hpp hh hxx ino m mm cu cuh proto thrift zig d pas" +
			" pp lpr vue svelte astro scss less glsl hlsl wgsl",
		"--": "lua sql vhd vhdl adb ads hs purs elm rexx rex",
		";":  "asm lisp cl el scm ss rkt clj cljs cljc",
		"!":  "f f90 f95 f03 f08",
		"%":  "erl hrl pl pro",
		"(*": "ml mli sml",
		"*":  "cob cbl cpy",
		"'":  "vb vbs bas",
		"":   "css html htm",
	} {
		for _, e := range strings.Fields(endings) {
			m[e] = mark
		}
	}
	return m
}()

// namedMarks is the files that count by their whole name.
var namedMarks = map[string]string{
	"Makefile": "#", "GNUmakefile": "#", "Dockerfile": "#", "Containerfile": "#",
	"CMakeLists.txt": "#", "BUILD": "#", "WORKSPACE": "#", "Rakefile": "#", "Gemfile": "#",
	"Jenkinsfile": "//", "Vagrantfile": "#", "SConstruct": "#", "meson.build": "#",
}

var skippedDirs = map[string]bool{".git": true, "vendor": true, "third_party": true, "thirdparty": true, "node_modules": true}

func ending(name string) string {
	base := path.Base(name)
	if !strings.Contains(base, ".") {
		return ""
	}
	return strings.ToLower(base[strings.LastIndexByte(base, '.')+1:])
}

// DupCounts reports whether a slash-separated path is source the count reads.
func DupCounts(name string) bool {
	dirs := strings.Split(name, "/")
	for _, d := range dirs[:len(dirs)-1] {
		if skippedDirs[strings.ToLower(d)] {
			return false
		}
	}
	_, named := namedMarks[path.Base(name)]
	_, marked := commentMarks[ending(name)]
	return named || marked
}

// DupReadable reports whether a file's contents are read: at most 1 MiB
// and no NUL byte.
func DupReadable(src []byte) bool {
	return len(src) <= dupFileCap && bytes.IndexByte(src, 0) < 0
}

func commentMark(name string) string {
	if m, ok := namedMarks[path.Base(name)]; ok {
		return m
	}
	return commentMarks[ending(name)]
}

// BlankImports empties a Go file's import lines, keeping every line so
// that positions stay: a block from "import (" to its ")", and a
// single `import "x"` line (dups.sh's awk).
func BlankImports(src []byte) []byte {
	lines := strings.Split(string(src), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	var b strings.Builder
	inBlock := false
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "import ("):
			inBlock, l = true, ""
		case inBlock && strings.HasPrefix(l, ")"):
			inBlock, l = false, ""
		case inBlock, strings.HasPrefix(l, `import "`):
			l = ""
		}
		b.WriteString(l + "\n")
	}
	return []byte(b.String())
}

// isPySpace is Python's str.isspace: Go's unicode.IsSpace and the four
// information separators.
func isPySpace(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f) }

// normLine folds a line's white space; "" for a line that is blank, too
// short or long, only punctuation, or a comment.
func normLine(line, mark string) string {
	s := strings.Join(strings.FieldsFunc(line, isPySpace), " ")
	if n := utf8.RuneCountInString(s); n < 3 || n > dupLineMax {
		return ""
	}
	if strings.TrimLeft(s, " {}()[];,:.") == "" {
		return ""
	}
	asides := []string{"/*", "*", "'''", `"""`}
	if mark == "#" || mark == "//" || mark == "--" {
		asides = append(asides, mark)
	}
	for _, a := range asides {
		if strings.HasPrefix(s, a) && !strings.HasPrefix(s, "*/") {
			return ""
		}
	}
	return s
}

const dupWord = `[\p{L}\p{N}_`

// headerLine matches imports, includes and package lines, which never count.
var headerLine = regexp.MustCompile(`^(?:import\b|from \S+ import\b|use ` + dupWord + `:{]|(?:pub(?:\(` + dupWord +
	`:]+\))? )?(?:use|mod) ` + dupWord + `:{]+;?$|#\s*(?:include|import)\b|package ` + dupWord + `.]+;?$|(?:const |var |let )?` +
	dupWord + `{}, ]+ = require\(|export \{[^}]*\} from )`)
