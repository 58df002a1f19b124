// Package temporal wires Vigil to Temporal: the client, task queues, search attributes, worker
// registration and lifecycle, starters and health. It is the only package that knows both the
// workflows and the activities. The SDK's own temporal package is imported as sdktemporal.
package temporal

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
