package muse

// EventTokensConsumed is the one event type muse publishes: its manifest.
const EventTokensConsumed = "muse.tokens.consumed"

// EventTypes lists every type muse emits; the catalog must agree.
func EventTypes() []string { return []string{EventTokensConsumed} }

// Event is a fact written to the outbox in the transaction that makes it
// true.
type Event struct {
	Type    string
	Subject string
	Data    any
}

// TokensConsumed is muse.tokens.consumed's payload (muse.md section 4);
// schemas/events/muse/tokens/consumed.schema.json describes exactly these
// fields. Its subject is "platform".
type TokensConsumed struct {
	AccountID        string `json:"account_id"`
	Alias            string `json:"alias"`
	Provider         string `json:"provider"`
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
	TotalTokens      int64  `json:"total_tokens"`
	Estimated        bool   `json:"estimated"`
}

// consumedEvent is the event that meters u.
func consumedEvent(u Usage) Event {
	return Event{Type: EventTokensConsumed, Subject: "platform", Data: TokensConsumed{
		AccountID: u.AccountID, Alias: u.Alias, Provider: u.Provider, PromptTokens: u.PromptTokens,
		CompletionTokens: u.CompletionTokens, TotalTokens: u.PromptTokens + u.CompletionTokens, Estimated: u.Estimated}}
}
