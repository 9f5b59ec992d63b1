package sqlite_test

import (
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/sqlstore"
)

// Every Gate.Call looks its request up by key before it proposes: the
// lookup searches the request-key index, and no plan of it scans the
// steps table (a scan made each call cost time in proportion to every step
// ever recorded).
func TestStepsByRequestKey_SearchesTheIndexInsteadOfScanningSteps(t *testing.T) {
	s, p := openTemp(t)
	defer s.Close()
	rows, err := raw(t, p).Query("EXPLAIN QUERY PLAN "+sqlstore.RequestKeyQuery, strings.Repeat("a", 64), 10)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	all := strings.Join(plan, "\n")
	if !strings.Contains(all, "USING INDEX steps_request_key") || strings.Contains(all, "SCAN steps") {
		t.Fatalf("the request-key lookup does not search its index; plan:\n%s", all)
	}
}
