package agent

import "cmp"

// CompareOutbox orders a request's outbox items as their commits were made:
// by claim epoch, then event id, compared as numbers (the key's zero padding
// is a width, not a bound), then recipient. Items of a continuation carry
// their child's epoch and event id, so they are not in their caller's order.
func CompareOutbox(a, b OutboxItem) int {
	return cmp.Or(cmp.Compare(a.Epoch, b.Epoch), cmp.Compare(a.EventID, b.EventID), cmp.Compare(a.Recipient, b.Recipient))
}
