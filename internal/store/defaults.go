package store

import "time"

// Defaults of the job queue (QueueOptions): a zero field takes them, and the
// `app:` section of aster.yaml starts from them.
const (
	// DefaultWorkers is how many reviews run at once in one process.
	DefaultWorkers = 2
	// DefaultJobTimeout cancels a review running longer.
	DefaultJobTimeout = 20 * time.Minute
	// DefaultMaxAttempts is the tries per job, retries included.
	DefaultMaxAttempts = 8
	// DefaultRetryBase and DefaultRetryMax bound the exponential backoff
	// between attempts.
	DefaultRetryBase = 30 * time.Second
	DefaultRetryMax  = 30 * time.Minute
	// DefaultLease is how long a job's claim on its pull request lasts
	// without a heartbeat.
	DefaultLease = 2 * time.Minute
	// DefaultBusySnooze is how long a job waits when another job of its pull
	// request runs.
	DefaultBusySnooze = 10 * time.Second
	// DefaultPollInterval is how often idle workers look for jobs another
	// process queued (jobs queued by the same process start at once).
	DefaultPollInterval = time.Second
	// DefaultRescueMargin is added to the job timeout to decide when another
	// replica's job, still marked running, was lost with its process and is
	// run again.
	DefaultRescueMargin = 5 * time.Minute
)
