package main

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// CASE_GROUPING_WINDOW_HOURS: 24 by default, 0 turns grouping off, and a clear start error naming
// the variable for negative, non-integer, oversized and hostile values.
func TestCaseGroupingConfig(t *testing.T) {
	cfg, err := loadConfig(envOf(nil))
	require.NoError(t, err)
	require.Equal(t, 24, cfg.CaseGroupingHours)
	for v, want := range map[string]int{"0": 0, " 72 ": 72, "8760": 8760} {
		cfg, err = loadConfig(envOf(map[string]string{"CASE_GROUPING_WINDOW_HOURS": v}))
		require.NoError(t, err, v)
		require.Equal(t, want, cfg.CaseGroupingHours, v)
	}
	for _, bad := range []string{"-1", "24h", "1.5", "abc", "true", "99999999999999999999", "8761", "24; DROP TABLE cases", "0x18", "２４"} {
		_, err := loadConfig(envOf(map[string]string{"CASE_GROUPING_WINDOW_HOURS": bad}))
		require.Error(t, err, bad)
		require.Contains(t, err.Error(), "CASE_GROUPING_WINDOW_HOURS", bad)
	}
}
