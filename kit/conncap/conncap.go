// Package conncap caps the connections one client IP may hold on a listener (MAX_CONNS_PER_IP): the
// one cap of every door, the API's (fasthttp) and the MCP server's (net/http).
//
// The API used fasthttp's own Server.MaxConnsPerIP before; its connection wrapper is released twice
// when Server.Shutdown closes an idle connection that its worker then closes again, and the second
// release dereferences nil and kills the process (valyala/fasthttp#1987, fixed only in releases that
// also read a request body before the handler runs, which would undo the API's auth-before-body
// guard). Capping at the listener avoids both: Close here is idempotent.
package conncap

import (
	"net"
	"sync"
)

// Wrap returns ln capped at max connections per client IP (ln itself when max <= 0). A connection
// from an IP already holding max of them is closed at once, before anything is read from it.
func Wrap(ln net.Listener, max int) net.Listener {
	if max <= 0 {
		return ln
	}
	return &listener{Listener: ln, max: max, open: map[string]int{}}
}

type listener struct {
	net.Listener
	max  int
	mu   sync.Mutex
	open map[string]int
}

func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := c.RemoteAddr().String()
		if host, _, err := net.SplitHostPort(ip); err == nil {
			ip = host
		}
		l.mu.Lock()
		if l.open[ip] >= l.max {
			l.mu.Unlock()
			_ = c.Close()
			continue
		}
		l.open[ip]++
		l.mu.Unlock()
		return &conn{Conn: c, release: func() {
			l.mu.Lock()
			if l.open[ip]--; l.open[ip] <= 0 {
				delete(l.open, ip)
			}
			l.mu.Unlock()
		}}, nil
	}
}

// conn gives its IP's place back once, however often it is closed.
type conn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *conn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}
