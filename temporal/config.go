// Package temporal wires Vigil to Temporal: the client, task queues, search attributes, worker
// registration and lifecycle, starters and health. It is the only package that knows both the
// workflows and the activities. The SDK's own temporal package is imported as sdktemporal.
package temporal

import (
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
)

// Defaults for Config.
const (
	DefaultNamespace       = "default"
	DefaultTaskQueuePrefix = "vigil"
)

// Config says where Temporal is and how Vigil names its task queues there.
type Config struct {
	// HostPort is the frontend gRPC address, e.g. "127.0.0.1:7233".
	HostPort string
	// Namespace defaults to "default".
	Namespace string
	// TaskQueuePrefix defaults to "vigil"; tests use a unique prefix per test binary so binaries
	// that share one server never take each other's tasks.
	TaskQueuePrefix string

	// TLSCertFile and TLSKeyFile (PEM, both or neither) are the client certificate of mTLS, e.g. a
	// Temporal Cloud namespace's; TLSCAFile (PEM) the roots that verify the server (the system's
	// when empty); TLSServerName overrides the name checked in the server's certificate. Any of them
	// turns TLS on.
	TLSCertFile, TLSKeyFile, TLSCAFile, TLSServerName string
	// APIKey authenticates with an API key (Temporal Cloud); it turns TLS on by itself.
	APIKey string
	// Metrics receives the SDK's metrics (NewMetricsHandler); nil drops them.
	Metrics client.MetricsHandler
	// Codec encodes every payload the client (and every worker built on it) hands to Temporal:
	// inputs, results, signals, queries, memo and failure messages (API.md §16,
	// temporal/payloadcodec). Required: Dial and DialLazy refuse a Config without one.
	Codec converter.PayloadCodec
}

// WorkerTuning are the per-worker limits; RunWorkersTuned applies them to each task queue's
// worker. A zero field keeps the SDK's default (pollers 2, executions 1000 each).
type WorkerTuning struct {
	WorkflowTaskPollers        int // concurrent workflow task polls (at least 2 when set)
	ActivityTaskPollers        int // concurrent activity task polls
	MaxConcurrentWorkflowTasks int // workflow tasks executing at once
	MaxConcurrentActivities    int // activities executing at once
	MaxConcurrentLocalActs     int // local activities executing at once
}

// QueueKind is the role of a task queue; Register decides what runs on each kind, and Queues
// turns a kind into the queue's name under a prefix.
type QueueKind string

// The task queue kinds.
const (
	QueuePipeline   QueueKind = "pipeline"   // alert pipelines
	QueueEnrichment QueueKind = "enrichment" // provider calls
	QueueActions    QueueKind = "actions"    // workflow runs, webhooks, notifications, probes
)

// QueueKinds lists every kind, in a fixed order.
func QueueKinds() []QueueKind {
	return []QueueKind{QueuePipeline, QueueEnrichment, QueueActions}
}

// Queues holds the task queue names: <prefix>-pipeline, <prefix>-enrichment, <prefix>-actions.
type Queues struct {
	Pipeline   string
	Enrichment string
	Actions    string
}

// NewQueues names the queues under prefix ("" means DefaultTaskQueuePrefix).
func NewQueues(prefix string) Queues {
	if prefix == "" {
		prefix = DefaultTaskQueuePrefix
	}
	return Queues{
		Pipeline:   prefix + "-" + string(QueuePipeline),
		Enrichment: prefix + "-" + string(QueueEnrichment),
		Actions:    prefix + "-" + string(QueueActions),
	}
}

// Name returns the queue name for kind, "" for an unknown kind.
func (q Queues) Name(kind QueueKind) string {
	switch kind {
	case QueuePipeline:
		return q.Pipeline
	case QueueEnrichment:
		return q.Enrichment
	case QueueActions:
		return q.Actions
	}
	return ""
}

// Queues returns the queue names of cfg.
func (cfg Config) Queues() Queues { return NewQueues(cfg.TaskQueuePrefix) }

func (cfg Config) namespace() string {
	if cfg.Namespace == "" {
		return DefaultNamespace
	}
	return cfg.Namespace
}
