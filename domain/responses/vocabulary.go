package responses

// RiskLevels returns every risk a workflow declares, the least first (API.md §8): the order the
// launcher sorts by (riskRank) and the list REST and MCP accept.
func RiskLevels() []string { return []string{"low", "medium", "high", "critical"} }

// WorkflowTypes returns every workflow type (API.md §8): run against one indicator, or against an
// alert (the run then needs the alert's uuid).
func WorkflowTypes() []string { return []string{"indicator", "alert"} }
