package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/approver"
	"github.com/agentrt/agentrt/trace"
	"github.com/agentrt/agentrt/view"
)

// maxTextFields is how many fields of one JSON value the text lists.
const maxTextFields = 50

// clean escapes text a model, a policy or a server chose, and bounds it.
func clean(s string) string {
	head, tail, omitted, cut := view.Cut(s)
	if !cut {
		return trace.Sanitize(s)
	}
	// The marker is written after both halves are escaped, so no text can
	// forge it: Sanitize doubles every backslash the text holds.
	return fmt.Sprintf("%s\\[%d bytes omitted]%s", trace.Sanitize(head), omitted, trace.Sanitize(tail))
}

// short escapes s and cuts it to n bytes, for the closing line.
func short(s string, n int) string {
	s = trace.Sanitize(s)
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && s[i]&0xC0 == 0x80 {
		i--
	}
	return s[:i] + "\\[cut]"
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// writeText renders an approval for a chat bot: one field per line, every
// chosen string escaped, each value with its size, and a last line only
// the renderer writes. Escaping turns every newline and control character
// in the text into a visible escape, so nothing in it can start a line.
func writeText(w io.Writer, a approver.Approval) {
	tool := a.Request.Spec.Name
	status := strings.ToUpper(string(a.Status))
	if a.Expired {
		status = "EXPIRED"
	}
	fmt.Fprintf(w, "APPROVAL %s %s\n", short(status, 32), short(a.ID, 128))
	fmt.Fprintf(w, "  run       %s\n", short(a.RunID, 128))
	fmt.Fprintf(w, "  kind      %s\n", clean(a.Kind))
	side := ""
	if a.Request.Spec.SideEffect != "" {
		side = " (" + short(string(a.Request.Spec.SideEffect), 64) + ")"
	}
	fmt.Fprintf(w, "  tool      %s%s\n", clean(tool), side)
	if a.Reason != "" {
		fmt.Fprintf(w, "  reason    %s\n", clean(a.Reason))
	}
	fmt.Fprintf(w, "  hash      %s\n", short(a.Hash, 128))
	fmt.Fprintf(w, "  created   %s\n", stamp(a.CreatedAt))
	if !a.ExpiresAt.IsZero() {
		mark := ""
		if a.Expired {
			mark = " (expired)"
		}
		fmt.Fprintf(w, "  expires   %s%s\n", stamp(a.ExpiresAt), mark)
	}
	if !a.DecidedAt.IsZero() {
		by := ""
		if a.DecidedBy != "" {
			by = " by " + clean(a.DecidedBy)
		}
		note := ""
		if a.Note != "" {
			note = ": " + clean(a.Note)
		}
		fmt.Fprintf(w, "  decided   %s%s%s\n", stamp(a.DecidedAt), by, note)
	}
	if a.DecodeError != "" {
		fmt.Fprintf(w, "  unread    %s\n", clean(a.DecodeError))
	}
	fmt.Fprintf(w, "  arguments (the tool call the model made; one field per line, with its size in bytes)\n")
	args, _ := agentrt.ApprovalArguments(a.Approval) // secrets the policy found shown as [REDACTED:<kind>]
	n := writeFields(w, args)
	fmt.Fprintf(w, "  presentation (written by the policy; it may quote the model)\n")
	writeFields(w, a.Presentation)
	fmt.Fprintf(w, "----- end of approval %s for tool %s, %d argument field(s), hash %s -----\n",
		short(a.ID, 64), short(tool, 64), n, short(a.Hash, 80))
}

// writeFields lists the top-level fields of a JSON object, or the value
// as one field when it is not an object, and returns how many there are.
func writeFields(w io.Writer, raw json.RawMessage) int {
	const ind = "    "
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		fmt.Fprintf(w, "%s(none)\n", ind)
		return 0
	}
	fields := map[string]json.RawMessage{}
	if trimmed[0] != '{' || json.Unmarshal(trimmed, &fields) != nil {
		fmt.Fprintf(w, "%svalue (%d bytes): %s\n", ind, len(trimmed), value(trimmed))
		return 1
	}
	if len(fields) == 0 {
		fmt.Fprintf(w, "%s(no fields)\n", ind)
		return 0
	}
	keys := slices.Sorted(maps.Keys(fields))
	for i, k := range keys {
		if i == maxTextFields {
			fmt.Fprintf(w, "%s\\[%d more field(s) not shown]\n", ind, len(keys)-i)
			break
		}
		fmt.Fprintf(w, "%s%s (%d bytes): %s\n", ind, clean(k), len(fields[k]), value(fields[k]))
	}
	return len(keys)
}

// value shows a string as its text, escaped, and anything else as its
// JSON, escaped.
func value(raw json.RawMessage) string {
	var s string
	if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return `"` + clean(s) + `"`
	}
	return clean(string(raw))
}
