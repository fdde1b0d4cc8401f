package main

import (
	"bufio"
	"strings"
	"testing"
)

func TestReadConnect(t *testing.T) {
	ok := map[string]struct {
		host string
		port int
	}{
		"CONNECT registry.example:443 HTTP/1.1\r\nHost: registry.example:443\r\nUser-Agent: npm\r\n\r\n": {"registry.example", 443},
		"CONNECT a.example:8443 HTTP/1.0\n\n": {"a.example", 8443},
		"CONNECT [::1]:443 HTTP/1.1\r\n\r\n":  {"[::1]", 443},
	}
	for in, want := range ok {
		h, p, _, err := readConnect(bufio.NewReaderSize(strings.NewReader(in), maxRequestBytes))
		if err != nil || h != want.host || p != want.port {
			t.Errorf("%q: %q %d %v", in, h, p, err)
		}
	}
	bad := map[string]int{
		"GET http://a.example/ HTTP/1.1\r\n\r\n":                                          405,
		"POST http://a.example/ HTTP/1.1\r\n\r\n":                                         405,
		"CONNECT a.example HTTP/1.1\r\n\r\n":                                              400,
		"CONNECT a.example:0 HTTP/1.1\r\n\r\n":                                            400,
		"CONNECT a.example:+443 HTTP/1.1\r\n\r\n":                                         400,
		"CONNECT a.example:70000 HTTP/1.1\r\n\r\n":                                        400,
		"CONNECT :443 HTTP/1.1\r\n\r\n":                                                   400,
		"CONNECT a.example:443 HTTP/2\r\n\r\n":                                            400,
		"CONNECT a.example:443\r\n\r\n":                                                   400,
		"CONNECT a\x01b:443 HTTP/1.1\r\n\r\n":                                             400,
		"CONNECT a.example:443 HTTP/1.1\r\nX: y":                                          400, // cut before the blank line
		"CONNECT " + strings.Repeat("a", 300) + ":443 HTTP/1.1\r\n\r\n":                   400,
		"CONNECT a.example:443 HTTP/1.1\r\n" + strings.Repeat("X-A: b\r\n", 100) + "\r\n": 431,
		"CONNECT a.example:443 HTTP/1.1\r\nX: " + strings.Repeat("b", 9000) + "\r\n\r\n":  431,
	}
	for in, want := range bad {
		_, _, code, err := readConnect(bufio.NewReaderSize(strings.NewReader(in), maxRequestBytes))
		if err == nil || code != want {
			t.Errorf("%.60q: code %d %v, want %d", in, code, err, want)
		}
	}
}

// FuzzReadConnect: any request is answered with a target in bounds or an
// error status, never a panic, and never more than the request cap is read.
func FuzzReadConnect(f *testing.F) {
	f.Add("CONNECT registry.example:443 HTTP/1.1\r\nHost: x\r\n\r\n")
	f.Add("GET http://x/ HTTP/1.1\r\n\r\n")
	f.Add("CONNECT [::1]:1 HTTP/1.0\n\n")
	f.Fuzz(func(t *testing.T, in string) {
		r := strings.NewReader(in + "\r\n\r\n" + strings.Repeat("z", 100))
		br := bufio.NewReaderSize(r, maxRequestBytes)
		h, p, code, err := readConnect(br)
		if err != nil {
			if code < 400 || code > 499 {
				t.Fatalf("error %v with status %d", err, code)
			}
			return
		}
		if h == "" || len(h) > 255 || p < 1 || p > 65535 {
			t.Fatalf("accepted %q:%d", h, p)
		}
		if consumed := len(in) + 4 + 100 - r.Len() - br.Buffered(); consumed > maxRequestBytes {
			t.Fatalf("read %d bytes of request", consumed)
		}
	})
}
