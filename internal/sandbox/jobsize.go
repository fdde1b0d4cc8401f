package sandbox

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/asterhq/aster/internal/initproto"
	"github.com/asterhq/aster/internal/textclip"
)

// Bounds on what a job header carries, checked on the host before any
// sandbox starts: a header over one frame would reach init cut in two.
const (
	// MaxEnvBytes bounds the environment, its KEY=VALUE strings summed.
	MaxEnvBytes = 512 << 10
	// MaxArgvBytes bounds the arguments, summed (init's own limit).
	MaxArgvBytes = initproto.MaxArgBytes
	// MaxStringBytes bounds one argument or KEY=VALUE string: the kernel
	// refuses to exec with a longer one (MAX_ARG_STRLEN).
	MaxStringBytes = 128 << 10
	// MaxJobHeaderBytes bounds the encoded header: one frame.
	MaxJobHeaderBytes = initproto.MaxPayload
)

// checkJobSize refuses a header too large to be sent to init or exec'd, in
// human units, so the caller learns which limit it passed.
func checkJobSize(hdr initproto.JobHeader) error {
	sum := func(what string, list []string, max int64, name func(int, string) string) error {
		var total int64
		for i, s := range list {
			if int64(len(s)) > MaxStringBytes {
				return Invalidf("%s is %s, over the limit of %s for one", name(i, s), sizeText(int64(len(s))), sizeText(MaxStringBytes))
			}
			total += int64(len(s))
		}
		if total > max {
			return Invalidf("the %s total %s, over the limit of %s", what, sizeText(total), sizeText(max))
		}
		return nil
	}
	envName := func(_ int, s string) string {
		k, _, _ := strings.Cut(s, "=")
		return fmt.Sprintf("environment variable %s", textclip.Head(k, 64, "..."))
	}
	if err := sum("environment variables", hdr.Env, MaxEnvBytes, envName); err != nil {
		return err
	}
	if err := sum("arguments", hdr.Argv, MaxArgvBytes, func(i int, _ string) string { return fmt.Sprintf("argument %d", i) }); err != nil {
		return err
	}
	p, err := json.Marshal(hdr)
	if err != nil {
		return fmt.Errorf("encode job header: %w", err)
	}
	if int64(len(p)) > MaxJobHeaderBytes {
		return Invalidf("the job (arguments, environment, working directory) encodes to %s, over the limit of %s",
			sizeText(int64(len(p))), sizeText(MaxJobHeaderBytes))
	}
	return nil
}

// sizeText renders a size for a person: 1.5 MiB, 512 KiB, 300 B.
func sizeText(n int64) string {
	switch {
	case n >= 1<<20:
		return trimZero(fmt.Sprintf("%.1f", float64(n)/(1<<20))) + " MiB"
	case n >= 1<<10:
		return trimZero(fmt.Sprintf("%.1f", float64(n)/(1<<10))) + " KiB"
	}
	return fmt.Sprintf("%d B", n)
}

func trimZero(s string) string {
	if len(s) > 2 && s[len(s)-2:] == ".0" {
		return s[:len(s)-2]
	}
	return s
}
