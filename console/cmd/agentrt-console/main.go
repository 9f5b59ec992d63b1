// Command agentrt-console serves the web operator console on a runs
// database; 'agentrt serve' runs it. It listens on 127.0.0.1:7380 by
// default; an address that is not loopback needs -tls-cert and -tls-key.
// 'agentrt-console version' prints its version.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	agentrt "github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/backend"
	"github.com/agentrt/agentrt/checkpoint"
	"github.com/agentrt/agentrt/console"
	"github.com/agentrt/agentrt/internal/buildinfo"
	_ "github.com/agentrt/agentrt/postgres" // postgres:// DSNs
	_ "github.com/agentrt/agentrt/sqlite"   // SQLite files
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == "version" {
		fmt.Printf("agentrt-console %s (%s)\n", buildinfo.Version(), runtime.Version())
		return
	}
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("agentrt-console", flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := fs.String("db", os.Getenv("AGENTRT_DB"), "the runs database (default $AGENTRT_DB)")
	addr := fs.String("addr", "127.0.0.1:7380", "the address to listen on")
	origin := fs.String("origin", "", "the console's origin as browsers name it (default http://localhost:PORT, or https://localhost:PORT with TLS)")
	cert := fs.String("tls-cert", "", "the TLS certificate file; needed to listen on an address that is not loopback")
	key := fs.String("tls-key", "", "the TLS key file")
	var ckpt checkpoint.Process // approvals commit events: fold them too
	ckpt.Flags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "agentrt-console: "+format+"\n", a...)
		return code
	}
	if *db == "" {
		return fail(2, "no database: pass -db PATH or set AGENTRT_DB")
	}
	host, port, err := net.SplitHostPort(*addr)
	if err != nil {
		return fail(2, "-addr %q is not HOST:PORT", *addr)
	}
	tls := *cert != "" || *key != ""
	if tls && (*cert == "" || *key == "") {
		return fail(2, "-tls-cert and -tls-key go together")
	}
	ip := net.ParseIP(host)
	loopback := host == "localhost" || (ip != nil && ip.IsLoopback())
	if !loopback && !tls {
		return fail(2, "refusing to listen on %s without TLS: a session cookie and passkey ceremonies would cross the network in the clear; pass -tls-cert and -tls-key, or listen on 127.0.0.1", *addr)
	}
	if *origin == "" {
		scheme := "http"
		if tls {
			scheme = "https"
		}
		*origin = scheme + "://localhost:" + port
	}
	st, closeStore, err := openStore(*db, ckpt, stderr)
	if err != nil {
		return fail(1, "%v", err)
	}
	defer closeStore()
	h, err := console.New(console.DefaultConfig(st, *origin))
	if err != nil {
		return fail(2, "%v", err)
	}
	srv := console.NewServer(*addr, h)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fail(1, "%v", err)
	}
	ln = console.LimitListener(ln)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	errc := make(chan error, 1)
	go func() {
		fmt.Fprintf(stderr, "agentrt-console: serving %s on %s (open %s)\n", backend.Redact(*db), *addr, *origin)
		if tls {
			errc <- srv.ServeTLS(ln, *cert, *key)
		} else {
			errc <- srv.Serve(ln)
		}
	}()
	select {
	case err := <-errc:
		return fail(1, "%v", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	return 0
}

// openStore opens the database and runs the checkpoint integrator on it;
// closeStore stops the integrator, then closes the database.
func openStore(db string, ckpt checkpoint.Process, stderr io.Writer) (st agentrt.Store, closeStore func(), err error) {
	st, err = backend.Open(context.Background(), db, false)
	if err != nil {
		return nil, nil, err
	}
	integ, err := ckpt.Start(st, func(err error) { fmt.Fprintf(stderr, "agentrt-console: checkpoint: %v\n", err) })
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return st, func() { integ.Stop(); st.Close() }, nil
}
