package oci

// WithGVisorHostTasks is opts with every gVisor sandbox's host pids bound set to
// n, as a test of what happens when the sentry reaches it needs.
func WithGVisorHostTasks(opts Options, n int64) Options {
	opts.gvisorHostTasks = n
	return opts
}
