//go:build linux

package proxy

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// listening is every TCP socket in LISTEN state the process holds open, as
// "local-address-hex:port-hex" from /proc/net/tcp and tcp6.
func listening(t *testing.T, pid int) []string {
	t.Helper()
	inodes := map[string]bool{}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, fd := range fds {
		l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	var out []string
	for _, table := range []string{"tcp", "tcp6"} {
		f, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			// sl local rem st tx:rx tr:when retrnsmt uid timeout inode
			if len(fields) < 10 || fields[3] != "0A" {
				continue
			}
			if inodes[fields[9]] {
				out = append(out, table+" "+fields[1])
			}
		}
		f.Close()
	}
	return out
}

// Without -listen the proxy holds no listening socket, as the seed says
// (it opens no network listener; the host reaches it over stdin and
// stdout). With -listen it holds exactly one, on loopback, and serves
// the gated tools there while stdio still works.
func TestFront_NothingListensWithoutListen(t *testing.T) {
	s := newProcSetup(t)
	h := s.start(t)
	h.expect("", "fs_list_directory", fmt.Sprintf(`{"path":%q}`, s.sandbox))
	got := listening(t, h.cmd.Process.Pid)
	mustf(t, len(got) == 0, "the proxy listens without -listen: %v", got)

	cmd := exec.Command(s.proxyBin, "-config", s.config, "-listen", "127.0.0.1:0")
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	client := sdk.NewClient(&sdk.Implementation{Name: "e2e-host", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr)
	}
	defer cs.Close()
	url, token := frontAnnounced(t, stderr, true)
	got = listening(t, cmd.Process.Pid)
	mustf(t, len(got) == 1 && strings.HasPrefix(got[0], "tcp 0100007F:"), "with -listen: %v", got)

	hc := sdk.NewClient(&sdk.Implementation{Name: "http-host", Version: "1"}, nil)
	hs, err := hc.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: url, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatalf("http connect: %v\n%s", err, stderr)
	}
	defer hs.Close()
	res, err := hs.CallTool(context.Background(), &sdk.CallToolParams{Name: "fs_list_directory", Arguments: map[string]any{"path": s.sandbox}})
	mustf(t, err == nil && strings.Contains(text(res), "notes.txt"), "http call: %v %v", text(res), err)
	res, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "fs_list_directory", Arguments: map[string]any{"path": s.sandbox}})
	mustf(t, err == nil && strings.Contains(text(res), "notes.txt"), "stdio call beside the front: %v %v", text(res), err)
}

var (
	listenLine = regexp.MustCompile(`agentrt-proxy: listening on (http://\S+/mcp)`)
	tokenLine  = regexp.MustCompile(`agentrt-proxy: bearer token: ([0-9a-f]{64})`)
)

// frontAnnounced waits for the proxy's stderr to name the front's URL and
// (when generated) its token.
func frontAnnounced(t *testing.T, stderr *syncBuffer, printed bool) (url, token string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		out := stderr.String()
		// The token's line follows the listening line, and may arrive
		// after it: wait for both when the token is printed.
		m, tm := listenLine.FindStringSubmatch(out), tokenLine.FindStringSubmatch(out)
		if m != nil && tm != nil {
			return m[1], tm[1]
		}
		if m != nil && !printed {
			return m[1], ""
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the proxy never announced its front:\n%s", stderr)
	return "", ""
}

// startFront runs agentrt-proxy with -listen and -stdio=false as an HTTP
// host's operator would, its token in an owner-only file; it returns the
// URL and the token, and stops the proxy with SIGTERM when the test ends.
func startFront(t *testing.T, proxyBin, config string, more ...string) (url, token string, stderr *syncBuffer) {
	t.Helper()
	url, token, stderr, _ = startFrontProcess(t, proxyBin, config, more...)
	return url, token, stderr
}

// startFrontProcess is startFront that also gives the proxy's process.
func startFrontProcess(t *testing.T, proxyBin, config string, more ...string) (url, token string, stderr *syncBuffer, proc *os.Process) {
	t.Helper()
	tok, err := NewFrontToken()
	if err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(filepath.Dir(config), "front.token")
	if err := os.WriteFile(tokenFile, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	stderr = &syncBuffer{}
	cmd := exec.Command(proxyBin, append([]string{"-config", config, "-listen", "127.0.0.1:0", "-token-file", tokenFile, "-stdio=false"}, more...)...)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("agentrt-proxy exited: %v\n%s", err, stderr)
			}
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("agentrt-proxy did not stop on SIGINT\n%s", stderr)
		}
	})
	url, printed := frontAnnounced(t, stderr, false)
	mustf(t, printed == "" && !strings.Contains(stderr.String(), tok), "a token read from a file was printed:\n%s", stderr)
	if _, err := strconv.Atoi(url[strings.LastIndex(url, ":")+1 : len(url)-len(FrontPath)]); err != nil {
		t.Fatalf("front URL %q: %v", url, err)
	}
	return url, tok, stderr, cmd.Process
}
