package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/trace"
	"github.com/agentrt/agentrt/view"
)

// printer writes to one stream and keeps the first write error, so a
// command can report a failed write once, at the end.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) printf(format string, args ...any) {
	if p.err != nil {
		return
	}
	_, p.err = fmt.Fprintf(p.w, format, args...)
}

// table is a printer whose lines go out aligned in columns, on the stream
// of the printer that made it.
type table struct {
	printer
	tw *tabwriter.Writer
	to *printer
}

// table starts a table on p's stream.
func (p *printer) table() *table {
	tw := tabwriter.NewWriter(p.w, 0, 0, 2, ' ', 0)
	return &table{printer: printer{w: tw}, tw: tw, to: p}
}

// section starts a table on p's stream after a blank line, its header
// line printed: a table that follows other output.
func (p *printer) section(header string) *table {
	p.printf("\n")
	tp := p.table()
	tp.printf("%s\n", header)
	return tp
}

// end flushes the table and hands its first write error to the printer
// that made it.
func (t *table) end() {
	if t.err == nil {
		t.err = t.tw.Flush()
	}
	t.to.err = t.err
}

func (p *printer) write(b []byte) {
	if p.err != nil {
		return
	}
	_, p.err = p.w.Write(b)
}

// done reports a write error as a failure.
func (e *env) done(p *printer, code int) int {
	if p.err != nil {
		fmt.Fprintf(e.stderr, "agentrt: writing output: %s\n", trace.Sanitize(p.err.Error()))
		return ExitFailure
	}
	return code
}

// clean escapes text someone other than agentrt chose.
func clean(s string) string { return trace.Sanitize(s) }

// clip cuts s to n bytes, then escapes it.
func clip(s string, n int) string { return trace.Sanitize(trace.Truncate(s, n)) }

// bounded escapes s and, when it is longer than view.MaxFieldBytes, shows
// its head and tail around a marker of agentrt's own: `\[N bytes omitted]`.
// Sanitize writes every backslash in the text as `\\`, so the marker cannot
// be forged by the text around it.
func bounded(s string) string {
	head, tail, omitted, cut := view.Cut(s)
	if !cut {
		return trace.Sanitize(s)
	}
	return trace.Sanitize(head) + `\[` + strconv.Itoa(omitted) + ` bytes omitted]` + trace.Sanitize(tail)
}

// capped escapes s, cut to n bytes with a note of how many more there were.
func capped(s string, n int) string {
	if len(s) <= n {
		return trace.Sanitize(s)
	}
	return trace.Sanitize(trace.Truncate(s, n)) + fmt.Sprintf(`\[%d more bytes]`, len(s)-n)
}

// quoted is bounded text in double quotes, a quote inside written \".
func quoted(s string) string {
	return `"` + strings.ReplaceAll(bounded(s), `"`, `\"`) + `"`
}

var plainKey = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// key shows an object key bare when it is a plain word, quoted otherwise.
func key(k string) string {
	if plainKey.MatchString(k) {
		return k
	}
	return quoted(k)
}

// when prints a time with its date and zone, or "-" for none.
func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format(timeLayout)
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("_./:=@%+,-", r)))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// writeJSON writes v as one line of JSON through
// trace.AppendTerminalSafeJSON, the encoder every JSON line agentrt writes
// goes through, so the line is safe on a terminal, escapes what Sanitize
// escapes, and decodes to the same values.
func writeJSON(p *printer, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		if p.err == nil {
			p.err = err
		}
		return
	}
	line := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	p.write(append(trace.AppendTerminalSafeJSON(make([]byte, 0, len(line)+1), line), '\n'))
}

// Bounds on what one approval block prints, so a request cannot push the
// closing line off the screen by volume alone; the closing line says what
// was left out.
const (
	maxBlockFields = 100
	maxValueLines  = 60
)

// blockOptions are what a caller adds to an approval block.
type blockOptions struct {
	// hint is printed just before the closing line.
	hint string
	// tool names the tool when the request was not read whole.
	tool string
	// stages is an approval's requirement and how far it is (stagesFor).
	stages []agentrt.StageProgress
}

// writeApproval prints an approval block: a heading, the approval's own
// fields, then the arguments, presentation and capability one field per
// line, each with its own size in bytes, every string escaped and shown by
// head and tail past view.MaxFieldBytes. The closing line, which agentrt
// writes itself, is always the block's last.
func writeApproval(p *printer, a agentrt.Approval, o blockOptions) {
	tool := a.Request.Spec.Name
	if tool == "" {
		tool = o.tool
	}
	p.printf("APPROVAL WAITING %s\n", clip(a.ID, cellClipBytes))
	p.printf("  run           %s\n", clip(a.RunID, cellClipBytes))
	p.printf("  step          %s\n", clip(a.StepID, cellClipBytes))
	side := ""
	if a.Request.Spec.SideEffect != "" {
		side = " (" + clip(string(a.Request.Spec.SideEffect), 40) + ")"
	}
	p.printf("  tool          %s%s\n", dash(bounded(tool)), side)
	p.printf("  kind          %s\n", bounded(a.Kind))
	p.printf("  status        %s\n", clip(string(a.Status), 40))
	p.printf("  created       %s\n", when(a.CreatedAt))
	if !a.ExpiresAt.IsZero() {
		p.printf("  expires       %s\n", when(a.ExpiresAt))
	}
	p.printf("  hash          %s\n", clip(a.Hash, 128))
	writeStages(p, o.stages)
	if a.DecodeError != "" {
		p.printf("  unread        %s\n", bounded(a.DecodeError))
	}
	args, secrets := agentrt.ApprovalArguments(a)
	p.printf("  arguments (the tool call the model made; one field per line, each with its own size in bytes)\n")
	if len(secrets) > 0 {
		p.printf("    (%d secret(s) found by disclosure rules are shown as [REDACTED:<kind>]; the approval binds the values)\n", len(secrets))
	}
	n, size, shown := writeFields(p, args)
	p.printf("  presentation (written by the consumer's policy; it may quote the model)\n")
	writeFields(p, a.Presentation)
	p.printf("  capability (what the policy says a grant covers)\n")
	writeFields(p, a.Capability)
	if o.hint != "" {
		p.printf("%s\n", o.hint)
	}
	fields := fmt.Sprintf("%d argument field(s)", n)
	switch {
	case n < 0:
		fields = "arguments not read whole"
	case shown < n:
		fields += fmt.Sprintf(", %d not shown", n-shown)
	}
	p.printf("----- end of approval %s: tool %s, %s, %d bytes of arguments -----\n",
		clip(a.ID, 64), clip(tool, 64), fields, size)
}

// writeFields prints the top-level fields of a JSON value, four spaces in,
// and returns how many there are (-1 when a page read left the value
// out), the value's size and how many were printed. A value that is not an
// object is one field named "value".
func writeFields(p *printer, raw json.RawMessage) (n, size, shown int) {
	const ind = "    "
	size = view.ValueSize(raw)
	if len(bytes.TrimSpace(raw)) == 0 {
		p.printf("%s(none)\n", ind)
		return 0, size, 0
	}
	if n, ok := pageCapped(raw); ok {
		p.printf("%s\\[not read whole: %d bytes, past the page cap; approve reads it whole]\n", ind, n)
		return -1, int(n), 0
	}
	fields := map[string]json.RawMessage{}
	if err := json.Unmarshal(raw, &fields); err != nil || bytes.TrimSpace(raw)[0] != '{' {
		writeField(p, ind, "value", raw)
		return 1, size, 1
	}
	if len(fields) == 0 {
		p.printf("%s(no fields)\n", ind)
		return 0, size, 0
	}
	keys := slices.Sorted(maps.Keys(fields))
	for i, k := range keys {
		if i == maxBlockFields {
			rest := 0
			for _, k := range keys[i:] {
				rest += view.ValueSize(fields[k])
			}
			p.printf("%s\\[%d more field(s), %d bytes, not shown]\n", ind, len(keys)-i, rest)
			break
		}
		writeField(p, ind, key(k), fields[k])
		shown++
	}
	return len(keys), size, shown
}

// pageCapped recognises the stand-in a page read puts in place of a JSON
// column longer than agentrt.MaxPageText: {"truncated":true,"length":N}
// with at most a "head" besides. It is in band, so a stored value can take
// its shape; that only makes show say less, never approve, which reads the
// approval whole.
func pageCapped(raw json.RawMessage) (int64, bool) {
	var m map[string]json.RawMessage
	if len(raw) > 2*agentrt.MaxPageText || json.Unmarshal(raw, &m) != nil || len(m) > 3 {
		return 0, false
	}
	var length int64
	if string(m["truncated"]) != "true" || json.Unmarshal(m["length"], &length) != nil || length <= agentrt.MaxPageText {
		return 0, false
	}
	for k := range m {
		if k != "truncated" && k != "length" && k != "head" {
			return 0, false
		}
	}
	return length, true
}

// writeField prints one field: its name and size (view.ValueSize: a
// string's decoded bytes, as the console shows them), then its value on the
// same line when it is one line, or indented below it.
func writeField(p *printer, ind, name string, raw json.RawMessage) {
	lines := valueLines(raw)
	if len(lines) == 1 {
		p.printf("%s%s (%d bytes): %s\n", ind, name, view.ValueSize(raw), lines[0])
		return
	}
	p.printf("%s%s (%d bytes):\n", ind, name, view.ValueSize(raw))
	for _, l := range lines {
		p.printf("%s    %s\n", ind, l)
	}
}

// valueLines renders a JSON value as escaped, indented lines with sorted
// keys, at most maxValueLines of them.
func valueLines(raw json.RawMessage) []string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return []string{bounded(string(raw)) + ` \[not JSON]`}
	}
	var lines []string
	total := 0
	add := func(s string) {
		total++
		if len(lines) < maxValueLines {
			lines = append(lines, s)
		}
	}
	var walk func(v any, depth int, lead, trail string)
	walk = func(v any, depth int, lead, trail string) {
		ind := strings.Repeat("  ", depth)
		switch x := v.(type) {
		case map[string]any:
			if len(x) == 0 {
				add(ind + lead + "{}" + trail)
				return
			}
			keys := slices.Sorted(maps.Keys(x))
			add(ind + lead + "{")
			for i, k := range keys {
				t := ","
				if i == len(keys)-1 {
					t = ""
				}
				walk(x[k], depth+1, quoted(k)+": ", t)
			}
			add(ind + "}" + trail)
		case []any:
			if len(x) == 0 {
				add(ind + lead + "[]" + trail)
				return
			}
			add(ind + lead + "[")
			for i, e := range x {
				t := ","
				if i == len(x)-1 {
					t = ""
				}
				walk(e, depth+1, "", t)
			}
			add(ind + "]" + trail)
		default:
			add(ind + lead + scalar(x) + trail)
		}
	}
	walk(v, 0, "", "")
	if total > len(lines) {
		lines = append(lines, fmt.Sprintf(`\[%d more line(s) not shown]`, total-len(lines)))
	}
	return lines
}

func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return quoted(x)
	case json.Number:
		return bounded(string(x))
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return "null"
	}
	return bounded(fmt.Sprint(v))
}

// writePageMeta ends a page printed as JSON Lines (runs, events) with its
// counts on a {"meta":true,...} line; truncated says rows remain past it.
func writePageMeta(p *printer, total, returned, limit, offset int) {
	writeJSON(p, struct {
		Meta      bool `json:"meta"`
		Truncated bool `json:"truncated"`
		Total     int  `json:"total"`
		Returned  int  `json:"returned"`
		Limit     int  `json:"limit"`
		Offset    int  `json:"offset"`
	}{true, total-offset-returned > 0, total, returned, limit, offset})
}
