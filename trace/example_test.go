package trace_test

import (
	"fmt"
	"strings"

	"github.com/agentrt/agentrt/trace"
)

func ExampleSanitize() {
	// A file name that reads backwards after the override, a screen clear,
	// a line break that would forge a second line, and a backslash.
	fmt.Println(trace.Sanitize("invoice_\u202Efdp.exe"))
	fmt.Println(trace.Sanitize("\x1b[2Jdone\nFAKE: approved"))
	fmt.Println(trace.Sanitize(`C:\temp`))
	// Ordinary text in any script, and emoji, are unchanged.
	fmt.Println(trace.Sanitize("Привет, 世界 👋🏽"))
	// A flood of combining marks keeps four.
	fmt.Println(strings.Count(trace.Sanitize("Z"+strings.Repeat("\u0336", 50)), "\u0336"))
	fmt.Println(trace.Truncate("a long tool result", 9))
	// Output:
	// invoice_\u{202E}fdp.exe
	// \u{001B}[2Jdone\nFAKE: approved
	// C:\\temp
	// Привет, 世界 👋🏽
	// 4
	// a long…
}
