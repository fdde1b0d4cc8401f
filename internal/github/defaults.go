package github

import "time"

// Defaults of the GitHub client and webhook receiver. A zero option takes
// them; the `app:` section of aster.yaml starts from them.
const (
	// DefaultAPIURL is the REST API root used when none is given.
	DefaultAPIURL = "https://api.github.com/"
	// DefaultWebURL is github.com's web root, where the App manifest is posted.
	DefaultWebURL = "https://github.com/"
	// DefaultMaxTarballBytes caps a repository tarball download.
	DefaultMaxTarballBytes int64 = 512 << 20
	// DefaultMaxFileBytes caps one file read through the contents API.
	DefaultMaxFileBytes int64 = 1 << 20
	// DefaultMaxDiffBytes caps a pull request or compare diff.
	DefaultMaxDiffBytes int64 = 50 << 20
	// DefaultRetryAttempts is how many tries one API operation gets, the first included.
	DefaultRetryAttempts = 5
	// DefaultRetryBase is the first backoff; it doubles each try, with jitter, up to
	// DefaultRetryMax.
	DefaultRetryBase = time.Second
	DefaultRetryMax  = 30 * time.Second
	// DefaultMaxRateLimitWait is the longest rate-limit wait slept; a longer one is returned.
	DefaultMaxRateLimitWait = 2 * time.Minute
	// DefaultWebhookInflightBytes bounds the webhook body bytes being read at once, across
	// all deliveries: two of GitHub's 25 MB maximum and room for many ordinary ones (tens of
	// KB). Past it a delivery is answered 429 before its body is read.
	DefaultWebhookInflightBytes int64 = 64 << 20
	// DefaultWebhookBodyTimeout is how long a webhook body may take to arrive after its
	// headers; GitHub itself gives up on a delivery after 10 seconds.
	DefaultWebhookBodyTimeout = 10 * time.Second
)
