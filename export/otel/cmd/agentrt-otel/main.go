// Command agentrt-otel follows an agentrt runs database and exports its
// events as OpenTelemetry traces to the collector the standard OTEL_*
// variables name (OTEL_EXPORTER_OTLP_ENDPOINT; OTLP over http/protobuf by
// default). It opens the database read-only, and with -cursor it resumes
// where it stopped: the cursor moves only after the spans before it were
// handed to the exporter.
//
//	agentrt-otel -db runs.db -cursor runs.otel-cursor
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/agentrt/agentrt/backend"
	"github.com/agentrt/agentrt/export"
	agentotel "github.com/agentrt/agentrt/export/otel"
	_ "github.com/agentrt/agentrt/postgres" // postgres:// DSNs
	_ "github.com/agentrt/agentrt/sqlite"   // SQLite files
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stderr))
}

const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

func run(args []string, getenv func(string) string, stderr io.Writer) int {
	fs := flag.NewFlagSet("agentrt-otel", flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := fs.String("db", getenv("AGENTRT_DB"), "the runs database (default $AGENTRT_DB)")
	runID := fs.String("run", "", "export only this run's events")
	cursor := fs.String("cursor", "", "a file that keeps the last exported seq, to resume after it")
	once := fs.Bool("once", false, "stop once every committed event is exported")
	interval := fs.Duration("interval", export.DefaultInterval, "how often to look for new events once caught up")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "agentrt-otel: unexpected argument %q\n", fs.Arg(0))
		return exitUsage
	}
	if *db == "" {
		fmt.Fprintln(stderr, "agentrt-otel: no database: pass -db PATH or set AGENTRT_DB")
		return exitUsage
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "agentrt-otel: "+format+"\n", a...)
		return exitFailure
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, err := backend.Open(ctx, *db, true)
	if err != nil {
		return fail("%v", err)
	}
	defer st.Close()
	tp, err := agentotel.Provider(ctx, agentotel.ProviderOptions{})
	if err != nil {
		return fail("%v", err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		tp.Shutdown(sctx)
	}()
	x, err := agentotel.NewExporter(agentotel.Config{TracerProvider: tp, Store: st})
	if err != nil {
		return fail("%v", err)
	}
	var cur export.Cursor
	if *cursor != "" {
		fc := export.FileCursor{Path: *cursor}
		if _, err := fc.Load(); err != nil {
			return fail("%v", err)
		}
		cur = agentotel.FlushingCursor(ctx, fc, tp)
	}
	f := &export.Follower{Store: st, RunID: *runID, Cursor: cur, Interval: *interval, Once: *once}
	if err := f.Follow(ctx, x.Sink(ctx)); err != nil {
		return fail("%v", err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tp.ForceFlush(sctx); err != nil {
		return fail("flushing spans: %v", err)
	}
	return exitOK
}
