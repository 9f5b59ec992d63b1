package mcp

import (
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// closeGrace is how long Close lets a stdio server exit on its own after
// its stdin closes, before the group is killed.
const closeGrace = 2 * time.Second

// tailWait bounds how long a failed connect or listing waits for the
// server's stderr to close before it reports the tail it has.
const tailWait = 2 * time.Second

// process is a started stdio server. It is plain exec.Command, not
// CommandContext: the server belongs to the connection, not to the context
// that opened it.
type process struct {
	cmd    *exec.Cmd
	stdin  *os.File
	stdout *os.File

	exited     chan struct{} // closed once Wait returns
	stderrDone chan struct{} // closed when every holder of stderr is gone
	tail       *ring

	closeOnce sync.Once
}

// startProcess starts srv.Command with the minimal environment, in its own
// group, its stdio on pipes this package owns.
func startProcess(srv *Server) (*process, error) {
	cmd := exec.Command(srv.Command[0], srv.Command[1:]...)
	cmd.Env = childEnv(os.LookupEnv, srv.InheritEnv, srv.Env)
	contain(cmd)
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	// Files, not writers: Wait then never waits on a copy that a
	// descendant holding the pipe open could keep going.
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := cmd.Start(); err != nil {
		for _, f := range []*os.File{inR, inW, outR, outW, errR, errW} {
			f.Close()
		}
		return nil, err
	}
	inR.Close()
	outW.Close()
	errW.Close()
	p := &process{cmd: cmd, stdin: inW, stdout: outR, exited: make(chan struct{}), stderrDone: make(chan struct{}), tail: &ring{max: StderrTailBytes}}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	go func() {
		defer close(p.stderrDone)
		defer errR.Close()
		w := io.Writer(p.tail)
		if srv.Stderr != nil {
			w = io.MultiWriter(p.tail, srv.Stderr)
		}
		_, _ = io.Copy(w, errR)
	}()
	return p, nil
}

// close ends the server as the protocol asks (close its stdin, let it
// exit), then kills its whole group, so a launcher's child does not outlive
// the session. It returns once the server has exited.
func (p *process) close() {
	p.closeOnce.Do(func() {
		p.stdin.Close()
		select {
		case <-p.exited:
		case <-time.After(closeGrace):
		}
		killGroup(p.cmd.Process.Pid)
		_ = p.cmd.Process.Kill()
		<-p.exited
		p.stdout.Close()
	})
}

// stderrTail is the last of the server's stderr, after waiting a little
// for the server to finish writing it.
func (p *process) stderrTail() string {
	select {
	case <-p.stderrDone:
	case <-time.After(tailWait):
	}
	return p.tail.String()
}

// pipeRWC is the connection's byte stream. Closing it closes the process.
type pipeRWC struct{ p *process }

func (r pipeRWC) Read(b []byte) (int, error)  { return r.p.stdout.Read(b) }
func (r pipeRWC) Write(b []byte) (int, error) { return r.p.stdin.Write(b) }
func (r pipeRWC) Close() error                { r.p.close(); return nil }

// ring keeps the last max bytes written to it.
type ring struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (r *ring) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.b = append(r.b, p...)
	if len(r.b) > r.max {
		r.b = append(r.b[:0], r.b[len(r.b)-r.max:]...)
	}
	return len(p), nil
}

func (r *ring) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return string(r.b)
}
