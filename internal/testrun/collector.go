package testrun

import (
	"fmt"
	"sync"
)

// Collector reads a run's report from its stdout as it streams out of the
// sandbox (feed it from sandbox.Spec.OnOutput), so the summary does not
// depend on how much output the Result keeps. It is safe for concurrent use.
type Collector struct {
	mu     sync.Mutex
	plan   Plan
	gp     *goParser
	junit  *junitBuffer
	bytes  int64
	cut    bool
	closed bool
}

// NewCollector returns a Collector for the plan's report format.
func NewCollector(p Plan) *Collector {
	c := &Collector{plan: p}
	switch p.Format {
	case FormatGoJSON:
		c.gp = newGoParser()
	case FormatJUnit:
		c.junit = &junitBuffer{}
	}
	return c
}

// Write feeds stdout bytes. It never fails; past MaxReportBytes it ignores
// the rest and the summary says so.
func (c *Collector) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := len(p)
	if c.closed || c.cut {
		return n, nil
	}
	if room := MaxReportBytes - c.bytes; int64(len(p)) > room {
		p = p[:room]
		c.cut = true
	}
	c.bytes += int64(len(p))
	switch {
	case c.gp != nil:
		c.gp.write(p)
	case c.junit != nil:
		c.junit.write(p)
	}
	return n, nil
}

// Summary ends the stream and summarises it.
func (c *Collector) Summary() Summary {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.closed && c.gp != nil {
		c.gp.write([]byte("\n")) // a last line without a newline
	}
	c.closed = true
	var s Summary
	switch {
	case c.gp != nil:
		s = c.gp.summary()
	case c.junit != nil:
		s = c.junit.summary()
	default:
		s = Summary{Failures: []Failure{}, Error: "this runner has no machine-readable report; see stdout and the exit code"}
	}
	if c.cut {
		s.Error = joinErr(s.Error, fmt.Sprintf("report cut at %d bytes", MaxReportBytes))
	}
	s.Framework = c.plan.Framework
	s.Format = c.plan.Format
	if s.Format == "" {
		s.Format = FormatNone
	}
	return s
}
