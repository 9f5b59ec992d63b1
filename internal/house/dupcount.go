package house

import (
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// operand and armLine match a line whose shape is a table's arm ("x: s,",
// "s => x,"), which is never a statement.
const operand = `(?:[sx0_](?: [:.] [:.]? ?x)*(?: \( [sx0_ .:,]*\)?)?)`

var armLine = regexp.MustCompile(`^(?:x )?` + operand + ` (?:= >|:|- >) (?:x )?` + operand + ` [,;]?$`)

var statementWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields("if for while loop return let var const else elif try except catch with" +
		" raise throw yield await defer go do unsafe assert del goto continue break") {
		statementWords[w] = true
	}
}

var declarationWords = map[string]bool{"impl": true, "class": true, "struct": true, "enum": true,
	"interface": true, "trait": true, "union": true, "typedef": true, "pub": true, "export": true}

// closedStrings is the [start, end) rune spans of a line's closed string
// literals, in either quote.
func closedStrings(r []rune) [][2]int {
	var out [][2]int
	readTo := map[rune]int{'"': 0, '\'': 0}
	for look := 0; look < len(r); {
		at := look
		for at < len(r) && r[at] != '"' && r[at] != '\'' {
			at++
		}
		if at == len(r) {
			break
		}
		q := r[at]
		look = at + 1
		if at < readTo[q] {
			continue
		}
		end := look
		for end < len(r) {
			if r[end] == '\\' && end+1 < len(r) && r[end+1] != '\n' {
				end += 2
			} else if r[end] != q && r[end] != '\\' {
				end++
			} else {
				break
			}
		}
		if end < len(r) && r[end] == q {
			out = append(out, [2]int{at, end + 1})
			look = end + 1
		} else {
			readTo[q] = end
		}
	}
	return out
}

func isASCIILetter(c rune) bool { return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

// plainTokens splits r[from:to] into names, numbers and single characters.
func plainTokens(r []rune, from, to int, out []string) []string {
	for i := from; i < to; {
		c := r[i]
		j := i + 1
		switch {
		case isASCIILetter(c):
			for j < to && (isASCIILetter(r[j]) || (r[j] >= '0' && r[j] <= '9')) {
				j++
			}
		case c >= '0' && c <= '9':
			for j < to && strings.ContainsRune("0123456789abcdefABCDEFxX_.", r[j]) {
				j++
			}
		case isPySpace(c):
			i = j
			continue
		}
		out = append(out, string(r[i:j]))
		i = j
	}
	return out
}

func lineTokens(s string) []string {
	r := []rune(s)
	var out []string
	rest := 0
	for _, span := range closedStrings(r) {
		out = plainTokens(r, rest, span[0], out)
		out = append(out, string(r[span[0]:span[1]]))
		rest = span[1]
	}
	return plainTokens(r, rest, len(r), out)
}

func isName(t string) bool {
	c := []rune(t)[0]
	return c == '_' || unicode.IsLetter(c)
}

// lineShape is a line's tokens with names as x, strings as s and numbers
// as 0, and the line's names.
func lineShape(s string) ([]string, []string) {
	toks := lineTokens(s)
	var names []string
	for i, t := range toks {
		c := []rune(t)[0]
		switch {
		case isName(t):
			names = append(names, t)
			toks[i] = "x"
		case c == '"' || c == '\'':
			toks[i] = "s"
		case unicode.IsDigit(c):
			toks[i] = "0"
		}
	}
	return toks, names
}

// isStatement reports whether a line's shape does something: starts with
// a statement word, assigns, or is long.
func isStatement(toks, names []string) bool {
	if len(toks) == 0 || toks[0] == "#" || armLine.MatchString(strings.Join(toks, " ")) {
		return false
	}
	if len(names) > 0 && statementWords[names[0]] {
		return true
	}
	last := toks[len(toks)-1]
	opens := (last == "{" || last == "(" || last == ":") && !contains(toks, "=")
	if len(names) > 0 && declarationWords[names[0]] && opens {
		return false
	}
	for k, t := range toks {
		alone := k+1 >= len(toks) || (toks[k+1] != "=" && toks[k+1] != ">")
		if t == "=" && alone && (k == 0 || !strings.Contains("=!<>", toks[k-1])) {
			return true
		}
	}
	return len(toks) >= 8
}

func contains(toks []string, s string) bool {
	for _, t := range toks {
		if t == s {
			return true
		}
	}
	return false
}

type dupRow struct {
	norm, shape string
	line, ntok  int
	stmt        bool
}

// A dupRun is a run of dupWindow counted lines: its text, its shape ("" when
// it lacks the substance to pair by shape) and its first and last line.
type dupRun struct {
	exact, shaped string
	a, b          int
}

func fileRuns(text, mark string) []dupRun {
	var rows []dupRow
	for i, line := range strings.Split(text, "\n") {
		s := normLine(line, mark)
		if s == "" || headerLine.MatchString(s) {
			continue
		}
		toks, names := lineShape(s)
		rows = append(rows, dupRow{s, strings.Join(toks, " "), i + 1, len(toks), isStatement(toks, names)})
	}
	var out []dupRun
	for i := 0; i+dupWindow <= len(rows); i++ {
		chunk := rows[i : i+dupWindow]
		var exact, shaped []string
		count, stmts := 0, 0
		for _, r := range chunk {
			exact, shaped = append(exact, r.norm), append(shaped, r.shape)
			count += r.ntok
			if r.stmt {
				stmts++
			}
		}
		run := dupRun{exact: strings.Join(exact, "\n"), a: chunk[0].line, b: chunk[dupWindow-1].line}
		if count >= dupMinTokens*dupWindow && stmts >= dupMinStmts {
			run.shaped = strings.Join(shaped, "\n")
		}
		out = append(out, run)
	}
	return out
}

type dupPlace struct{ file, a, b int }

// DupPairs counts the pairs of places among texts (slash-separated path to
// contents, of files DupCounts and DupReadable admit) that share a run:
// the figure `duplicates` prints first.
func DupPairs(texts map[string]string) int {
	names := make([]string, 0, len(texts))
	for n := range texts {
		names = append(names, n)
	}
	sort.Strings(names)
	exact, shaped := map[string][]dupPlace{}, map[string][]dupPlace{}
	runs, size := 0, 0
	for i, n := range names {
		if i >= dupFilesMax || size >= dupBytesMax || runs > dupWindowsMax {
			break
		}
		size += len(texts[n])
		for _, r := range fileRuns(texts[n], commentMark(n)) {
			p := dupPlace{i, r.a, r.b}
			exact[r.exact] = append(exact[r.exact], p)
			if r.shaped != "" {
				shaped[r.shaped] = append(shaped[r.shaped], p)
			}
			runs++
		}
	}
	pairs := map[[2]int]bool{}
	for _, buckets := range []map[string][]dupPlace{exact, shaped} {
		for _, places := range buckets {
			if len(places) > dupBucketMax {
				continue
			}
			for j, p := range places {
				for _, q := range places[j+1:] {
					if p.file == q.file && q.a <= p.b {
						continue
					}
					pairs[[2]int{p.file, q.file}] = true
				}
			}
		}
	}
	return len(pairs)
}
