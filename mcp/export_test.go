package mcp

// ServedInFlight is the number of structured calls whose server content
// the import still keeps (0 once every call has finished).
func ServedInFlight(im *Imported) int {
	im.served.mu.Lock()
	defer im.served.mu.Unlock()
	return len(im.served.byToken)
}
