// Package netguardtest helps tests of SSRF-guarded clients: a resolver that maps every name to one
// address, for DNS-rebinding and "a name that resolves to loopback" cases.
package netguardtest

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"
)

// Resolver answers every A query with ip (and AAAA with nothing), so a test can point any host
// name at any address without touching the machine's DNS.
func Resolver(t testing.TB, ip netip.Addr) *net.Resolver {
	t.Helper()
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			client, server := net.Pipe()
			go serveDNS(server, ip)
			return client, nil
		},
	}
}

func serveDNS(c net.Conn, ip netip.Addr) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	for {
		var lenBuf [2]byte
		if _, err := io.ReadFull(c, lenBuf[:]); err != nil {
			return
		}
		msg := make([]byte, binary.BigEndian.Uint16(lenBuf[:]))
		if _, err := io.ReadFull(c, msg); err != nil || len(msg) < 12 {
			return
		}
		// Question: labels up to a zero byte, then type and class.
		end := 12
		for end < len(msg) && msg[end] != 0 {
			end += int(msg[end]) + 1
		}
		end += 5
		if end > len(msg) {
			return
		}
		qtype := binary.BigEndian.Uint16(msg[end-4 : end-2])
		resp := make([]byte, 0, end+16)
		resp = append(resp, msg[0], msg[1], 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0)
		resp = append(resp, msg[12:end]...)
		if qtype == 1 {
			resp[7] = 1
			a := ip.As4()
			resp = append(resp, 0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, a[0], a[1], a[2], a[3])
		}
		out := binary.BigEndian.AppendUint16(nil, uint16(len(resp)))
		if _, err := c.Write(append(out, resp...)); err != nil {
			return
		}
	}
}
