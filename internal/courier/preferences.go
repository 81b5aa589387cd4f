package courier

import (
	"context"
	"encoding/json"

	"github.com/platformco/platform/internal/errs"
)

// Categories lists the preference categories.
func Categories() []string {
	return []string{CategoryProductUpdates, CategoryReleaseAnnouncements, CategoryAccountActivity}
}

// Preferences are one user's notification preferences; every category is
// on until turned off.
type Preferences struct {
	ProductUpdates       bool `json:"product_updates"`
	ReleaseAnnouncements bool `json:"release_announcements"`
	AccountActivity      bool `json:"account_activity"`
}

// DefaultPreferences is what a user who never chose has.
func DefaultPreferences() Preferences { return Preferences{true, true, true} }

// On reports whether category is on.
func (p Preferences) On(category string) bool {
	switch category {
	case CategoryProductUpdates:
		return p.ProductUpdates
	case CategoryReleaseAnnouncements:
		return p.ReleaseAnnouncements
	case CategoryAccountActivity:
		return p.AccountActivity
	}
	return true
}

// PreferencesPatch sets the categories that are not nil.
type PreferencesPatch struct {
	ProductUpdates, ReleaseAnnouncements, AccountActivity *bool
}

// Apply returns p with the patch's categories set.
func (pp PreferencesPatch) Apply(p Preferences) Preferences {
	if pp.ProductUpdates != nil {
		p.ProductUpdates = *pp.ProductUpdates
	}
	if pp.ReleaseAnnouncements != nil {
		p.ReleaseAnnouncements = *pp.ReleaseAnnouncements
	}
	if pp.AccountActivity != nil {
		p.AccountActivity = *pp.AccountActivity
	}
	return p
}

// ParsePreferencesPatch reads a PATCH body: an object whose keys are
// categories with boolean values. An unknown category or a value that is
// not a boolean is CodeValidation naming the key.
func ParsePreferencesPatch(body map[string]json.RawMessage) (PreferencesPatch, error) {
	var pp PreferencesPatch
	var f errs.Fields
	for k, raw := range body {
		var v *bool
		switch k {
		case CategoryProductUpdates:
			v = new(bool)
			pp.ProductUpdates = v
		case CategoryReleaseAnnouncements:
			v = new(bool)
			pp.ReleaseAnnouncements = v
		case CategoryAccountActivity:
			v = new(bool)
			pp.AccountActivity = v
		default:
			f.Add(k, RuleUnknown)
			continue
		}
		if string(raw) == "null" || json.Unmarshal(raw, v) != nil {
			f.Add(k, RuleInvalid)
		}
	}
	return pp, f.Err(CodeValidation, "the request has invalid fields")
}

// User is a signed-in user as identity knows them.
type User struct {
	ID    string
	Email string
}

// Preferences returns the signed-in user's preferences (u as httpapi
// resolved it with identity).
func (s *Service) Preferences(ctx context.Context, u User) (Preferences, error) {
	return s.store.Preferences(ctx, u.ID)
}

// UpdatePreferences applies patch to the signed-in user's preferences and
// records their current address, so sends to it follow them.
func (s *Service) UpdatePreferences(ctx context.Context, u User, patch PreferencesPatch) (Preferences, error) {
	return s.store.UpdatePreferences(ctx, u.ID, NormalizeAddress(u.Email), patch)
}
