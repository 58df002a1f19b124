package activities

import (
	"context"
	"fmt"
	"os"
	"time"

	"go.temporal.io/sdk/activity"
)

// ProbeResult says which worker ran the probe activity, and when (by the worker's clock).
type ProbeResult struct {
	Host string    `json:"host"`
	Time time.Time `json:"time"`
}

// Probe reports the worker's host name and clock. It has no side effects; workflows.Probe runs it
// to show that a worker is polling the actions queue end to end.
func (a *Activities) Probe(ctx context.Context) (ProbeResult, error) {
	host, err := os.Hostname()
	if err != nil {
		return ProbeResult{}, fmt.Errorf("probe: host name: %w", err)
	}
	res := ProbeResult{Host: host, Time: time.Now().UTC()}
	activity.GetLogger(ctx).Debug("probe", "host", res.Host)
	return res, nil
}
