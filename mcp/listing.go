package mcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/trace"
)

// liveTool is one tool as the server sent it in tools/list, read from the
// raw bytes with keys matched exactly, as the SDK matches them.
type liveTool struct {
	Name        string
	Description string
	// InputSchema and OutputSchema are canonical (agentrt.CanonicalJSON:
	// sorted keys, numbers as written); OutputSchema is nil when absent.
	InputSchema  json.RawMessage
	OutputSchema json.RawMessage
	Annotations  *Annotations
	TaskSupport  string

	SchemaHash       string
	DescriptionHash  string
	OutputSchemaHash string

	// problem, when set, refuses the tool: its entry could not be read
	// soundly, or the SDK excluded it.
	problem string
}

// listing is one whole tools/list, every page.
type listing struct {
	tools  []*liveTool
	byName map[string]*liveTool
}

// Annotations are the hints a server gave about a tool. A nil field means
// the server did not say.
type Annotations struct {
	ReadOnlyHint    *bool `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool `json:"openWorldHint,omitempty"`
}

func listingErr(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrListing}, args...)...)
}

// list reads every page of the server's tools, bounded in pages, tools,
// cursors and names. Each page's raw result is taken from the tap; the SDK's
// decoded page is used only to check that the two agree.
func (c *Connection) list(ctx context.Context) (*listing, error) {
	l := &listing{byName: map[string]*liveTool{}}
	cursors := map[string]bool{}
	cursor := ""
	for page := 0; ; page++ {
		if page == MaxToolPages {
			return nil, listingErr("more than %d pages", MaxToolPages)
		}
		s := &slot{}
		res, err := c.cs.ListTools(withSlot(ctx, s), &sdk.ListToolsParams{Cursor: cursor})
		c.tap.drop(s)
		if err != nil {
			return nil, err
		}
		raw := s.result()
		if raw == nil {
			return nil, listingErr("the raw result of page %d was not captured", page+1)
		}
		tools, next, err := parsePage(raw)
		if err != nil {
			return nil, listingErr("page %d: %v", page+1, err)
		}
		if next != res.NextCursor {
			return nil, listingErr("page %d: the raw nextCursor and the SDK's disagree", page+1)
		}
		rawByName := map[string]*liveTool{}
		for _, t := range tools {
			if _, dup := l.byName[t.Name]; dup {
				return nil, listingErr("tool %q is listed twice", trace.Sanitize(t.Name))
			}
			if len(l.tools) == MaxTools {
				return nil, listingErr("more than %d tools", MaxTools)
			}
			l.byName[t.Name] = t
			l.tools = append(l.tools, t)
			rawByName[t.Name] = t
		}
		// Every tool the SDK kept must be the raw one of that name, or the
		// pin would cover one list while calls go to another.
		kept := map[string]bool{}
		for _, st := range res.Tools {
			rt := rawByName[st.Name]
			if rt == nil || rt.Description != st.Description {
				return nil, listingErr("page %d: the SDK read tool %q that the raw listing does not hold", page+1, trace.Sanitize(st.Name))
			}
			kept[st.Name] = true
		}
		for _, t := range tools {
			if !kept[t.Name] && t.problem == "" {
				t.problem = "the SDK client excluded it from the listing"
			}
		}
		if next == "" {
			return l, nil
		}
		if cursors[next] {
			return nil, listingErr("page %d repeats a cursor", page+1)
		}
		cursors[next] = true
		cursor = next
	}
}

// parsePage reads one raw tools/list result. Keys are matched exactly, as
// the SDK's decoder matches them (a "Tools" key is not "tools"), and a page
// with a repeated key, invalid UTF-8 or an out-of-bound number is refused
// whole, so no reader can see a different page than this one.
func parsePage(raw json.RawMessage) ([]*liveTool, string, error) {
	if err := agentrt.CheckJSON(raw); err != nil {
		return nil, "", err
	}
	var page map[string]json.RawMessage
	if err := json.Unmarshal(raw, &page); err != nil {
		return nil, "", fmt.Errorf("the result is not an object")
	}
	var next string
	if v, ok := page["nextCursor"]; ok && !isNull(v) {
		if err := json.Unmarshal(v, &next); err != nil {
			return nil, "", fmt.Errorf("nextCursor is not a string")
		}
	}
	var entries []json.RawMessage
	if v, ok := page["tools"]; ok && !isNull(v) {
		if err := json.Unmarshal(v, &entries); err != nil {
			return nil, "", fmt.Errorf("tools is not an array")
		}
	}
	var out []*liveTool
	for _, e := range entries {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(e, &fields); err != nil {
			continue // the SDK keeps no such entry either (a null, say)
		}
		var name string
		if err := json.Unmarshal(fields["name"], &name); err != nil {
			return nil, "", fmt.Errorf("a tool's name is not a string")
		}
		out = append(out, readTool(name, fields))
	}
	return out, next, nil
}

func isNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }

// readTool reads one entry's fields. A field that cannot be read marks the
// tool, so only it is refused.
func readTool(name string, f map[string]json.RawMessage) *liveTool {
	t := &liveTool{Name: name}
	bad := func(s string) *liveTool {
		if t.problem == "" {
			t.problem = s
		}
		return t
	}
	if v, ok := f["description"]; ok && !isNull(v) {
		if err := json.Unmarshal(v, &t.Description); err != nil {
			return bad("its description is not a string")
		}
	}
	t.DescriptionHash = descriptionHash(t.Description)
	in, ok := f["inputSchema"]
	if !ok || isNull(in) {
		return bad("it has no input schema")
	}
	c, err := agentrt.CanonicalJSON(in)
	if err != nil {
		return bad("its input schema is refused: " + err.Error())
	}
	t.InputSchema, t.SchemaHash = c, hashHex(c)
	if out, ok := f["outputSchema"]; ok && !isNull(out) {
		c, err := agentrt.CanonicalJSON(out)
		if err != nil {
			return bad("its output schema is refused: " + err.Error())
		}
		t.OutputSchema, t.OutputSchemaHash = c, hashHex(c)
	}
	if a, ok := f["annotations"]; ok && !isNull(a) {
		ann, err := readAnnotations(a)
		if err != nil {
			return bad("its annotations cannot be read: " + err.Error())
		}
		t.Annotations = ann
	}
	if e, ok := f["execution"]; ok && !isNull(e) {
		var ex map[string]json.RawMessage
		if err := json.Unmarshal(e, &ex); err != nil {
			return bad("its execution field is not an object")
		}
		if ts, ok := ex["taskSupport"]; ok && !isNull(ts) {
			if err := json.Unmarshal(ts, &t.TaskSupport); err != nil {
				return bad("its execution.taskSupport is not a string")
			}
		}
	}
	return t
}

func hashHex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// descriptionHash is the SHA-256 of the description's JSON string encoding.
func descriptionHash(d string) string {
	b, _ := json.Marshal(d)
	return hashHex(b)
}

// readAnnotations reads the hints with keys matched exactly (encoding/json
// would match "ReadOnlyHint" to readOnlyHint, the SDK does not).
func readAnnotations(raw json.RawMessage) (*Annotations, error) {
	var f map[string]json.RawMessage
	if err := json.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("not an object")
	}
	a := &Annotations{}
	for key, dst := range map[string]**bool{
		"readOnlyHint": &a.ReadOnlyHint, "destructiveHint": &a.DestructiveHint,
		"idempotentHint": &a.IdempotentHint, "openWorldHint": &a.OpenWorldHint,
	} {
		v, ok := f[key]
		if !ok || isNull(v) {
			continue
		}
		var b bool
		if err := json.Unmarshal(v, &b); err != nil {
			return nil, fmt.Errorf("%s is not a boolean", key)
		}
		*dst = &b
	}
	return a, nil
}
