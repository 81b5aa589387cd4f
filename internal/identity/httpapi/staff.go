package httpapi

import (
	"net/http"
	"time"

	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/identity"
)

// staffAccountBody is an account as staff read it: no role, since the
// reader holds none in it.
type staffAccountBody struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Slug      string    `json:"slug"`
	Personal  bool      `json:"personal"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

func (a *api) staffAccount(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	acc, err := a.svc.StaffAccount(r.Context(), p, r.PathValue("accountID"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]staffAccountBody{"account": {
		acc.ID, acc.Name, acc.Slug, acc.Personal, acc.CreatedAt.UTC(), acc.UpdatedAt.UTC()}})
}

func (a *api) staffAccounts(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	page, ok := a.staffPage(w, r, p)
	if !ok {
		return
	}
	accounts, next, err := a.svc.StaffAccounts(r.Context(), p, r.URL.Query().Get("query"), page)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	out := struct {
		Accounts   []staffAccountBody `json:"accounts"`
		NextCursor *string            `json:"next_cursor"`
	}{Accounts: make([]staffAccountBody, len(accounts))}
	for i, acc := range accounts {
		out.Accounts[i] = staffAccountBody{acc.ID, acc.Name, acc.Slug, acc.Personal, acc.CreatedAt.UTC(), acc.UpdatedAt.UTC()}
	}
	if next != nil {
		c := next.Encode()
		out.NextCursor = &c
	}
	httpx.WriteJSON(w, http.StatusOK, out)
}

// staffChangeBody is one row of the trail of staff changes; email is null
// once the user is gone.
type staffChangeBody struct {
	ID         string    `json:"id"`
	UserID     string    `json:"user_id"`
	Email      *string   `json:"email"`
	Action     string    `json:"action"`
	Actor      string    `json:"actor"`
	OccurredAt time.Time `json:"occurred_at"`
}

func (a *api) staffChanges(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	page, ok := a.staffPage(w, r, p)
	if !ok {
		return
	}
	changes, next, err := a.svc.StaffChanges(r.Context(), p, page)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	out := struct {
		Changes    []staffChangeBody `json:"changes"`
		NextCursor *string           `json:"next_cursor"`
	}{Changes: make([]staffChangeBody, len(changes))}
	for i, c := range changes {
		out.Changes[i] = staffChangeBody{ID: c.ID, UserID: c.UserID, Action: c.Action, Actor: c.Actor, OccurredAt: c.At.UTC()}
		if c.Email != "" {
			out.Changes[i].Email = &c.Email
		}
	}
	if next != nil {
		c := next.Encode()
		out.NextCursor = &c
	}
	httpx.WriteJSON(w, http.StatusOK, out)
}

func (a *api) staffMembers(w http.ResponseWriter, r *http.Request, p identity.Principal) {
	// Staff is checked before the query is read, so a customer learns
	// nothing from a malformed cursor either.
	page, ok := a.staffPage(w, r, p)
	if !ok {
		return
	}
	members, next, err := a.svc.StaffMembers(r.Context(), p, r.PathValue("accountID"), page)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeMemberPage(w, members, next)
}

// writeMemberPage answers one page of memberships as both member lists do:
// {members, next_cursor}, next_cursor null on the last page.
func writeMemberPage(w http.ResponseWriter, members []identity.Membership, next *identity.Cursor) {
	out := struct {
		Members    []membershipBody `json:"members"`
		NextCursor *string          `json:"next_cursor"`
	}{Members: make([]membershipBody, len(members))}
	for i, m := range members {
		out.Members[i] = membershipOut(m)
	}
	if next != nil {
		c := next.Encode()
		out.NextCursor = &c
	}
	httpx.WriteJSON(w, http.StatusOK, out)
}

// staffPage refuses a caller who is not staff, then reads the page's
// cursor and limit: staff is checked before the query is read, so a
// customer learns nothing from a malformed cursor either.
func (a *api) staffPage(w http.ResponseWriter, r *http.Request, p identity.Principal) (identity.PageRequest, bool) {
	if !p.User.Staff {
		a.fail(w, r, identity.ErrNotStaff)
		return identity.PageRequest{}, false
	}
	page, err := identity.ParsePage(r.URL.Query().Get("cursor"), r.URL.Query().Get("limit"))
	if err != nil {
		a.fail(w, r, err)
		return identity.PageRequest{}, false
	}
	return page, true
}
