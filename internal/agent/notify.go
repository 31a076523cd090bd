package agent

// Notification events (DESIGN §11 Webhooks): what a webhook subscribes to.
const (
	EventRequestPaused    = "request.paused"
	EventRequestCompleted = "request.completed"
	EventRequestFailed    = "request.failed"
	EventRequestCanceled  = "request.canceled"
)

// NotificationEvents are the event types a webhook may subscribe to.
var NotificationEvents = []string{EventRequestPaused, EventRequestCompleted, EventRequestFailed, EventRequestCanceled}

// Notification is a webhook an agent's definition configures (DESIGN §11):
// the operator's URL, never a caller's.
type Notification struct {
	URL string
	// Events it is sent for (a subset of NotificationEvents).
	Events []string
	// Secret is the HMAC-SHA256 key: the base64-decoded bytes after
	// "whsec_" of the configured secret.
	Secret []byte
}

// Wants tells whether the webhook subscribes to event.
func (n Notification) Wants(event string) bool {
	for _, e := range n.Events {
		if e == event {
			return true
		}
	}
	return false
}

// Waiter kinds: how a direct caller waits on a request (DESIGN §11).
const (
	// WaiterTaskToken is a Step Functions task token ($$.Task.Token).
	WaiterTaskToken = "task_token"
	// WaiterCallback is a Lambda durable execution's callback id.
	WaiterCallback = "callback_id"
)

// on_pause values.
const (
	OnPauseWait   = "wait"
	OnPauseReturn = "return"
)

// Waiter is a direct caller that waits for a request's end through the
// outbox: a Step Functions task token or a durable execution's callback.
type Waiter struct {
	Kind string // WaiterTaskToken or WaiterCallback
	ID   string // the token or the callback id
	// OnPause is OnPauseWait (the default: a pause only heartbeats) or
	// OnPauseReturn (a pause answers with the Paused RequestResult).
	OnPause string
}
