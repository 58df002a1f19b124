package httpsteps

import (
	"errors"
	"fmt"
	"time"
)

// ErrorKind classifies a failed step for retry decisions.
type ErrorKind string

// Error kinds.
const (
	KindRetryable   ErrorKind = "retryable"    // 5xx, 408, network error, timeout
	KindRateLimited ErrorKind = "rate_limited" // 429; RetryAfter holds the server's hint
	KindPermanent   ErrorKind = "permanent"    // other 4xx, unexpected status, oversized response
)

// StepError is a step whose request failed or whose status was neither expected nor not-found.
type StepError struct {
	StepIndex  int
	StepName   string
	Kind       ErrorKind
	Status     int           // 0 when no response arrived
	RetryAfter time.Duration // from Retry-After on 429 (and 503); 0 when absent
	Err        error
}

func (e *StepError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("step %d (%s): HTTP %d: %v", e.StepIndex, e.StepName, e.Status, e.Err)
	}
	return fmt.Sprintf("step %d (%s): %v", e.StepIndex, e.StepName, e.Err)
}

func (e *StepError) Unwrap() error { return e.Err }

// IsPermanent reports errors that retrying cannot fix: a *StepError of KindPermanent or a
// *BuildError.
func IsPermanent(err error) bool {
	var be *BuildError
	if errors.As(err, &be) {
		return true
	}
	var se *StepError
	return errors.As(err, &se) && se.Kind == KindPermanent
}

// IsRetryable reports a *StepError of KindRetryable or KindRateLimited.
func IsRetryable(err error) bool {
	var se *StepError
	return errors.As(err, &se) && (se.Kind == KindRetryable || se.Kind == KindRateLimited)
}

// IsRateLimited reports a 429 answer.
func IsRateLimited(err error) bool {
	var se *StepError
	return errors.As(err, &se) && se.Kind == KindRateLimited
}

// RetryAfter returns the server's Retry-After hint carried by err, if any.
func RetryAfter(err error) (time.Duration, bool) {
	var se *StepError
	if errors.As(err, &se) && se.RetryAfter > 0 {
		return se.RetryAfter, true
	}
	return 0, false
}
