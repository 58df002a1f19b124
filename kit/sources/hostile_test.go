package sources

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Hostile and malformed payloads are alerts too (issue 43): every plugin accepts them, does bounded
// work, and gives a title, a valid severity and notes.
func TestHostilePayloadsAreBounded(t *testing.T) {
	deep := strings.Repeat(`{"a":`, 5000) + `"x"` + strings.Repeat(`}`, 5000)
	ips := make([]string, 10_000)
	for i := range ips {
		ips[i] = fmt.Sprintf(`"10.%d.%d.1"`, i/250, i%250)
	}
	ipList := "[" + strings.Join(ips, ",") + "]"
	ents := make([]string, 10_000)
	for i := range ents {
		ents[i] = fmt.Sprintf(`{"Type":"ip","Address":"198.51.%d.%d"}`, i/250%250, i%250)
	}
	obs := make([]string, 10_000)
	for i := range obs {
		obs[i] = fmt.Sprintf(`{"type_id":2,"value":"198.51.%d.%d"}`, i/250%250, i%250)
	}
	manyStrings := make([]string, 50_000)
	for i := range manyStrings {
		manyStrings[i] = fmt.Sprintf(`"k%d":"v%d"`, i, i)
	}
	dots := `"` + strings.Repeat(".", 1<<20) + `"`
	// Every candidate key of every plugin with a value of the wrong kind.
	var wrong []string
	seen := map[string]bool{}
	for _, keys := range [][]string{sentinelTitleKeys, sentinelDescKeys, sentinelSeverityKeys, sentinelTimeKeys, elasticTitleKeys,
		elasticDescKeys, elasticWordKeys, elasticScoreKeys, elasticTimeKeys, genericTitleKeys, genericDescKeys, genericSeverityKeys,
		genericTimeKeys, ocsfTitleKeys, ocsfTimeKeys, splunkTitleKeys, splunkTimeKeys} {
		for _, k := range keys {
			if !seen[k] {
				seen[k] = true
				wrong = append(wrong, fmt.Sprintf(`%q:{"x":[true,null,1e308]}`, k))
			}
		}
	}
	payloads := map[string]string{
		"deep nesting":       `{"title":"t","nest":` + deep + `}`,
		"10 000 IPs":         `{"source.ip":` + ipList + `,"src_ip":` + ipList + `,"result":{"src":` + ipList + `},"Entities":` + ipList + `}`,
		"10 000 entities":    `{"Entities":[` + strings.Join(ents, ",") + `],"evidence":[` + strings.Join(ents, ",") + `]}`,
		"10 000 observables": `{"observables":[` + strings.Join(obs, ",") + `]}`,
		"50 000 strings":     `{` + strings.Join(manyStrings, ",") + `}`,
		"1 M dots":           `{"title":` + dots + `,"description":` + dots + `,"host.name":` + dots + `,"AlertName":` + dots + `}`,
		"invalid UTF-8":      "{\"title\":\"a\xff\xfeb\",\"properties\":{\"title\":\"\xc0\xaf\"},\"search_name\":\"\xed\xa0\x80\"}",
		"wrong types":        `{` + strings.Join(wrong, ",") + `}`,
		"entities string":    `{"Entities":"` + strings.Repeat(`[`, 3000) + `"}`,
	}
	for name, body := range payloads {
		var payload map[string]any
		require.NoError(t, json.Unmarshal([]byte(body), &payload), name)
		for _, p := range NewRegistry().All() {
			t.Run(name+"/"+p.Name(), func(t *testing.T) {
				start := time.Now()
				n := Normalize(p, payload, nil)
				took := time.Since(start)
				require.Less(t, took, 2*time.Second, "bounded work")
				require.NotEmpty(t, n.Title)
				require.LessOrEqual(t, len([]rune(n.Title)), MaxTitleLen)
				require.LessOrEqual(t, len([]rune(n.Description)), MaxDescriptionLen)
				require.True(t, n.Severity.Valid())
				require.LessOrEqual(t, len(n.Indicators), maxCandidates+maxGenericIndicators)
				require.LessOrEqual(t, len(n.Notes), maxNotes)
				for k, v := range n.Fields {
					if list, ok := v.([]string); ok {
						require.LessOrEqual(t, len(list), maxValuesPerField, k)
					}
				}
				if testing.Verbose() {
					t.Logf("%s: %s, %d candidates, %d notes", p.Name(), took, len(n.Indicators), len(n.Notes))
				}
			})
		}
	}
}

// The same payload always normalizes the same way (walks sort keys), so its fingerprint is stable.
func TestNormalizeIsDeterministic(t *testing.T) {
	body := `{"kibana.alert.rule.name":"r","source":{"ip":"192.0.2.1"},"destination.ip":"192.0.2.2","z":{"user":{"name":"a"}},
		"b":{"hash":{"sha256":"` + strings.Repeat("ab", 32) + `"}},"Entities":[{"Type":"ip","Address":"198.51.100.1"},{"Type":"host","FQDN":"h.example.com"}],
		"observables":[{"type_id":2,"value":"198.51.100.9"}],"agent":{"ip":"203.0.113.4"},"srcuser":"bob"}`
	for _, p := range NewRegistry().All() {
		var first Normalized
		for i := 0; i < 20; i++ {
			var payload map[string]any
			require.NoError(t, json.Unmarshal([]byte(body), &payload))
			n := Normalize(p, payload, nil)
			if i == 0 {
				first = n
				continue
			}
			require.Equal(t, first, n, p.Name())
		}
	}
}
