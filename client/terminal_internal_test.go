package client

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
)

// A terminal the server closed (its close frame read, the connection closed
// by Read) closes again without error: what a caller's deferred Close, or a
// Close racing the reader's answer to it, meets.
func TestTerminalCloseAfterServerClose(t *testing.T) {
	// TCP, as a real terminal's: closing a TCP connection twice is an error
	// (net.Pipe's second Close is not)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	cli, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	term := &Terminal{conn: cli, br: bufio.NewReader(cli)}
	go func() {
		// an unmasked close frame: code 1000, reason "exit 0"
		payload := append(binary.BigEndian.AppendUint16(nil, 1000), "exit 0"...)
		_, _ = srv.Write(append([]byte{0x80 | opClose, byte(len(payload))}, payload...))
		_, _ = io.Copy(io.Discard, srv) // the client's answer
		srv.Close()
	}()
	if _, err := term.Read(make([]byte, 16)); !errors.Is(err, io.EOF) {
		t.Fatalf("read after the server's close: %v", err)
	}
	if r := term.CloseReason(); r != "exit 0" {
		t.Errorf("close reason %q", r)
	}
	if err := term.Close(); err != nil {
		t.Errorf("close after the server closed: %v", err)
	}
	if err := term.Close(); err != nil {
		t.Errorf("a second close: %v", err)
	}
}
