// Package activities holds Vigil's Temporal activities: methods on Activities, which carries
// their dependencies. Every exported method of *Activities is an activity type named after the
// method, so helpers stay unexported and renames are breaking changes for running workflows.
// Activities are retried: each one must be idempotent.
package activities

import "log/slog"

// Activities carries what the activities need; cmd/ builds one per worker process.
type Activities struct {
	Log *slog.Logger
}
