package parlor

import (
	"context"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// EntitlementEvent is one grant or revoke of the audit trail (box).
type EntitlementEvent struct {
	ID            int64     `json:"id"`
	Action        string    `json:"action"`
	EntitlementID int64     `json:"entitlement_id"`
	AccountID     string    `json:"account_id"`
	Product       string    `json:"product"`
	ActorUserID   string    `json:"actor_user_id"`
	OccurredAt    time.Time `json:"occurred_at"`
}

// StaffChange is one row of the trail of staff changes (identity).
type StaffChange struct {
	ID         string    `json:"id"`
	UserID     string    `json:"user_id"`
	Email      *string   `json:"email"`
	Action     string    `json:"action"`
	Actor      string    `json:"actor"`
	OccurredAt time.Time `json:"occurred_at"`
}

// AuditTrail reads a page of every grant and revoke, newest first
// (staff only); next is the older page's cursor, empty on the last.
func (c *Client) AuditTrail(ctx context.Context, token, cursor string) (events []EntitlementEvent, next string, err error) {
	var out struct {
		Events     []EntitlementEvent `json:"events"`
		NextCursor *string            `json:"next_cursor"`
	}
	err = c.do(ctx, token, "GET", "/v1/operator/audit-events"+cursorQuery(cursor), nil, &out)
	return out.Events, deref(out.NextCursor), err
}

// StaffChanges reads a page of the trail of staff changes, newest first
// (staff only).
func (c *Client) StaffChanges(ctx context.Context, token, cursor string) (changes []StaffChange, next string, err error) {
	var out struct {
		Changes    []StaffChange `json:"changes"`
		NextCursor *string       `json:"next_cursor"`
	}
	err = c.do(ctx, token, "GET", "/v1/operator/staff-changes"+cursorQuery(cursor), nil, &out)
	return out.Changes, deref(out.NextCursor), err
}

func cursorQuery(cursor string) string {
	if cursor == "" {
		return ""
	}
	return "?cursor=" + url.QueryEscape(cursor)
}

// auditData is the console's audit trail: a page of grants and revokes
// and a page of staff changes, each with the cursor of its older page
// (the other trail's cursor is carried in the link, so each pages alone).
type auditData struct {
	Events       []EntitlementEvent
	Names        map[string]string
	EventsCursor string
	NextEvents   string
	Changes      []StaffChange
	StaffCursor  string
	NextChanges  string
}

// OlderEvents is the link to the older page of grants and revokes.
func (d auditData) OlderEvents() string {
	return auditLink(d.NextEvents, d.StaffCursor)
}

// OlderChanges is the link to the older page of staff changes.
func (d auditData) OlderChanges() string {
	return auditLink(d.EventsCursor, d.NextChanges)
}

func auditLink(events, staff string) string {
	q := url.Values{}
	if events != "" {
		q.Set("events", events)
	}
	if staff != "" {
		q.Set("staff", staff)
	}
	return "/operator/audit?" + q.Encode()
}

// operatorAudit is the console's page of who granted, revoked and made
// staff. Both trails are read at once.
func (s *server) operatorAudit(w http.ResponseWriter, r *http.Request, sess *session) {
	d := auditData{EventsCursor: r.URL.Query().Get("events"), StaffCursor: r.URL.Query().Get("staff")}
	var (
		eventsErr, staffErr error
		wg                  sync.WaitGroup
	)
	wg.Go(func() { d.Events, d.NextEvents, eventsErr = s.api.AuditTrail(r.Context(), sess.Token, d.EventsCursor) })
	d.Changes, d.NextChanges, staffErr = s.api.StaffChanges(r.Context(), sess.Token, d.StaffCursor)
	wg.Wait()
	if eventsErr != nil {
		s.fail(w, r, &sess.Me, eventsErr)
		return
	}
	if staffErr != nil {
		s.fail(w, r, &sess.Me, staffErr)
		return
	}
	ids := make([]string, 0, len(d.Events))
	for _, ev := range d.Events {
		ids = append(ids, ev.AccountID)
	}
	d.Names = s.namesOf(r, sess, ids)
	s.render(w, r, http.StatusOK, "operator_audit", &page{Title: "Audit trail", User: &sess.Me, Tab: "audit", Data: d})
}
