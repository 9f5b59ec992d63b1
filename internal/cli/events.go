package cli

import (
	"encoding/json"
	"errors"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/eventlog"
	"github.com/agentrt/agentrt/trace"
	"github.com/agentrt/agentrt/view"
)

var eventsCommand = fromKit(&kitCmd{
	Name:    "events",
	Summary: "print a run's events, its audit trail",
	Usage:   "<run> [-limit N] [-offset N]",
	Bind:    onPage(defaultDetail, "how many events to print", "how many of the run's first events to skip", runEvents),
})

func runEvents(x *inv, rp runPage) int {
	st, name, runID, limit, offset := rp.st, rp.name, rp.runID, rp.limit, rp.offset

	if _, err := st.GetRunCapped(background(), runID); errors.Is(err, agentrt.ErrNotFound) {
		return x.fail("no run %s in %s", runID, name)
	} else if err != nil {
		return x.fail("reading run %s: %v", runID, err)
	}
	evs, total, err := st.ListEventsPage(background(), runID, limit, offset)
	if err != nil {
		return x.fail("reading the events of run %s: %v", runID, err)
	}
	p := &printer{w: x.stdout}
	more := total - offset - len(evs)
	if x.g.json {
		obs, werr := eventlog.JSONLWithErr(x.stdout)
		for _, ev := range evs {
			obs(ev)
		}
		if err := werr(); err != nil {
			p.err = err
		}
		writePageMeta(p, total, len(evs), limit, offset)
		return x.done(p, ExitOK)
	}
	if err := writeTrail(x.env, evs); err != nil {
		p.err = err
	}
	if len(evs) == 0 {
		p.printf("no events from offset %d; the run has %d\n", offset, total)
	}
	if more > 0 {
		p.printf("... %d more event(s) of %d; rerun with -offset %d\n", more, total, offset+len(evs))
	}
	return x.done(p, ExitOK)
}

// writeTrail prints events one line each with eventlog.Writer, every string in
// a payload bounded first and the payload cut at eventTextBytes, so one
// line stays readable.
func writeTrail(e *env, evs []agentrt.Event) error {
	obs, werr := eventlog.WriterWithErr(e.stdout)
	for _, ev := range evs {
		n := len(ev.Payload)
		ev.Payload = view.BoundRaw(ev.Payload)
		if len(ev.Payload) > eventTextBytes {
			// Many short strings: keep the line to a size a person reads.
			ev.Payload, _ = json.Marshal(struct {
				Truncated bool   `json:"truncated"`
				Bytes     int    `json:"bytes"`
				Head      string `json:"head"`
			}{true, n, trace.Truncate(string(ev.Payload), eventTextBytes/2)})
		}
		obs(ev)
	}
	return werr()
}
