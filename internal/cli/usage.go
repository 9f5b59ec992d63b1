package cli

import (
	"fmt"
	"io"
	"strings"
)

const usageHead = `agentrt inspects and decides runs in an agentrt runs database.

usage: agentrt [-db PATH] [-json] <command> [arguments]

  -db PATH   the runs database (default $AGENTRT_DB). agentrt opens an
             existing database only: it never creates or migrates one, and
             runs, show, events, follow and verify open it read-only.
  -json      write JSON Lines instead of text.

Both may also follow the command. Text output escapes everything a model,
a policy or a server chose, so it cannot move the cursor, clear the screen
or reorder what you read.

commands:
`

const usageTail = `
Deciding: approve and reject print the waiting request first, every field
with its size, long strings by head and tail, ending with a line agentrt
writes itself. They ask you to type yes at a terminal, or take -approval ID
or -yes; they never guess from a pipe. The decision binds to the hash of
what was printed: if the approval changed since, nothing is decided. To
bind it to what you read earlier with show, pass -hash HASH as show printed
it: if the stored approval no longer has that hash, agentrt exits 1 and
decides nothing. With -json they print the approval being decided as one
line before deciding, then what was decided.

Run ids: wherever a command takes a run id, the start of one will do when
only one run's id begins with it, such as the short id events prints. An
exact id always wins.

Identity: -by is a label, recorded exactly as given. agentrt has no users
and checks no one: whoever can write the database can approve anything in
it, so keep it owner-only (agentrt refuses one others can write).

Resuming: agentrt records decisions and runs nothing. After an approval
the run continues in whatever drives it: an agentrt worker claims it by
itself, agentrt-proxy runs the call when it is still held or when the
host repeats it, and any other program continues it when it calls
driver.Resume(ctx, runID). agentrt resume resumes only runs that agentrt
demo started.

Exit status: 0 success; 1 failure (a refused database, a broken chain, a
kept head not reached, a declined or refused decision); 2 usage.
`

func (e *env) usage(w io.Writer) {
	var b strings.Builder
	b.WriteString(usageHead)
	for _, c := range commands {
		fmt.Fprintf(&b, "  %-8s %s\n", c.name, c.summary)
	}
	b.WriteString(usageTail)
	io.WriteString(w, b.String())
}

// commandHelp is the longer help of each command, after its usage line.
var commandHelp = map[string]string{
	"runs": `Lists one page of runs, newest first: RUN, STATUS, REASON, STEPS, CREATED,
APPROVAL (the pending approval, when there is exactly one) and GOAL; with
-json, one JSON object a run and a final {"meta":true,...} line.
  -limit N   runs to list, 1 to 1000 (default 100)
  -offset N  newest runs to skip (default 0)`,
	"show": `Shows a run: its own fields, every pending approval as the block approve
prints, then one page of its steps and approvals.
  -limit N   steps and approvals to show, 1 to 1000 (default 500)
  -offset N  steps and approvals to skip (default 0)`,
	"events": `Prints a run's events, one line each; with -json, one JSON object each and a
final {"meta":true,...} line.
  -limit N   events to print, 1 to 1000 (default 500)
  -offset N  events to skip (default 0)`,
	"follow": `Prints events as they commit, every run's in commit order, one line each as
events prints them, or with -json one JSON object each. It opens the
database read-only and never writes to it. Ctrl-C stops it cleanly.
  -run ID       print only this run's events
  -cursor FILE  keep the seq of the last event printed in FILE (owner-only,
                replaced atomically) and resume after it: nothing is
                printed twice across clean stops, and after a crash at
                most one page (500 events) is printed again
  -once         stop once every committed event is printed
On a terminal it says when it has caught up and, on stopping, the seq and
chain hash it stopped at, which agentrt verify -head can check later.`,
	"approve": `Prints the approval the run is waiting on, then grants it. agentrt runs
nothing itself: what drives the run carries on with the call (see
Resuming in 'agentrt help').
` + decideFlagsHelp("approve") + `
Without -approval or -yes, agentrt asks you to type yes, and only at a
terminal.`,
	"reject": `Prints the approval the run is waiting on, then refuses it, which cancels
the run.
` + decideFlagsHelp("decide"),
	"cancel": `Cancels a run that has not ended; a running one stops at its next write.
  -by WHO     a label recorded exactly as given (default $USER, else
              your account's name)
  -note TEXT  a note recorded with the cancellation`,
	"verify": `Checks the event hash chain and prints the head it checked. Exits 1 at the
first event that does not chain.
  -from SEQ       the first event to check (default the first)
  -to SEQ         the last event to check; it must exist (default the head)
  -head SEQ:HASH  a head printed by an earlier verify and kept where the
                  database's writers cannot reach: fails unless the chain
                  still reaches that seq with that hash, which catches
                  events cut from the end
  -decisions      also re-verify every signed decision from the stored
                  public keys
  -pinned FILE    with -decisions, every signing key must be in this
                  owner-only pinned keys file (agentrt approvers list -pin)
  -head SIZE:ROOT or a checkpoint file (text or signed note) kept
                  elsewhere: fails unless the log extends it
  -key PUB        every checkpoint must be signed by this public key (the
                  key agentrt checkpoint -new-key printed, or a file)
  -stale DUR      fail when an event older than this is not folded into a
                  checkpoint (default 1m; checked once a checkpoint exists)
It also checks the checkpoints: each consistent with the one before, every
folded event included in the latest.
Whoever can write the database can rewrite the whole chain; only a head
kept elsewhere shows the record unaltered up to it.`,
	"checkpoint": `Folds every committed event not yet folded into checkpoints (at most 256
events each) and prints the latest, as verify -head takes it. Servers and
workers fold on their own; this folds now.
  -key FILE      sign the checkpoints with the private key in this
                 owner-only file
  -new-key FILE  write a new private signing key to FILE (owner-only, never
                 replaced) and print its public key; opens no database
  -name NAME     with -new-key, the key's name, as verifiers see it`,
	"receipt": `Writes a run's events, each with a proof that the latest checkpoint
includes it, to a file anyone can check with verify-receipt and no database.
Every event of the run must be folded (agentrt checkpoint).
  -o FILE  the file to write (required; never replaced)`,
	"verify-receipt": `Checks a receipt with no database: its checkpoint must be signed by the
key, or be the kept checkpoint, and every event in it must be included.
  -key PUB   the log's public key, or a file holding it
  -head SIZE:ROOT or a checkpoint file kept elsewhere`,
	"erase": `Removes the content of a run that has ended (goal, arguments, results,
payloads) and records a run.erased event; the chain still verifies.
  -by WHO       who erases, recorded in the event (default $USER, else
                your account's name)
  -reason TEXT  why, recorded in the event (required)
  -vacuum       then rewrite the database files (SQLite VACUUM, Postgres
                VACUUM FULL) so no freed copy of the content stays`,
	"retain": `Erases, as erase does, every run that ended before a cut, oldest first,
in bounded batches.
  -finished-before D|T  runs that ended before this: a duration ago (720h)
                        or an RFC 3339 time (required)
  -status S,...         only runs ending in these statuses (COMPLETED,
                        FAILED, CANCELLED)
  -dry-run              list the runs that would be erased; change nothing
  -by WHO               who erases (default $USER, else your account's name)
  -reason TEXT          why, recorded in each run.erased (default retention)
  -batch N              runs erased per transaction`,
	"version": `Prints agentrt's version and the database schema version it opens.`,
	"demo": `Runs an agent against a small workspace in a new temporary directory, with
no network and no key: a scripted model server on the loopback interface
answers through the OpenAI adapter. Reads run; a write pauses for your
approval, and demo prints the commands to approve and resume it.
  -db PATH        create the database here instead (it must not exist)
  -auto-approve   play the operator too: approve the write as it was shown,
                  resume, and print the trail and verify's result
  -agent KIND     model (default): render.Agent through providers/openai
                  and the loopback server; scripted: the same decisions
                  from a scripted agent, no model at all`,
	"resume": `Resumes a run that agentrt demo started, with the demo's agent, tools and
policy, against its workspace. Any other run belongs to the program that
started it, and agentrt refuses it.
  -workspace DIR  the demo's workspace, as demo printed it
  -agent KIND     model (default) or scripted, as for demo`,
}

func (e *env) commandUsage(w io.Writer, c *command) {
	fmt.Fprintf(w, "usage: agentrt [-db PATH] [-json] %s %s\n\n%s\n", c.name, c.usage, commandHelp[c.name])
}

// decideFlagsHelp is the flags approve and reject share; whoever can write
// the database can do what verb says.
func decideFlagsHelp(verb string) string {
	return `  -approval ID  the approval to decide; naming it is the confirmation
  -yes          decide the run's only pending approval without asking
  -hash HASH    decide only if the approval still has this hash, the one
                show printed; otherwise exit 1 and decide nothing
  -key FILE     sign the decision with this enrolled ed25519 private key
                file; the decision is then recorded as its approver's
  -by WHO       a label for who decided, recorded exactly as given
                (default $USER, else your account's name); it is not
                checked: whoever can write the database can ` + verb + `
  -note TEXT    a note recorded with the decision`
}
