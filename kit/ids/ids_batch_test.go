package ids_test

import (
	"testing"

	"github.com/google/uuid"

	"github.com/vigil-soc/vigil/kit/ids"
)

// A batch regrouped after a crash (the same first event, others beside it) gets another workflow id,
// so its start is not taken for the first batch's ("already started") and its other events are not
// lost; the same batch started twice gets one id.
func TestAgentEventBatchIDNamesEveryEvent(t *testing.T) {
	a, b, c := uuid.New(), uuid.New(), uuid.New()
	ab := ids.AgentEventBatch([]uuid.UUID{a, b})
	if again := ids.AgentEventBatch([]uuid.UUID{a, b}); again != ab {
		t.Fatalf("the same batch got %s, then %s", ab, again)
	}
	for _, other := range [][]uuid.UUID{{a}, {a, b, c}, {a, c}, {b, a}} {
		if ab == ids.AgentEventBatch(other) {
			t.Fatalf("batch %v shares the id of [a b]", other)
		}
	}
}
