package adaptertest

import "github.com/agentrt/agentrt"

// Classes is the tool-class map an adapter's tests give it: read_note runs
// at once, append_note is what the Gate holds.
func Classes() map[string]agentrt.SideEffect {
	return map[string]agentrt.SideEffect{
		"read_note":   agentrt.ReadOnly,
		"append_note": agentrt.RemoteMutation,
	}
}

// ReadArgs are read_note's arguments, as the model sends them.
type ReadArgs struct {
	Name string `json:"name"`
}

// ReadResult is what read_note answers the model.
type ReadResult struct {
	Text string `json:"text"`
}

// AppendArgs are append_note's arguments, as the model sends them.
type AppendArgs struct {
	Text string `json:"text"`
}

// AppendResult is what append_note answers the model: the bytes it wrote.
type AppendResult struct {
	Bytes int `json:"bytes"`
}

// ReadTool is read_note's body for a framework's function tool.
func (n *Notes) ReadTool(ReadArgs) (ReadResult, error) {
	text, err := n.Read()
	return ReadResult{Text: text}, err
}

// AppendTool is append_note's body for a framework's function tool.
func (n *Notes) AppendTool(a AppendArgs) (AppendResult, error) {
	return AppendResult{Bytes: len(a.Text) + 1}, n.Append(a.Text)
}

// FetchArgs are the arguments of the adapters' benchmark tool, fetch: a
// number the benchmark's model makes fresh for each call, so the loop
// detector sees no repetition.
type FetchArgs struct {
	I int64 `json:"i"`
}
