// Command callpath prints the figures of one call's path through a
// module, read from a `dlv trace` of the module's functions: the files it
// walks through and how often it comes back to a file it had already
// left (house.WalkCallPath). scripts/callpath.sh makes the traces and runs
// it for the proxy's calls (`make callpath`).
//
//	callpath -root proxy -mod github.com/agentrt/agentrt/proxy -entry 'github.com/agentrt/agentrt/proxy.(*Proxy).handle' -n 1 trace.txt
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/agentrt/agentrt/internal/house"
)

func main() {
	root := flag.String("root", ".", "the module's directory")
	mod := flag.String("mod", "", "the module's import path")
	entry := flag.String("entry", "", "the function whose call is walked, as dlv names it")
	nth := flag.Int("n", 1, "which call of entry (from 1)")
	list := flag.Bool("files", false, "list the files, in the order first entered")
	flag.Parse()
	if flag.NArg() != 1 || *mod == "" || *entry == "" {
		fmt.Fprintln(os.Stderr, "usage: callpath -root DIR -mod PATH -entry FUNC [-n N] [-files] TRACE")
		os.Exit(2)
	}
	if err := run(*root, *mod, *entry, *nth, *list, flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, "callpath:", err)
		os.Exit(1)
	}
}

func run(root, mod, entry string, nth int, list bool, trace string) error {
	files, err := house.FuncFiles(root, mod)
	if err != nil {
		return err
	}
	f, err := os.Open(trace)
	if err != nil {
		return err
	}
	defer f.Close()
	p, err := house.WalkCallPath(f, files, entry, nth)
	if err != nil {
		return err
	}
	fmt.Println(p)
	if list {
		for _, name := range p.Files {
			fmt.Println("  " + name)
		}
	}
	return nil
}
