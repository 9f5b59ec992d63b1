// Command cfclient is the client the MCP conformance suite's client
// scenarios run (TestConformance_ClientScenarios): it puts the real
// agentrt-proxy between a go-sdk host and the scenario's server. Given the
// server's URL, it writes a proxy configuration naming that server (with
// an oauth entry for the auth scenarios), runs `agentrt-proxy login` with
// a scripted browser step when the server uses OAuth, `agentrt-proxy pin`,
// then starts the proxy over stdio and, as the host, lists the tools and
// calls the scenario's tool through it. When the call answers
// UNAVAILABLE and the proxy's stderr asks for a new login (a step-up), it
// does what an operator would: runs login again, and calls again.
//
// Usage (by the suite): cfclient URL, with MCP_CONFORMANCE_SCENARIO,
// MCP_CONFORMANCE_CONTEXT and AGENTRT_PROXY_BIN set.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolCall is one call a scenario's host makes through the proxy: the
// server's tool name and the arguments.
type toolCall struct {
	name string
	args map[string]any
}

// scenarioCalls are the tools each scenario's host calls, in order (none:
// it lists only). cctx is the scenario's context, which names the calls
// for some.
func scenarioCalls(scenario string, cctx map[string]any) []toolCall {
	one := func(name string, args map[string]any) []toolCall {
		if args == nil {
			args = map[string]any{}
		}
		return []toolCall{{name, args}}
	}
	switch {
	case scenario == "tools_call":
		return one("add_numbers", map[string]any{"a": 5, "b": 3})
	case scenario == "elicitation-sep1034-client-defaults":
		return one("test_client_elicitation_defaults", nil)
	case scenario == "sse-retry":
		return one("test_reconnection", nil)
	case scenario == "sep-2322-client-request-state":
		// Each answers input_required (an elicitation) but the unrelated
		// one, which checks no state of another call leaked into it.
		return []toolCall{{"test_mrtr_echo_state", map[string]any{}}, {"test_mrtr_no_state", map[string]any{}},
			{"test_mrtr_unrelated", map[string]any{}}, {"test_mrtr_no_result_type", map[string]any{}}}
	case scenario == "http-standard-headers":
		return []toolCall{{"test_headers", map[string]any{}}, {"my-hyphenated-tool", map[string]any{}}}
	case scenario == "json-schema-2020-12-preservation":
		// The echo's argument is the focal tool's schema as the host got
		// it from the proxy, filled in once the tools are listed.
		return []toolCall{{"json_schema_2020_12_tool", nil}, {"json_schema_echo", nil}}
	case scenario == "http-invalid-tool-headers":
		return one("valid_tool", map[string]any{"region": "us-west1"})
	case scenario == "http-custom-headers":
		var calls []toolCall
		list, _ := cctx["toolCalls"].([]any)
		for _, c := range list {
			m, _ := c.(map[string]any)
			name, _ := m["name"].(string)
			args, _ := m["arguments"].(map[string]any)
			// A host omits an argument it has no value for: the proxy
			// holds arguments to the pinned schema, where null is not a
			// boolean.
			for k, v := range args {
				if v == nil {
					delete(args, k)
				}
			}
			if name != "" {
				calls = append(calls, toolCall{name, args})
			}
		}
		return calls
	case strings.HasPrefix(scenario, "auth/"):
		return one("test-tool", nil)
	}
	return nil
}

// pinOnly names the scenarios whose server offers only a tool the proxy
// refuses (a schema that refers outside itself), so it has nothing to
// serve: the scenario judges the listing, which pin makes.
func pinOnly(scenario string) bool { return scenario == "json-schema-ref-no-deref" }

// elicits names the scenarios whose server asks the host for input
// (elicitation), which the proxy forwards under the server's opt-in.
func elicits(scenario string) bool {
	return scenario == "elicitation-sep1034-client-defaults" || scenario == "sep-2322-client-request-state"
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("cfclient: ")
	if len(os.Args) != 2 {
		log.Fatalf("usage: cfclient URL")
	}
	if err := run(os.Args[1], os.Getenv("MCP_CONFORMANCE_SCENARIO")); err != nil {
		log.Fatal(err)
	}
}

func run(url, scenario string) error {
	bin := os.Getenv("AGENTRT_PROXY_BIN")
	if bin == "" {
		return fmt.Errorf("AGENTRT_PROXY_BIN is not set")
	}
	var cctx map[string]any
	if s := os.Getenv("MCP_CONFORMANCE_CONTEXT"); s != "" {
		if err := json.Unmarshal([]byte(s), &cctx); err != nil {
			return fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %v", err)
		}
	}
	dir, err := os.MkdirTemp("", "cfclient-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	calls := scenarioCalls(scenario, cctx)
	// A scenario without a tool to call (initialize) has a server that
	// offers none: no rule to write.
	rules := map[string]any{}
	for _, c := range calls {
		rules[c.name] = map[string]any{"side_effect": "read_only", "rename": strings.ReplaceAll(c.name, "-", "_")}
	}
	server := map[string]any{"name": "cf", "endpoint": url, "manifest": "cf.manifest.json",
		"connect_timeout": "20s", "default_timeout": "20s", "rules": rules}
	env := os.Environ()
	oauth := strings.HasPrefix(scenario, "auth/")
	if oauth {
		o := map[string]any{}
		id, _ := cctx["client_id"].(string)
		secret, _ := cctx["client_secret"].(string)
		key, _ := cctx["private_key_pem"].(string)
		alg, _ := cctx["signing_algorithm"].(string)
		switch {
		case id != "" && secret != "":
			o["client_id"] = id
			o["client_secret"] = map[string]any{"env": "CF_CLIENT_SECRET"}
			env = append(env, "CF_CLIENT_SECRET="+secret)
		case id != "" && key != "":
			// private_key_jwt: the scenario's key in an owner-only file,
			// which the configuration names.
			if err := os.WriteFile(filepath.Join(dir, "cf.key.pem"), []byte(key), 0o600); err != nil {
				return err
			}
			o["client_id"] = id
			o["private_key"] = map[string]any{"file": "cf.key.pem", "alg": alg}
		default:
			// As the go-sdk's own conformance client: a client ID metadata
			// document, or dynamic registration.
			o["client_metadata_url"] = "https://conformance-test.local/client-metadata.json"
		}
		if strings.HasPrefix(scenario, "auth/client-credentials") {
			o["grant"] = "client_credentials"
		}
		if o["client_secret"] != nil || o["private_key"] != nil {
			// The credentials are registered with the scenario's
			// authorization server: as an operator copies its issuer from
			// the provider, this reads it once from the scenario's
			// metadata and names it.
			issuer, err := scenarioIssuer(url)
			if err != nil {
				return err
			}
			o["issuer"] = issuer
		}
		server["oauth"] = o
	}
	if elicits(scenario) {
		server["forward"] = []string{"elicitation"}
	}
	cfg := map[string]any{"database": "runs.db", "session": "cf", "hold": "0s", "servers": []any{server}}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	config := filepath.Join(dir, "proxy.json")
	if err := os.WriteFile(config, b, 0o600); err != nil {
		return err
	}
	command := func(args ...string) *exec.Cmd {
		c := exec.Command(bin, args...)
		c.Env = env
		return c
	}
	if oauth && server["oauth"].(map[string]any)["grant"] == nil {
		if err := login(command("login", "-config", config, "-timeout", "20s", "cf")); err != nil {
			return err
		}
	}
	out, err := command("pin", "-config", config).CombinedOutput()
	if err != nil && oauth && strings.Contains(string(out), "agentrt-proxy login cf") {
		// The server refused the login pin used (its authorization server
		// changed): the operator logs in again, as the error says.
		if err := login(command("login", "-config", config, "-timeout", "20s", "cf")); err != nil {
			return err
		}
		out, err = command("pin", "-config", config).CombinedOutput()
	}
	if err != nil {
		return fmt.Errorf("agentrt-proxy pin: %v\n%s", err, out)
	}
	if pinOnly(scenario) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	proxy := command("-config", config)
	var stderr syncWriter
	proxy.Stderr = io.MultiWriter(os.Stderr, &stderr)
	opts := &sdk.ClientOptions{}
	if elicits(scenario) {
		content := map[string]any{}
		if scenario == "sep-2322-client-request-state" {
			content["confirmed"] = true
		}
		opts.ElicitationHandler = func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: "accept", Content: content}, nil
		}
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "cfclient-host", Version: "1"}, opts)
	// A host of the 2025-11-25 revision, the scenarios' own: the proxy
	// passes a server's requests on only to a host that can take them
	// while it waits on an answer.
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: proxy}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return fmt.Errorf("connect to agentrt-proxy: %v", err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("list tools: %v", err)
	}
	if scenario == "http-standard-headers" {
		// The scenario also watches the headers of resources and prompts;
		// the proxy forwards them (read_only surfaces).
		if rs, err := cs.ListResources(ctx, nil); err == nil && len(rs.Resources) > 0 {
			_, _ = cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: rs.Resources[0].URI})
		}
		if ps, err := cs.ListPrompts(ctx, nil); err == nil && len(ps.Prompts) > 0 {
			_, _ = cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: ps.Prompts[0].Name})
		}
	}
	if scenario == "json-schema-2020-12-preservation" {
		for _, t := range tools.Tools {
			if t.Name == calls[0].name {
				calls = []toolCall{{calls[1].name, map[string]any{"schema": t.InputSchema}}}
				break
			}
		}
	}
	for _, c := range calls {
		if err := callThrough(ctx, cs, tools, c, oauth, &stderr, command, config); err != nil {
			return err
		}
	}
	return nil
}

// callThrough calls one tool through the proxy as the host, logging in
// again when the proxy's stderr asks for it (a step-up).
func callThrough(ctx context.Context, cs *sdk.ClientSession, tools *sdk.ListToolsResult, c toolCall, oauth bool, stderr *syncWriter,
	command func(...string) *exec.Cmd, config string) error {
	want := strings.ReplaceAll(c.name, "-", "_")
	found := false
	for _, t := range tools.Tools {
		found = found || t.Name == want
	}
	if !found {
		return fmt.Errorf("the proxy does not offer %s", want)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: want, Arguments: c.args})
	if err != nil {
		return fmt.Errorf("call %s: %v", want, err)
	}
	if oauth && res.IsError {
		// stderr arrives through a pipe of its own, maybe after the answer.
		for i := 0; i < 40 && !strings.Contains(stderr.String(), "agentrt-proxy login cf"); i++ {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if oauth && res.IsError && strings.Contains(stderr.String(), "agentrt-proxy login cf") {
		// The operator does what the proxy's stderr says (a step-up: the
		// server asked for more scope), and the host calls again.
		if err := login(command("login", "-config", config, "-timeout", "20s", "cf")); err != nil {
			return err
		}
		if res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: want, Arguments: c.args}); err != nil {
			return fmt.Errorf("call %s after a new login: %v", want, err)
		}
	}
	if res.IsError {
		b, _ := json.Marshal(res.Content)
		return fmt.Errorf("call %s: %s", want, b)
	}
	return nil
}

// login runs agentrt-proxy login and follows the URL it prints as a
// browser would: the scenario's authorization server redirects at once to
// the login's loopback listener.
// scenarioIssuer is the first authorization server the scenario's
// protected-resource metadata names (at the endpoint's path, then the
// root).
func scenarioIssuer(endpoint string) (string, error) {
	e, err := neturl.Parse(endpoint)
	if err != nil {
		return "", err
	}
	origin, path := e.Scheme+"://"+e.Host, e.Path
	for _, u := range []string{origin + "/.well-known/oauth-protected-resource" + path, origin + "/.well-known/oauth-protected-resource"} {
		resp, err := http.Get(u)
		if err != nil {
			continue
		}
		var prm struct {
			AuthorizationServers []string `json:"authorization_servers"`
		}
		err = json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&prm)
		resp.Body.Close()
		if err == nil && len(prm.AuthorizationServers) > 0 {
			return prm.AuthorizationServers[0], nil
		}
	}
	return "", fmt.Errorf("cfclient: no protected-resource metadata names an authorization server for %s", endpoint)
}

func login(c *exec.Cmd) error {
	pr, err := c.StderrPipe()
	if err != nil {
		return err
	}
	if err := c.Start(); err != nil {
		return err
	}
	var tail strings.Builder
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		line := sc.Text()
		tail.WriteString(line + "\n")
		if strings.HasPrefix(line, "http") {
			resp, err := http.Get(line)
			if err != nil {
				tail.WriteString("browser: " + err.Error() + "\n")
				continue
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	if err := c.Wait(); err != nil {
		return fmt.Errorf("agentrt-proxy login: %v\n%s", err, tail.String())
	}
	return nil
}

// syncWriter keeps what the proxy wrote on stderr.
type syncWriter struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
