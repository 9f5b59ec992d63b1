package agentrt

// VerdictOutcome is what the runtime made of a proposed decision.
type VerdictOutcome string

const (
	// VerdictAllowed: the request may be executed (Execute runs it).
	VerdictAllowed VerdictOutcome = "allowed"
	// VerdictDenied: an invalid decision or a policy deny; the step ended
	// with a failure observation and the session goes on.
	VerdictDenied VerdictOutcome = "denied"
	// VerdictPending: the run waits for an approval; the session is over.
	VerdictPending VerdictOutcome = "pending"
	// VerdictEnded: the run ended; the session is over.
	VerdictEnded VerdictOutcome = "ended"
)

// Verdict is the runtime's answer to a proposal. Request, Observation and
// Approval are copies: changing them changes nothing about what runs.
type Verdict struct {
	Outcome     VerdictOutcome
	Request     *ToolRequest
	Observation *Observation
	Approval    *Approval
	Run         Run
}
