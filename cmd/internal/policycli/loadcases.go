package policycli

import celpolicy "github.com/agentrt/agentrt/policy/cel"

func loadCases(path string) ([]celpolicy.Case, error) { return celpolicy.LoadCases(path) }
