package githubtest

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
)

// HeldDelivery opens a raw connection to addr, sends a POST /webhook with header, declaring
// contentLength (-1: chunked), and only the first part of its body, then holds the rest back
// as a slow or hostile client would. The status of the answer (0 when the connection ended
// without one) arrives on the channel. The connection is closed when the test ends.
func HeldDelivery(t TB, addr string, header http.Header, contentLength int64, first []byte) <-chan int {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	var req bytes.Buffer
	fmt.Fprintf(&req, "POST /webhook HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n", addr)
	for k, vs := range header {
		for _, v := range vs {
			fmt.Fprintf(&req, "%s: %s\r\n", k, v)
		}
	}
	if contentLength >= 0 {
		fmt.Fprintf(&req, "Content-Length: %d\r\n\r\n", contentLength)
		req.Write(first)
	} else {
		fmt.Fprintf(&req, "Transfer-Encoding: chunked\r\n\r\n%x\r\n", len(first))
		req.Write(first)
		req.WriteString("\r\n") // and never the terminating chunk
	}
	status := make(chan int, 1)
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			status <- 0
			return
		}
		resp.Body.Close()
		status <- resp.StatusCode
	}()
	// A refused request may be answered and closed before all of this is written.
	_, _ = conn.Write(req.Bytes())
	return status
}
