package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/mcp"
	"github.com/agentrt/agentrt/proxy"
	"github.com/agentrt/agentrt/trace"
)

// A verdict is the operator's answer about one suggested rule.
type verdict struct {
	drop  bool
	class agentrt.SideEffect
	deny  []string
}

// listFlag collects a repeated flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// review turns suggestions into the operator's rules: one tool at a time
// from stdin (a terminal or a pipe: lines are read either way), or in one
// step with -accept-read-only, -accept and -drop. What a server chose is
// escaped before it is shown. Nothing is written until every answer is
// in; a rewrite the proxy would refuse is not written.
func review(_ context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var acceptRO bool
	var accepts, drops listFlag
	path, code, ok := flags("review", args, stderr, func(fs *flag.FlagSet) {
		fs.BoolVar(&acceptRO, "accept-read-only", false, "accept every read_only suggestion, and only those")
		fs.Var(&accepts, "accept", "SERVER.TOOL or SERVER.TOOL=CLASS: accept one suggestion, or classify it as CLASS (repeatable)")
		fs.Var(&drops, "drop", "SERVER.TOOL: drop one tool, which is then never offered (repeatable)")
	})
	if !ok {
		return code
	}
	cfg, code := loadConfig("review", path, stderr)
	if cfg == nil {
		return code
	}
	printClasses(stdout, cfg)
	items := cfg.Suggested()
	if len(items) == 0 {
		fmt.Fprintf(stdout, "no suggestions left in %s; every rule is the operator's\n", trace.Sanitize(cfg.Path))
		return ExitOK
	}
	pins := map[string]*mcp.Manifest{}
	for _, s := range cfg.Servers {
		m, err := mcp.ReadManifest(s.Manifest)
		if err != nil {
			return fail(stderr, "review", fmt.Errorf("server %s: %w (run `agentrt-proxy pin`)", s.Name, err))
		}
		pins[s.Name] = m
	}
	pinned := func(it proxy.SuggestedTool) mcp.PinnedTool { return pins[it.Server].Tools[it.Tool] }
	verdicts := map[proxy.SuggestedTool]verdict{}

	interactive := !acceptRO && len(accepts) == 0 && len(drops) == 0
	if interactive {
		verdicts = ask(items, pinned, func(it proxy.SuggestedTool, c agentrt.SideEffect) string {
			return outcomeText(suggestedOutcome(cfg, it, c))
		}, stdin, stdout)
	} else {
		find := func(flagName, spec string) (proxy.SuggestedTool, bool) {
			for _, it := range items {
				if it.Server+"."+it.Tool == spec {
					return it, true
				}
			}
			fmt.Fprintf(stderr, "agentrt-proxy review: -%s %q names no suggestion (SERVER.TOOL, one of those `agentrt-proxy review` lists)\n", flagName, trace.Sanitize(spec))
			return proxy.SuggestedTool{}, false
		}
		if acceptRO {
			for _, it := range items {
				if it.Class == agentrt.ReadOnly {
					verdicts[it] = verdict{class: it.Class}
				}
			}
		}
		for _, a := range accepts {
			spec, class, named := strings.Cut(a, "=")
			it, ok := find("accept", spec)
			if !ok {
				return ExitUsage
			}
			v := verdict{class: it.Class}
			if named {
				if v.class = agentrt.SideEffect(class); !v.class.Valid() {
					fmt.Fprintf(stderr, "agentrt-proxy review: -accept %q: %q is not read_only, local_mutation, remote_mutation or destructive\n", trace.Sanitize(a), trace.Sanitize(class))
					return ExitUsage
				}
			}
			verdicts[it] = v
		}
		for _, d := range drops {
			it, ok := find("drop", d)
			if !ok {
				return ExitUsage
			}
			verdicts[it] = verdict{drop: true}
		}
	}
	if len(verdicts) == 0 {
		fmt.Fprintf(stdout, "nothing decided; %d suggestion(s) left in %s, and their tools are not offered\n", len(items), trace.Sanitize(cfg.Path))
		return ExitOK
	}

	doc, err := readConfigDoc(cfg.Path)
	if err != nil {
		return fail(stderr, "review", err)
	}
	var accepted, dropped, left []string
	emptied := map[string]bool{}
	for _, it := range items {
		v, decided := verdicts[it]
		if !decided {
			left = append(left, it.String())
			continue
		}
		rules := rulesOf(doc, it.Server)
		if rules == nil {
			return fail(stderr, "review", fmt.Errorf("server %s has no rules object in %s", it.Server, cfg.Path))
		}
		if v.drop {
			delete(rules, it.Tool)
			dropped = append(dropped, it.String())
			if len(rules) == 0 {
				emptied[it.Server] = true
			}
			continue
		}
		rule, _ := rules[it.Tool].(map[string]any)
		if rule == nil {
			rule = map[string]any{}
			rules[it.Tool] = rule
		}
		delete(rule, "suggestion")
		rule["side_effect"] = string(v.class)
		note := string(v.class)
		if dispute := mcp.HintDispute(v.class, pinned(it).Annotations); dispute != "" {
			// The operator chose against the server's claim, knowingly:
			// the dispute was shown with the hints.
			rule["allow_hint_mismatch"] = true
			note += ", against the hints"
		}
		if len(v.deny) > 0 {
			var deny []any
			if old, ok := rule["deny"].([]any); ok {
				deny = old
			}
			for _, p := range v.deny {
				deny = append(deny, p)
			}
			rule["deny"] = deny
			note += ", denying " + strings.Join(v.deny, ", ")
		}
		accepted = append(accepted, it.String()+" ("+note+"): "+outcomeText(suggestedOutcome(cfg, it, v.class)))
	}
	if len(emptied) > 0 {
		var keep []any
		for _, s := range doc.servers() {
			if name, _ := s["name"].(string); emptied[name] {
				fmt.Fprintf(stdout, "server %s has no tools left; removed from the configuration\n", name)
				continue
			}
			keep = append(keep, s)
		}
		if len(keep) == 0 {
			return fail(stderr, "review", fmt.Errorf("every tool was dropped; nothing written (a configuration needs one server)"))
		}
		doc["servers"] = keep
	}
	if err := doc.write(cfg.Path); err != nil {
		return fail(stderr, "review", err)
	}
	onlyRO := acceptRO && len(accepts) == 0 && len(drops) == 0
	printReviewed(stdout, cfg.Path, onlyRO, accepted, dropped, left)
	return ExitOK
}

// printReviewed reports what review wrote: each accepted tool with its
// class and what the policy does with it, the dropped ones, the rest.
func printReviewed(stdout io.Writer, path string, onlyRO bool, accepted, dropped, left []string) {
	if onlyRO {
		fmt.Fprintf(stdout, "accepted the %d read_only suggestion(s), and only those:\n", len(accepted))
	} else {
		fmt.Fprintf(stdout, "accepted %d suggestion(s):\n", len(accepted))
	}
	for _, a := range accepted {
		fmt.Fprintf(stdout, "  %s\n", a)
	}
	if len(dropped) > 0 {
		fmt.Fprintf(stdout, "dropped %d tool(s), never offered: %s\n", len(dropped), strings.Join(dropped, ", "))
	}
	if len(left) > 0 {
		fmt.Fprintf(stdout, "%d suggestion(s) left, not offered until reviewed: %s\n", len(left), strings.Join(left, ", "))
	}
	fmt.Fprintf(stdout, "wrote %s; next: agentrt-proxy check -config %s\n", trace.Sanitize(path), quoteArg(path))
}

// suggestedOutcome is what the policy will do with a call to a suggested
// tool once it is classified as class: the rule's own outcome when it
// sets one, else the class's.
func suggestedOutcome(cfg *proxy.Config, it proxy.SuggestedTool, class agentrt.SideEffect) agentrt.PolicyOutcome {
	if cfg.PolicyFile == "" {
		for _, s := range cfg.Servers {
			if r := s.Rules[it.Tool]; s.Name == it.Server && r.Outcome != "" {
				return r.Outcome
			}
		}
	}
	return cfg.ClassOutcome(class)
}

// rulesOf is the rules object of the named server in doc, or nil.
func rulesOf(doc configDoc, server string) map[string]any {
	for _, s := range doc.servers() {
		if name, _ := s["name"].(string); name == server {
			r, _ := s["rules"].(map[string]any)
			return r
		}
	}
	return nil
}

const reviewHelp = `  a          accept the suggestion
  c CLASS    classify it as CLASS: read_only, local_mutation, remote_mutation or destructive
  d PARAM    deny a parameter (the model may not set it), then answer again
  x          drop the tool: it is never offered
  s          skip: leave the suggestion, and the tool not offered
  q          stop here, keeping the answers given
`

// ask walks the operator through each suggestion, reading one answer a
// line. The end of input stops the walk as q does.
func ask(items []proxy.SuggestedTool, pinned func(proxy.SuggestedTool) mcp.PinnedTool, does func(proxy.SuggestedTool, agentrt.SideEffect) string,
	stdin io.Reader, stdout io.Writer) map[proxy.SuggestedTool]verdict {
	out := map[proxy.SuggestedTool]verdict{}
	in := bufio.NewScanner(stdin)
	fmt.Fprintf(stdout, "%d suggestion(s) to review; answers:\n%s", len(items), reviewHelp)
	for i, it := range items {
		pt := pinned(it)
		fmt.Fprintf(stdout, "\n[%d/%d] server %s, tool %s\n", i+1, len(items), it.Server, trace.Sanitize(it.Tool))
		fmt.Fprintf(stdout, "  description: %s\n", trace.Sanitize(pt.Description))
		fmt.Fprintf(stdout, "  parameters: %s\n", schemaSummary(pt.InputSchema))
		if len(pt.OutputSchema) > 0 {
			fmt.Fprintf(stdout, "  output: %s\n", schemaSummary(pt.OutputSchema))
		}
		fmt.Fprintf(stdout, "  hints: %s\n", hints(pt.Annotations))
		fmt.Fprintf(stdout, "  suggested: %s (%s)\n  under the policy, %s: %s\n", it.Class, trace.Sanitize(it.Reason), it.Class, does(it, it.Class))
		var deny []string
		for {
			fmt.Fprint(stdout, "> ")
			if !in.Scan() {
				fmt.Fprintln(stdout)
				return out
			}
			word, arg, _ := strings.Cut(strings.TrimSpace(in.Text()), " ")
			arg = strings.TrimSpace(arg)
			switch word {
			case "a":
				out[it] = verdict{class: it.Class, deny: deny}
			case "c":
				class := agentrt.SideEffect(arg)
				if !class.Valid() {
					fmt.Fprintln(stdout, "  c needs a class: read_only, local_mutation, remote_mutation or destructive")
					continue
				}
				if d := mcp.HintDispute(class, pt.Annotations); d != "" {
					fmt.Fprintf(stdout, "  note: %s; the rule will allow the mismatch\n", d)
				}
				fmt.Fprintf(stdout, "  under the policy, %s: %s\n", class, does(it, class))
				out[it] = verdict{class: class, deny: deny}
			case "d":
				if !hasParam(pt.InputSchema, arg) {
					fmt.Fprintf(stdout, "  %q is not one of its parameters\n", trace.Sanitize(arg))
					continue
				}
				deny = append(deny, arg)
				fmt.Fprintf(stdout, "  %s will be denied; now a, c CLASS, d PARAM, x, s or q\n", trace.Sanitize(arg))
				continue
			case "x":
				out[it] = verdict{drop: true}
			case "s":
			case "q":
				return out
			default:
				fmt.Fprint(stdout, reviewHelp)
				continue
			}
			break
		}
	}
	return out
}

// schemaSummary lists a schema's top-level properties with their types,
// required ones marked; every name is escaped.
func schemaSummary(raw json.RawMessage) string {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "(unreadable)"
	}
	if len(s.Properties) == 0 {
		return "(none)"
	}
	req := map[string]bool{}
	for _, r := range s.Required {
		req[r] = true
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		typ := "any"
		switch t := s.Properties[n].Type.(type) {
		case string:
			typ = t
		case []any:
			var ts []string
			for _, x := range t {
				ts = append(ts, fmt.Sprint(x))
			}
			typ = strings.Join(ts, "|")
		}
		p := trace.Sanitize(n) + " " + trace.Sanitize(typ)
		if req[n] {
			p += " (required)"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

func hasParam(raw json.RawMessage, name string) bool {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return false
	}
	_, ok := s.Properties[name]
	return ok && name != ""
}
