package disclosure_test

import (
	"context"
	"encoding/json"
	"fmt"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/disclosure"
)

// The default rules redact a Stripe key and a URL's password in a file a
// tool read, in place, and say where and by which rule.
func ExampleRules_Disclose() {
	rules, err := disclosure.New(disclosure.Default())
	if err != nil {
		fmt.Println(err)
		return
	}
	key := "sk_" + "live_" + "4eC39HqLyjWDarjtT1zdp7dc"
	content, _ := json.Marshal(map[string]string{"path": ".env",
		"text": "STRIPE=" + key + "\nDATABASE_URL=postgres://app:hunter2hunter2@db/app"})
	out, err := rules.Disclose(context.Background(), agentrt.DisclosureInput{
		Tool: agentrt.ToolSpec{Name: "read_file"}, Kind: agentrt.ObsToolResult, Content: content})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(out.Content))
	for _, f := range out.Findings {
		fmt.Println(f.Rule, f.Action, f.Pointer)
	}
	// Output:
	// {"path":".env","text":"STRIPE=[REDACTED:stripe_key]\nDATABASE_URL=[REDACTED:url_password]"}
	// stripe_key redacted /text
	// url_password redacted /text
}
