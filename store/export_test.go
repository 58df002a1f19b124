package store

// WithSearchCap returns a Store sharing s's pool whose `q` searches hand over to the walk and count
// routes past n matches (ListAlerts), so a test reaches every route with few alerts.
func WithSearchCap(s *Store, n int64) *Store {
	c := *s
	c.searchCap = n
	return &c
}
