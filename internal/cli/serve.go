package cli

// The web console lives in agentrt-console, built from the console module,
// so that the core (and this binary) never links the WebAuthn library.
// agentrt serve runs it as agentrt policy runs agentrt-policy.

const (
	consoleProgram = "agentrt-console"
	consolePackage = "github.com/agentrt/agentrt/console/cmd/agentrt-console"
)

var serveCommand = &command{
	name:    "serve",
	summary: "serve the web operator console (runs agentrt-console)",
	usage:   "[-addr HOST:PORT] [-origin URL] [-tls-cert FILE -tls-key FILE]",
	run:     runServe,
}

// findConsoleProgram is where agentrt-console is; a variable for tests.
var findConsoleProgram = func() (string, error) { return findCompanion(consoleProgram) }

func init() {
	commandHelp["serve"] = `Runs agentrt-console, found next to agentrt or on PATH, on the database:
the inbox of waiting approvals, runs and their timelines, the chain, and
approve, reject and cancel with a passkey.
  -addr HOST:PORT   where to listen (default 127.0.0.1:7380); an address
                    that is not loopback needs -tls-cert and -tls-key
  -origin URL       the console's origin as the browser names it
  -tls-cert FILE -tls-key FILE
                    serve HTTPS with this certificate and key
  -checkpoint-key FILE
                    sign the checkpoints the console folds (default unsigned)
  -checkpoint-interval DUR
                    how often it folds committed events, or off (default 250ms)
Enroll approvers with 'agentrt approvers invite NAME'. Run
'agentrt-console -help' for every flag. Build it from a checkout with 'make build', or install it with
  go install ` + consolePackage + `@VERSION`
}

func runServe(e *env, g *global, c *command, args []string) int {
	if g.json {
		return e.usageError(c, "agentrt serve has no -json output")
	}
	var full []string
	if g.db != "" {
		full = append(full, "-db", g.db)
	}
	return e.runCompanion(findConsoleProgram, consoleProgram, consolePackage, append(full, args...))
}
