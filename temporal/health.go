package temporal

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/sdk/client"
)

// checkLimit bounds one health check.
const checkLimit = 2 * time.Second

// Check asks the frontend whether it is serving (at most 2 s), for GET /health.
func Check(ctx context.Context, c client.Client) error {
	ctx, cancel := context.WithTimeout(ctx, checkLimit)
	defer cancel()
	if _, err := c.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		return fmt.Errorf("temporal health: %w", err)
	}
	return nil
}
