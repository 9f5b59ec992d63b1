package sqlstore

import (
	"encoding/json"
	"fmt"

	agentrt "github.com/agentrt/agentrt"
)

// A step's JSON column over MaxPageText is not read by a page. Beside it the
// writer stores, in the same statement, the fields a page prints of it
// (decision_fields, policy_fields, observation_fields): a JSON array in the
// order jsonFields extracts them, each string capped at pageFieldBytes. They
// sit before the JSON columns, so a page reads them without walking a big
// value's overflow pages, and without SQLite parsing the value. A column
// within MaxPageText has none (NULL): a page reads it whole. The fields are
// for display only; every full read decodes the JSON.

const (
	// pageFieldBytes is the most one printed field holds: a longer string
	// is its first pageFieldHead bytes, cut on a rune boundary, and a
	// marker with its full size.
	pageFieldBytes = 200
	pageFieldHead  = 160
	// maxFieldsBytes is the most a page reads of a printed-fields column.
	// The writer stays well under it; a larger one, which only a crafted
	// file holds, is ignored and the page reads the fields from the JSON.
	maxFieldsBytes = 4096
)

// What a page prints of a JSON column it does not read whole: enough for the
// kind, the tool, and the summary a step list shows.
var (
	decisionFields    = []string{"kind", "tool", "reason", "message"}
	policyFields      = []string{"outcome", "reason", "kind"}
	observationFields = []string{"kind", "summary", "content_hash"}
)

// pageField caps one printed field.
func pageField(s string) string {
	if len(s) <= pageFieldBytes {
		return s
	}
	return capText([]byte(s[:pageFieldHead]), int64(len(s)))
}

// printedFields is the value of a printed-fields column for a JSON column
// written as encoded: nil (NULL) when a page reads the column whole.
func printedFields(encoded string, values ...string) any {
	if len(encoded) <= agentrt.MaxPageText {
		return nil
	}
	for i, v := range values {
		values[i] = pageField(v)
	}
	b, err := json.Marshal(values)
	if err != nil {
		return nil
	}
	return string(b)
}

func decisionFieldsOf(d *agentrt.Decision, encoded string) any {
	if d == nil {
		return nil
	}
	return printedFields(encoded, string(d.Kind), d.Tool, d.Reason, d.Message)
}

func policyFieldsOf(p *agentrt.PolicyDecision, encoded string) any {
	if p == nil {
		return nil
	}
	return printedFields(encoded, string(p.Outcome), p.Reason, p.Kind)
}

func observationFieldsOf(o *agentrt.Observation, encoded string) any {
	if o == nil {
		return nil
	}
	return printedFields(encoded, string(o.Kind), o.Summary, o.ContentHash)
}

// pageFields selects what a page prints of a JSON column over MaxPageText:
// its printed-fields column when the writer recorded one that is small and
// valid JSON, and otherwise (a row this build did not write) the fields
// extracted from the JSON by jsonFields. COALESCE evaluates its second
// argument only when the first is NULL, so SQLite parses a big value only
// for a row with no usable printed fields.
func pageFields(fieldsColumn, jsonColumn string, fields ...string) string {
	return fmt.Sprintf("COALESCE(CASE WHEN octet_length(%[2]s) > %[3]d AND octet_length(%[2]s) <= %[4]d AND typeof(%[1]s) = 'text' AND octet_length(%[1]s) <= %[5]d AND json_valid(%[1]s) THEN %[1]s END, %[6]s)",
		fieldsColumn, jsonColumn, agentrt.MaxPageText, agentrt.MaxStoredValue, maxFieldsBytes, jsonFields(jsonColumn, fields...))
}
