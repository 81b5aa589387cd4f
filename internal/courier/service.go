package courier

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/google/uuid"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/ids"
	"github.com/platformco/platform/internal/seal"
)

// Preference categories (notification preferences).
const (
	CategoryProductUpdates       = "product_updates"
	CategoryReleaseAnnouncements = "release_announcements"
	CategoryAccountActivity      = "account_activity"
)

// Service is courier's application logic over its ports.
type Service struct {
	store  Store
	sealer *seal.Sealer
	// queued receives (without blocking) when a message was queued, to
	// wake the send loop.
	queued chan struct{}
	// push is on (a VAPID key pair is configured): sends queue pushes.
	push bool
	// pushed, when set, wakes the push loop when pushes were queued.
	pushed func()
}

// EnablePush turns push on: from then on a send queues a push to each
// subscription of its recipient (courier.md section 6), and wake (when
// not nil) is called after each send that queued some. Without it, push
// is off and sends queue none, even to subscriptions made while it was
// on: nothing would send them.
func (s *Service) EnablePush(wake func()) { s.push, s.pushed = true, wake }

// NewService returns a service over store, sealing template data with
// sealer.
func NewService(store Store, sealer *seal.Sealer) *Service {
	return &Service{store: store, sealer: sealer, queued: make(chan struct{}, 1)}
}

// Send validates and records a send request from caller (a service
// name). The message is queued, or recorded as suppressed when the address
// is suppressed for a reason that applies to the template (a hard bounce
// always, a complaint except for security messages) or when the
// recipient's preferences turn the template's category off (never for
// security messages).
// Errors: CodeValidation.
func (s *Service) Send(ctx context.Context, caller string, req SendRequest) (Email, error) {
	data, err := req.validate()
	if err != nil {
		return Email{}, err
	}
	in := NewEmail{ID: ids.New(), Template: req.Template, To: req.To, Locale: "en", RequestedBy: caller}
	if s.push {
		in.PushCategory = PushCategory(req.Template)
	}
	if req.Locale != nil {
		in.Locale = *req.Locale
	}
	plain, err := json.Marshal(data)
	if err != nil {
		return Email{}, err
	}
	in.SealedData = s.sealer.Seal(in.ID, plain)
	spec := templateSpecs[req.Template]
	decide := func(reasons []string, prefs *Preferences) string {
		switch {
		case slices.Contains(reasons, ReasonHardBounce), !spec.security && slices.Contains(reasons, ReasonComplaint):
			return SkipAddressSuppressed
		case !spec.security && prefs != nil && spec.category != "" && !prefs.On(spec.category):
			return SkipPreferenceOff
		}
		return ""
	}
	e, err := s.store.CreateEmail(ctx, in, decide)
	if err == nil && e.Status == StatusQueued {
		select {
		case s.queued <- struct{}{}:
		default:
		}
	}
	if err == nil && e.Pushes > 0 && s.pushed != nil {
		s.pushed()
	}
	return e, err
}

// Email returns a message and its status history, never its data.
// Errors: CodeNotFound.
func (s *Service) Email(ctx context.Context, id string) (Email, error) {
	if _, err := uuid.Parse(id); err != nil {
		return Email{}, errs.New(CodeNotFound, "no such email")
	}
	return s.store.Email(ctx, id)
}

// ReportComplaint suppresses address at once and emits
// courier.email.complained (once per address). Errors: CodeValidation.
func (s *Service) ReportComplaint(ctx context.Context, address, reason string) (Suppression, error) {
	var f errs.Fields
	switch {
	case address == "":
		f.Add("address", RuleRequired)
	case !validAddress(address):
		f.Add("address", RuleInvalid)
	}
	switch {
	case reason == "":
		f.Add("reason", RuleRequired)
	case reason != ReasonComplaint:
		f.Add("reason", RuleInvalid)
	}
	if err := f.Err(CodeValidation, "the request has invalid fields"); err != nil {
		return Suppression{}, err
	}
	sup, _, err := s.store.Suppress(ctx, address, ReasonComplaint)
	return sup, err
}

// OpenData opens a claimed message's template data.
func (s *Service) OpenData(c Claimed) (map[string]string, error) {
	plain, err := s.sealer.Open(c.ID, c.SealedData)
	if err != nil {
		return nil, err
	}
	var data map[string]string
	if err := json.Unmarshal(plain, &data); err != nil {
		return nil, err
	}
	return data, nil
}

// OpenPushData opens a claimed push's template data (sealed for its
// email's id).
func (s *Service) OpenPushData(c ClaimedPush) (map[string]string, error) {
	return s.OpenData(Claimed{ID: c.EmailID, SealedData: c.SealedData})
}
