package policycli

import "github.com/agentrt/agentrt/policy/cel"

func loadCases(path string) ([]cel.Case, error) { return cel.LoadCases(path) }
