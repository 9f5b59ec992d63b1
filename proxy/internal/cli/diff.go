package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentrt/agentrt/trace"
)

// diffContext is how many unchanged lines a hunk keeps around a change.
const diffContext = 3

// maxDiffCells bounds the longest-common-subsequence table; past it the
// diff is every old line removed, then every new line added.
const maxDiffCells = 4 << 20

type diffOp struct {
	kind byte // ' ', '-' or '+'
	line string
}

// lineDiff is the edit script from a to b along a longest common
// subsequence of their lines.
func lineDiff(a, b []string) []diffOp {
	n, m := len(a), len(b)
	if n*m > maxDiffCells {
		ops := make([]diffOp, 0, n+m)
		for _, l := range a {
			ops = append(ops, diffOp{'-', l})
		}
		for _, l := range b {
			ops = append(ops, diffOp{'+', l})
		}
		return ops
	}
	// lcs[i][j] is the LCS length of a[i:] and b[j:].
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var ops []diffOp
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case a[i] == b[j]:
			ops = append(ops, diffOp{' ', a[i]})
			i++
			j++
		case lcs[i+1][j] >= lcs[i][j+1]:
			ops = append(ops, diffOp{'-', a[i]})
			i++
		default:
			ops = append(ops, diffOp{'+', b[j]})
			j++
		}
	}
	for ; i < n; i++ {
		ops = append(ops, diffOp{'-', a[i]})
	}
	for ; j < m; j++ {
		ops = append(ops, diffOp{'+', b[j]})
	}
	return ops
}

// unifiedDiff writes a unified diff of a and b, each line escaped with
// trace.Sanitize (a server chose them), or "" when they are equal.
func unifiedDiff(oldName, newName string, a, b []string) string {
	ops := lineDiff(a, b)
	changed := false
	for _, op := range ops {
		if op.kind != ' ' {
			changed = true
			break
		}
	}
	if !changed {
		return ""
	}
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", oldName, newName)
	// Walk the script, opening a hunk at each change and closing it once
	// more than twice the context of unchanged lines follows.
	for k := 0; k < len(ops); {
		if ops[k].kind == ' ' {
			k++
			continue
		}
		start := max(k-diffContext, 0)
		end := k
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*diffContext {
				end = min(end+diffContext, len(ops))
				break
			}
			end = run
		}
		oldStart, newStart := 1, 1
		for _, op := range ops[:start] {
			if op.kind != '+' {
				oldStart++
			}
			if op.kind != '-' {
				newStart++
			}
		}
		oldLen, newLen := 0, 0
		for _, op := range ops[start:end] {
			if op.kind != '+' {
				oldLen++
			}
			if op.kind != '-' {
				newLen++
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(oldStart, oldLen), hunkRange(newStart, newLen))
		for _, op := range ops[start:end] {
			fmt.Fprintf(&out, "%c%s\n", op.kind, trace.Sanitize(op.line))
		}
		k = end
	}
	return out.String()
}

func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start-1)
	}
	if n == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}

// prettyLines is canonical JSON indented, one line a key or element, so a
// diff shows which part of a schema changed.
func prettyLines(canonical json.RawMessage) []string {
	if len(canonical) == 0 {
		return nil
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, canonical, "", "  "); err != nil {
		return []string{string(canonical)}
	}
	return strings.Split(buf.String(), "\n")
}

// textLines splits a description into lines.
func textLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
