package courier

import "github.com/google/uuid"

// Event types courier publishes: its manifest. The catalog must agree.
const (
	EventEmailQueued            = "courier.email.queued"
	EventEmailDelivered         = "courier.email.delivered"
	EventEmailBounced           = "courier.email.bounced"
	EventEmailComplained        = "courier.email.complained"
	EventNotificationSuppressed = "courier.notification.suppressed"
)

// EventTypes lists every type courier emits.
func EventTypes() []string {
	return []string{EventEmailQueued, EventEmailDelivered, EventEmailBounced, EventEmailComplained, EventNotificationSuppressed}
}

// Event is a domain fact written to the outbox in the transaction that
// makes it true. Subject is the entity the fact is about.
type Event struct {
	Type    string
	Subject string
	Data    any
}

// recipientSpace names recipient ids: a recipient has no row of its own,
// so its id is derived from its normalized address.
var recipientSpace = uuid.MustParse("6f1c1d2e-3b0a-4c55-9a43-0c0f1e5d8a11")

// RecipientID is the bare UUID that stands for an address in events (the
// subject of courier.notification.suppressed and the id of its suppressions).
func RecipientID(address string) string {
	return uuid.NewSHA1(recipientSpace, []byte(NormalizeAddress(address))).String()
}

// The payloads; each schema under schemas/events/courier/ describes
// exactly these fields.
type (
	// EmailQueued is courier.email.queued's data; its subject is the email.
	EmailQueued struct {
		EmailID  string `json:"email_id"`
		Template string `json:"template"`
		To       string `json:"to"`
	}
	// EmailDelivered is courier.email.delivered's data.
	EmailDelivered struct {
		EmailID  string `json:"email_id"`
		Template string `json:"template"`
		To       string `json:"to"`
		Attempts int    `json:"attempts"`
	}
	// EmailBounced is courier.email.bounced's data; Detail is the SMTP
	// server's answer.
	EmailBounced struct {
		EmailID  string `json:"email_id"`
		Template string `json:"template"`
		To       string `json:"to"`
		Detail   string `json:"detail"`
	}
	// EmailComplained is courier.email.complained's data; its subject is
	// the suppression (the recipient's id).
	EmailComplained struct {
		SuppressionID string `json:"suppression_id"`
		To            string `json:"to"`
	}
	// NotificationSuppressed is courier.notification.suppressed's data: no
	// message id, because no message was attempted.
	NotificationSuppressed struct {
		RecipientID string `json:"recipient_id"`
		To          string `json:"to"`
		Template    string `json:"template"`
		Reason      string `json:"reason"`
	}
)

// QueuedEvent and the functions below build each event from its row.
func QueuedEvent(e Email) Event {
	return Event{Type: EventEmailQueued, Subject: e.ID, Data: EmailQueued{EmailID: e.ID, Template: e.Template, To: e.To}}
}

// SuppressedEvent is courier.notification.suppressed for a skipped send.
func SuppressedEvent(to, template, reason string) Event {
	id := RecipientID(to)
	return Event{Type: EventNotificationSuppressed, Subject: id,
		Data: NotificationSuppressed{RecipientID: id, To: to, Template: template, Reason: reason}}
}

// DeliveredEvent is courier.email.delivered.
func DeliveredEvent(id, template, to string, attempts int) Event {
	return Event{Type: EventEmailDelivered, Subject: id, Data: EmailDelivered{EmailID: id, Template: template, To: to, Attempts: attempts}}
}

// BouncedEvent is courier.email.bounced.
func BouncedEvent(id, template, to, detail string) Event {
	return Event{Type: EventEmailBounced, Subject: id, Data: EmailBounced{EmailID: id, Template: template, To: to, Detail: truncate(detail, 500)}}
}

// ComplainedEvent is courier.email.complained.
func ComplainedEvent(s Suppression) Event {
	return Event{Type: EventEmailComplained, Subject: s.ID, Data: EmailComplained{SuppressionID: s.ID, To: s.Address}}
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}
