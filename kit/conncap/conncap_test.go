package conncap

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// One IP holds at most max connections; a closed one (closed twice, as a server shutting down may)
// gives back exactly one place.
func TestWrapCapsPerIPAndReleasesOnce(t *testing.T) {
	base, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ln := Wrap(base, 2)
	t.Cleanup(func() { _ = ln.Close() })
	accepted := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	dial := func() net.Conn {
		c, err := net.DialTimeout("tcp", base.Addr().String(), 5*time.Second)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	dial()
	dial()
	first, second := <-accepted, <-accepted
	third := dial()
	require.NoError(t, third.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = third.Read(make([]byte, 1))
	require.Error(t, err, "the third connection is closed by the listener")
	select {
	case c := <-accepted:
		t.Fatalf("a third connection was accepted: %v", c.RemoteAddr())
	default:
	}

	require.NoError(t, first.Close())
	_ = first.Close() // a second close must not give back a second place
	dial()
	<-accepted
	fourth := dial()
	require.NoError(t, fourth.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = fourth.Read(make([]byte, 1))
	require.Error(t, err, "still capped at 2: the double close released one place only")
	_ = second.Close()
}

func TestWrapWithoutCapIsTheListener(t *testing.T) {
	base, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = base.Close() })
	require.Same(t, base, Wrap(base, 0))
}
