package trace

import "github.com/agentrt/agentrt/internal/termsafe"

// AppendTerminalSafeJSON appends the compact JSON text src, as json.Marshal
// or a json.Encoder writes it, to dst with every character Sanitize would
// escape written as a JSON \u escape instead: controls, DEL, format and
// invisible characters, line separators, private use, unassigned code
// points, a variation selector that does not directly follow a base, and
// each combining mark past the fourth on a base. Each string is judged as
// Sanitize judges it alone, so its opening quote is not a base a variation
// selector may attach to, and a JSON escape in it counts as one of
// Sanitize's escapes. An invalid UTF-8 byte becomes \ufffd.
//
// The result is JSON that decodes to the same values and is safe to print on
// a terminal. It is the one encoder for every JSON line agentrt writes: the
// JSONL observer's and the operator command's -json output.
//
// src must be compact: a raw line break or other control between tokens
// would itself be escaped, and the result would no longer be JSON.
func AppendTerminalSafeJSON(dst, src []byte) []byte { return termsafe.AppendJSON(dst, src) }
