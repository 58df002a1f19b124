package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-soc/vigil/domain/retention"
)

// The three retention settings: defaults, and a clear start error for negative, non-integer,
// oversized and hostile values, each naming its variable.
func TestRetentionConfig(t *testing.T) {
	cfg, err := loadConfig(envOf(nil))
	require.NoError(t, err)
	require.Equal(t, retention.Policy{RawPayloadDays: 0, AlertDays: 0, AuditDays: 400}, cfg.Retention)

	cfg, err = loadConfig(envOf(map[string]string{"RAW_PAYLOAD_RETENTION_DAYS": "30", "ALERT_RETENTION_DAYS": " 365 ",
		"AUDIT_RETENTION_DAYS": "0"}))
	require.NoError(t, err)
	require.Equal(t, retention.Policy{RawPayloadDays: 30, AlertDays: 365, AuditDays: 0}, cfg.Retention)

	for _, bad := range []string{"-1", "30d", "1.5", "abc", "99999999999999999999", "36501", "30; DROP TABLE alerts", "0x10"} {
		for _, name := range []string{"RAW_PAYLOAD_RETENTION_DAYS", "ALERT_RETENTION_DAYS", "AUDIT_RETENTION_DAYS"} {
			_, err := loadConfig(envOf(map[string]string{name: bad}))
			require.Error(t, err, "%s=%q", name, bad)
			require.Contains(t, err.Error(), name)
		}
	}
}
