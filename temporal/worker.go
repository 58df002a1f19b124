package temporal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/vigil-soc/vigil/activities"
)

// Registrar is what Register needs to register workflows and activities. A worker.Worker
// satisfies it, and so does *testsuite.TestWorkflowEnvironment, so workflow unit tests can reuse
// the exact production registration.
type Registrar interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}

// countingRegistrar counts registrations so RunWorkers can leave empty queues unpolled (the SDK
// refuses to start a worker with nothing registered).
type countingRegistrar struct {
	r Registrar
	n int
}

func (c *countingRegistrar) RegisterWorkflowWithOptions(w any, o workflow.RegisterOptions) {
	c.n++
	c.r.RegisterWorkflowWithOptions(w, o)
}

func (c *countingRegistrar) RegisterActivityWithOptions(a any, o activity.RegisterOptions) {
	c.n++
	c.r.RegisterActivityWithOptions(a, o)
}

// RunWorkers is RunWorkersTuned with the SDK's default limits.
func RunWorkers(ctx context.Context, c client.Client, queues Queues, acts *activities.Activities, log *slog.Logger) error {
	return RunWorkersTuned(ctx, c, queues, acts, log, WorkerTuning{})
}

// RunWorkersTuned runs one worker per task queue kind that Register gives something to, and blocks
// until ctx ends (then stops them and returns nil) or a worker fails fatally (then stops the
// others and returns the error).
func RunWorkersTuned(ctx context.Context, c client.Client, queues Queues, acts *activities.Activities, log *slog.Logger, tuning WorkerTuning) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	type named struct {
		queue string
		w     worker.Worker
	}
	var workers []named
	for _, kind := range QueueKinds() {
		queue := queues.Name(kind)
		w := worker.New(c, queue, tuning.options())
		counter := &countingRegistrar{r: w}
		Register(kind, counter, acts)
		if counter.n == 0 {
			log.Debug("nothing registered for task queue; not polling it", "queue", queue)
			continue
		}
		workers = append(workers, named{queue: queue, w: w})
	}
	if len(workers) == 0 {
		return errors.New("run workers: nothing is registered on any task queue")
	}

	interrupt := make(chan any)
	results := make(chan error, len(workers))
	for _, n := range workers {
		go func() {
			if err := n.w.Run(interrupt); err != nil {
				results <- fmt.Errorf("worker on %s: %w", n.queue, err)
				return
			}
			results <- nil
		}()
		log.Info("temporal worker started", "queue", n.queue)
	}

	pending := len(workers)
	var errs []error
	select {
	case <-ctx.Done():
	case err := <-results:
		pending--
		errs = append(errs, err)
	}
	close(interrupt)
	for ; pending > 0; pending-- {
		errs = append(errs, <-results)
	}
	log.Info("temporal workers stopped")
	return errors.Join(errs...)
}

// options turns the tuning into worker options; zero fields stay zero, which the SDK reads as its
// defaults.
func (t WorkerTuning) options() worker.Options {
	return worker.Options{
		MaxConcurrentWorkflowTaskPollers:        t.WorkflowTaskPollers,
		MaxConcurrentActivityTaskPollers:        t.ActivityTaskPollers,
		MaxConcurrentWorkflowTaskExecutionSize:  t.MaxConcurrentWorkflowTasks,
		MaxConcurrentActivityExecutionSize:      t.MaxConcurrentActivities,
		MaxConcurrentLocalActivityExecutionSize: t.MaxConcurrentLocalActs,
	}
}
