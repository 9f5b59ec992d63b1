// Package cliflag is the command kit of agentrt's programs (agentrt and
// agentrt-policy): a Command with its summary, usage, help, subcommands and
// options struct, run by a Kit that answers -h alike everywhere, and Parse,
// which takes flags before, between or after the positional arguments.
package cliflag

import "flag"

// Parse parses args with fs, taking flags wherever they stand, and returns
// the positional arguments in order. Everything after "--" is positional.
// Its error is fs.Parse's: flag.ErrHelp for -h or -help, else the flag
// that could not be parsed.
func Parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		consumed := len(args) - fs.NArg()
		if consumed > 0 && args[consumed-1] == "--" {
			return append(pos, fs.Args()...), nil
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}
