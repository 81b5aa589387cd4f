package pantry

// Event types pantry publishes: its manifest. The catalog must agree.
const (
	EventProjectCreated = "pantry.project.created"
	EventProjectUpdated = "pantry.project.updated"
	EventProjectDeleted = "pantry.project.deleted"
)

// EventTypes lists every type pantry emits.
func EventTypes() []string {
	return []string{EventProjectCreated, EventProjectUpdated, EventProjectDeleted}
}

// Event is a fact written to the outbox in the transaction that makes it
// true; Subject is the project's id.
type Event struct {
	Type    string
	Subject string
	Data    any
}

// ProjectData is the payload of pantry.project.created and .updated; each
// schema under schemas/events/pantry/ describes exactly these fields.
type ProjectData struct {
	ProjectID  string   `json:"project_id"`
	AccountID  string   `json:"account_id"`
	Slug       string   `json:"slug"`
	Name       string   `json:"name"`
	Visibility string   `json:"visibility"`
	Tags       []string `json:"tags"`
	Uses       []string `json:"uses"`
	// ActorID is the user who wrote; absent for an API key.
	ActorID string `json:"actor_id,omitempty"`
}

// ProjectDeleted is pantry.project.deleted's payload.
type ProjectDeleted struct {
	ProjectID string `json:"project_id"`
	AccountID string `json:"account_id"`
	Slug      string `json:"slug"`
	ActorID   string `json:"actor_id,omitempty"`
}

func projectEvent(typ string, p Project, actor string) Event {
	return Event{Type: typ, Subject: p.ID, Data: ProjectData{ProjectID: p.ID, AccountID: p.AccountID, Slug: p.Slug,
		Name: p.Name, Visibility: p.Visibility, Tags: nonNil(p.Tags), Uses: nonNil(p.Uses), ActorID: actor}}
}

func deletedEvent(p Project, actor string) Event {
	return Event{Type: EventProjectDeleted, Subject: p.ID,
		Data: ProjectDeleted{ProjectID: p.ID, AccountID: p.AccountID, Slug: p.Slug, ActorID: actor}}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
