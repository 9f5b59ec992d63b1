package canon_test

import (
	"fmt"

	"github.com/agentrt/agentrt/internal/canon"
)

func ExampleCanonical() {
	out, _ := canon.Canonical([]byte(`{ "b": "<é>", "a": [10, 1e1, 10.0] }`))
	fmt.Println(string(out))
	out, _ = canon.Policy([]byte(`{ "b": "<é>", "a": [10, 1e1, 10.0] }`))
	fmt.Println(string(out))
	_, err := canon.Canonical([]byte(`{"a":1,"\u0061":2}`))
	fmt.Println(err)
	// Output:
	// {"a":[10,1e1,10.0],"b":"\u003cé\u003e"}
	// {"a":[10,1e1,10.0],"b":"<é>"}
	// JSON refused: duplicate key
}
