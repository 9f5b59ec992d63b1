package view_test

import (
	"fmt"
	"strings"

	"github.com/agentrt/agentrt/view"
)

// A string over MaxFieldBytes keeps its head and tail and says how much
// was left out.
func ExampleBoundString() {
	s := "BEGIN" + strings.Repeat(".", 5000) + "END"
	b := view.BoundString(s)
	fmt.Println(len(s), len(b))
	fmt.Println(b[:5], b[view.HeadBytes:view.HeadBytes+len("…[4008 bytes omitted]…")], b[len(b)-3:])
	// Output:
	// 5008 1026
	// BEGIN …[4008 bytes omitted]… END
}
