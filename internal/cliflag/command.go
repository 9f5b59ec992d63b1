package cliflag

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// A Command is one command of a program, or one subcommand of a command.
// E is what every run function of the program is handed: its streams, its
// environment, whatever the program shares among its commands.
type Command[E any] struct {
	// Name is the word that selects the command.
	Name string
	// Summary is the one line the program's command list gives it.
	Summary string
	// Usage is the usage line after the command's name ("[-strict] FILE").
	Usage string
	// Help is what -h prints after the usage line.
	Help string
	// Subs are the subcommands; a command with any is only a name for
	// them, and its Bind is not called.
	Subs []*Command[E]
	// Bind puts the command's flags on fs, bound to the fields of a fresh
	// options struct, and returns the function that runs the command on
	// them once they are parsed.
	Bind func(fs *flag.FlagSet) Runner[E]
}

// A Runner runs a command whose flags are parsed, with its positional
// arguments in order.
type Runner[E any] func(e E, pos []string) int

// With is a Bind for the options struct O: flags puts O's flags on fs
// (nil when the command has none) and run reads them.
func With[E, O any](flags func(fs *flag.FlagSet, o *O), run func(e E, o *O, pos []string) int) func(*flag.FlagSet) Runner[E] {
	return func(fs *flag.FlagSet) Runner[E] {
		o := new(O)
		if flags != nil {
			flags(fs, o)
		}
		return func(e E, pos []string) int { return run(e, o, pos) }
	}
}

// Sub returns c's subcommand named name, or nil.
func (c *Command[E]) Sub(name string) *Command[E] {
	return Find(c.Subs, name)
}

// SubNames lists c's subcommands' names in order.
func (c *Command[E]) SubNames() []string {
	names := make([]string, len(c.Subs))
	for i, s := range c.Subs {
		names[i] = s.Name
	}
	return names
}

// Find returns the command of cmds named name, or nil.
func Find[E any](cmds []*Command[E], name string) *Command[E] {
	for _, c := range cmds {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// IsHelp reports whether arg asks for help rather than naming anything.
func IsHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help":
		return true
	}
	return false
}

// A Kit is what a program's commands share: the flags every command takes
// as well as its own, how help is printed and how a usage error is told.
// Exec is the same for every command of every program that has a Kit, so
// every command and subcommand answers -h alike.
type Kit[E any] struct {
	// Global puts the flags every command takes on fs; nil for none.
	Global func(e E, fs *flag.FlagSet)
	// Help prints the help of the command path names (a command, then
	// its subcommand if one was named) on the standard output.
	Help func(e E, path []*Command[E])
	// UsageError tells a mistake in the command line of path and returns
	// the program's usage exit code.
	UsageError func(e E, path []*Command[E], msg string) int
	// Missing is the usage error of a command with subcommands run
	// without one; nil says "missing the subcommand".
	Missing func(c *Command[E]) string
	// Unknown is the usage error for a subcommand c does not have; nil
	// says "unknown subcommand".
	Unknown func(c *Command[E], name string) string
}

// Exec runs c with args, the arguments after its name. A command with
// subcommands runs the one args[0] names. -h, -help and --help anywhere
// before "--" print the help and return 0; flags may stand before, between
// or after the positional arguments.
func (k *Kit[E]) Exec(e E, c *Command[E], args []string) int {
	path := []*Command[E]{c}
	if len(c.Subs) > 0 {
		switch {
		case len(args) > 0 && IsHelp(args[0]):
			k.Help(e, path)
			return 0
		case len(args) == 0:
			return k.UsageError(e, path, k.missing(c))
		}
		sub := c.Sub(args[0])
		if sub == nil {
			return k.UsageError(e, path, k.unknown(c, args[0]))
		}
		path, c, args = append(path, sub), sub, args[1:]
	}
	fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if k.Global != nil {
		k.Global(e, fs)
	}
	run := c.Bind(fs)
	pos, err := Parse(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		k.Help(e, path)
		return 0
	}
	if err != nil {
		return k.UsageError(e, path, err.Error())
	}
	return run(e, pos)
}

func (k *Kit[E]) missing(c *Command[E]) string {
	if k.Missing != nil {
		return k.Missing(c)
	}
	return "missing the " + c.Name + " subcommand"
}

func (k *Kit[E]) unknown(c *Command[E], name string) string {
	if k.Unknown != nil {
		return k.Unknown(c, name)
	}
	if len(name) > 40 {
		name = name[:40]
	}
	return fmt.Sprintf("unknown %s subcommand %q", c.Name, name)
}
