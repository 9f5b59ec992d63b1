// Command approver wires the approval channels together.
//
// Run with no flags, it is a demonstration on a temporary database: a run
// waits on a payment, the notifier tells a tiny chat-bot-like receiver, the
// bot fetches the approval as text through the signed webhook, prints it,
// and approves it with the hash it was shown; the run then resumes and the
// payment executes once.
//
// Run with -serve, it is the operator's way to run the webhook and the
// notifier on an existing runs database without writing Go:
//
//	go run ./examples/approver -serve -db runs.db -listen 127.0.0.1:8443 \
//	    -webhook-secret-file webhook.secret \
//	    -notify-url https://bot.example/hook -notify-secret-file notify.secret \
//	    -cursor runs.notify-cursor
//
// The webhook listens on plain HTTP; put it behind TLS (docs/approvals.md).
// Secret files must be owner-only and hold at least 32 bytes.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentrt/agentrt"
	"github.com/agentrt/agentrt/approver"
	"github.com/agentrt/agentrt/approver/notify"
	"github.com/agentrt/agentrt/approver/webhook"
	"github.com/agentrt/agentrt/export"
	"github.com/agentrt/agentrt/internal/files"
	"github.com/agentrt/agentrt/scripted"
	"github.com/agentrt/agentrt/sqlite"
)

func main() {
	serve := flag.Bool("serve", false, "run the webhook and the notifier on -db instead of the demonstration")
	db := flag.String("db", "", "runs database (with -serve)")
	listen := flag.String("listen", "127.0.0.1:8443", "webhook address (with -serve)")
	whSecret := flag.String("webhook-secret-file", "", "owner-only file holding the webhook's secret (with -serve)")
	notifyURL := flag.String("notify-url", "", "where to POST notifications; empty runs no notifier (with -serve)")
	notifySecret := flag.String("notify-secret-file", "", "owner-only file holding the notifications' secret (with -serve)")
	cursor := flag.String("cursor", "", "the notifier's cursor file (with -serve and -notify-url)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var err error
	if *serve {
		err = serveChannels(ctx, *db, *listen, *whSecret, *notifyURL, *notifySecret, *cursor)
	} else {
		err = demo(ctx, os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "approver:", err)
		os.Exit(1)
	}
}

// maxSecretFile bounds a secret file's size.
const maxSecretFile = 4 << 10

// readSecret reads a secret from a file only its owner can read or write,
// through the rule every secret agentrt reads is held to (files.ReadSecret).
func readSecret(path string) ([]byte, error) {
	if path == "" {
		return nil, errors.New("a secret file is required")
	}
	b, err := files.ReadSecret(path, maxSecretFile)
	if err != nil {
		return nil, err
	}
	b = []byte(strings.TrimRight(string(b), "\r\n"))
	if len(b) < webhook.MinSecret {
		return nil, fmt.Errorf("%s holds %d bytes; a secret needs at least %d", path, len(b), webhook.MinSecret)
	}
	return b, nil
}

func serveChannels(ctx context.Context, db, listen, whSecretFile, notifyURL, notifySecretFile, cursor string) error {
	whSecret, err := readSecret(whSecretFile)
	if err != nil {
		return err
	}
	var nt *notify.Notifier
	if notifyURL != "" {
		ns, err := readSecret(notifySecretFile)
		if err != nil {
			return err
		}
		if string(ns) == string(whSecret) {
			return errors.New("the notifications' secret must not be the webhook's")
		}
		if cursor == "" {
			return errors.New("-cursor is required with -notify-url")
		}
		ro, err := sqlite.OpenExisting(db, true)
		if err != nil {
			return err
		}
		defer ro.Close()
		if nt, err = notify.New(notify.Config{Store: ro, Cursor: export.FileCursor{Path: cursor},
			Targets: []notify.Target{{URL: notifyURL, Secret: ns}}}); err != nil {
			return err
		}
	}
	l, err := approver.Open(db, nil)
	if err != nil {
		return err
	}
	defer l.Close()
	h, err := webhook.New(webhook.DefaultConfig(l, whSecret))
	if err != nil {
		return err
	}
	srv := webhook.NewServer(listen, h)
	ln, err := webhook.Listen(listen)
	if err != nil {
		return err
	}
	errs := make(chan error, 2)
	go func() { errs <- srv.Serve(ln) }()
	if nt != nil {
		go func() { errs <- nt.Run(ctx) }()
	}
	select {
	case <-ctx.Done():
	case err = <-errs:
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// demo runs the whole round trip on a temporary database and writes what
// each side saw to out.
func demo(ctx context.Context, out io.Writer) error {
	dir, err := os.MkdirTemp("", "agentrt-approver-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "runs.db")
	store, err := sqlite.Open(path)
	if err != nil {
		return err
	}
	defer store.Close()

	var mu sync.Mutex
	var paid []string
	pay := agentrt.ToolFunc{
		ToolSpec: agentrt.ToolSpec{Name: "pay", Description: "Pay an invoice.", SideEffect: agentrt.RemoteMutation, Timeout: time.Second,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"to":{"type":"string"},"cents":{"type":"integer"}},"required":["to","cents"],"additionalProperties":false}`)},
		Fn: func(_ context.Context, c agentrt.ToolCall) (agentrt.ToolResult, error) {
			mu.Lock()
			paid = append(paid, string(c.Args))
			mu.Unlock()
			return agentrt.ToolResult{Content: json.RawMessage(`{"paid":true}`), Summary: "paid"}, nil
		},
	}
	policy := agentrt.PolicyFunc(func(_ context.Context, req agentrt.ToolRequest, _ agentrt.RunView) (agentrt.PolicyDecision, error) {
		return agentrt.NeedApproval("payment", "payments need a person", req.Args, map[string]json.RawMessage{"invoice": req.Args},
			agentrt.ExpiresAfter(15*time.Minute))
	})
	agent := &scripted.Agent{Decisions: []agentrt.Decision{
		scripted.ToolCall("pay", `{"to":"ACME \u202eevil","cents":4200}`, "the invoice is due"),
		scripted.Complete(`{"done":true}`),
	}}
	d, err := agentrt.NewDriver(agentrt.Config{EngineConfig: agentrt.EngineConfig{Store: store, Policy: policy, Tools: []agentrt.Tool{pay}}, Agent: agent})
	if err != nil {
		return err
	}

	whSecret := []byte("demo webhook secret, 32 bytes or more")
	nSecret := []byte("demo notification secret, 32 bytes or more")
	h, err := webhook.New(webhook.DefaultConfig(approver.New(store, nil), whSecret))
	if err != nil {
		return err
	}
	whLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	whSrv := webhook.NewServer("", h)
	go whSrv.Serve(webhook.LimitListener(whLn))
	defer whSrv.Close()

	// The bot: it verifies each notification, and for a request fetches
	// the approval as text through the webhook and approves it with the
	// hash it was shown.
	client := &webhook.Client{Base: "http://" + whLn.Addr().String(), Secret: whSecret}
	receiver, err := notify.NewReceiver(nSecret)
	if err != nil {
		return err
	}
	approved := make(chan struct{}, 1)
	var botErr error
	bot := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := receiver.Verify(r)
		if err != nil {
			http.Error(w, "unverified", http.StatusUnauthorized)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, "bot: notified %s for %s: %s\n", n.Type, n.Tool, n.Summary)
		if n.Type != notify.Requested {
			return
		}
		text, err := client.ShowText(r.Context(), n.RunID, n.ApprovalID)
		if err != nil {
			botErr = err
			return
		}
		fmt.Fprintf(out, "bot: shows the operator:\n%s", text)
		shown, err := client.Show(r.Context(), n.RunID, n.ApprovalID)
		if err != nil {
			botErr = err
			return
		}
		res, err := client.Approve(r.Context(), approver.Answer{RunID: n.RunID, ApprovalID: n.ApprovalID, Hash: shown.Hash, By: "bot:alice", Note: "ok in chat"})
		if err != nil {
			botErr = err
			return
		}
		fmt.Fprintf(out, "bot: approved %s: %s\n", res.ApprovalID, res.Status)
		approved <- struct{}{}
	})
	botLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	botSrv := &http.Server{Handler: bot, ReadHeaderTimeout: 5 * time.Second}
	go botSrv.Serve(botLn)
	defer botSrv.Close()

	ro, err := sqlite.OpenExisting(path, true)
	if err != nil {
		return err
	}
	defer ro.Close()
	nt, err := notify.New(notify.Config{Store: ro, Cursor: export.FileCursor{Path: filepath.Join(dir, "cursor")},
		Targets: []notify.Target{{URL: "http://" + botLn.Addr().String() + "/hook", Secret: nSecret}}, Interval: 20 * time.Millisecond})
	if err != nil {
		return err
	}
	nctx, stopNotifier := context.WithCancel(ctx)
	notified := make(chan error, 1)
	go func() { notified <- nt.Run(nctx) }()
	defer func() { stopNotifier(); <-notified }()

	run, err := d.Start(ctx, "pay the ACME invoice", agentrt.DefaultLimits())
	if err != nil {
		return err
	}
	mu.Lock()
	fmt.Fprintf(out, "runtime: run is %s\n", run.Status)
	mu.Unlock()
	select {
	case <-approved:
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(30 * time.Second):
		mu.Lock()
		defer mu.Unlock()
		return fmt.Errorf("no approval arrived: %v", botErr)
	}
	run, err = d.Resume(ctx, run.ID)
	if err != nil {
		return err
	}
	mu.Lock()
	fmt.Fprintf(out, "runtime: run is %s; the payment ran %d time(s)\n", run.Status, len(paid))
	mu.Unlock()
	return nil
}
