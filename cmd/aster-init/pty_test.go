package main

import "testing"

func TestParseStatSession(t *testing.T) {
	for line, want := range map[string]int{
		"42 (bash) S 1 42 42 34816 42 4194560 0 0":          42,
		"7 (a) b) (c) R 3 5 9 0 -1":                         9,
		"8 (sleep ) S 1 ) S 1 2 3 4) S 6 7 11 0 -1 4194304": 11,
	} {
		got, err := parseStatSession([]byte(line))
		if err != nil || got != want {
			t.Errorf("%q: %d, %v; want %d", line, got, err, want)
		}
	}
	for _, line := range []string{"", "1 (x", "1 (x) S 1 2"} {
		if _, err := parseStatSession([]byte(line)); err == nil {
			t.Errorf("%q parsed", line)
		}
	}
}
