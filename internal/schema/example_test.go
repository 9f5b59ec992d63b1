package schema_test

import (
	"fmt"

	"github.com/agentrt/agentrt/internal/schema"
)

func ExampleCompile() {
	s, _ := schema.Compile("resize", []byte(`{
		"type": "object",
		"properties": {"width": {"type": "integer", "minimum": 1}},
		"required": ["width"]
	}`))
	fmt.Println(s.Validate([]byte(`{"width": 640}`)))
	fmt.Println(s.Validate([]byte(`{"width": 0}`)))
	fmt.Println(s.Validate([]byte(`{"width": 1, "width": 2}`)))

	_, err := schema.Compile("resize", []byte(`{"$ref": "https://example.com/s.json"}`))
	fmt.Println(err)
	// Output:
	// <nil>
	// arguments do not match the schema: at /width: minimum: got 0, want 1
	// arguments refused: duplicate key
	// tool "resize": input schema refers to "https://example.com/s.json" outside itself
}
