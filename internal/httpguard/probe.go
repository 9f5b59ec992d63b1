package httpguard

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"time"
)

// The probes below are for the servers' tests of the guards (here, not in
// a _test file, so every server's tests share them, like [Kept]).

// Flood opens n connections to addr at once from one source and reports
// how many the server kept open and how many it refused, by a failed dial
// or by closing the connection as it was accepted. It closes them all.
func Flood(addr string, n int) (kept, refused int) {
	var held []net.Conn
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			refused++
			continue
		}
		held = append(held, c)
	}
	kept, closed := Kept(held)
	for _, c := range held {
		c.Close()
	}
	return kept, refused + closed
}

// SendHead writes head (a request whose declared body never comes) on a
// new connection to addr and reads the answer, waiting at most wait. It
// returns the answer's status, whether it says Connection: close, and how
// long it took.
func SendHead(addr, head string, wait time.Duration) (status int, closes bool, elapsed time.Duration, err error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, false, 0, err
	}
	defer c.Close()
	start := time.Now()
	if _, err := io.WriteString(c, head); err != nil {
		return 0, false, 0, err
	}
	c.SetReadDeadline(start.Add(wait))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, false, time.Since(start), err
	}
	elapsed = time.Since(start)
	res.Body.Close()
	return res.StatusCode, res.Close, elapsed, nil
}
