package boxcmd

import (
	"context"
	"time"

	"github.com/platformco/platform/internal/box"
	"github.com/platformco/platform/internal/observe"
)

// countingStore is box's metrics seam: it wraps the store every use case
// goes through and counts grants, revokes, capabilities issued and
// redeemed by outcome (ok, or the error's code, a fixed set). Without
// metrics the store is used as it is.
type countingStore struct {
	box.Store
	grants, revokes, issued, redeemed *observe.Outcomes
}

// boxOutcomes are the outcome label's values: the answers the four
// operations give.
var boxOutcomes = []string{"ok", "existing", box.CodeNotFound, box.CodeConflict, box.CodeUnprocessable,
	box.CodeEntitlementRequired, box.CodeVersionNotGranted, box.CodeCapabilityUsed, box.CodeCapabilityExpired,
	box.CodeForbidden, box.CodeUnavailable, "error"}

func countOperations(s box.Store, m *observe.Metrics) box.Store {
	if m == nil {
		return s
	}
	counter := func(name, help string) *observe.Outcomes {
		return observe.NewOutcomes(m.Counter(name, help, "outcome"), boxOutcomes...)
	}
	return countingStore{
		Store:    s,
		grants:   counter("platform_box_grants_total", "Entitlement grants by outcome (existing: the account already held one)."),
		revokes:  counter("platform_box_revokes_total", "Entitlement revocations by outcome."),
		issued:   counter("platform_box_capabilities_issued_total", "Download capabilities asked for, by outcome (ok: issued)."),
		redeemed: counter("platform_box_capabilities_redeemed_total", "Capability redemptions by outcome (ok: redeemed)."),
	}
}

func (c countingStore) Grant(ctx context.Context, e box.NewEntitlement) (box.Entitlement, bool, error) {
	ent, created, err := c.Store.Grant(ctx, e)
	outcome := observe.OutcomeOf(err)
	if err == nil && !created {
		outcome = "existing"
	}
	c.grants.Inc(outcome)
	return ent, created, err
}

func (c countingStore) Revoke(ctx context.Context, id int64, actor string) (box.Entitlement, error) {
	ent, err := c.Store.Revoke(ctx, id, actor)
	c.revokes.Inc(observe.OutcomeOf(err))
	return ent, err
}

func (c countingStore) IssueCapability(ctx context.Context, nc box.NewCapability, authorize func(*box.Entitlement) error) (time.Time, error) {
	exp, err := c.Store.IssueCapability(ctx, nc, authorize)
	c.issued.Inc(observe.OutcomeOf(err))
	return exp, err
}

func (c countingStore) RedeemCapability(ctx context.Context, selector, digest string) (box.Redemption, error) {
	red, err := c.Store.RedeemCapability(ctx, selector, digest)
	c.redeemed.Inc(observe.OutcomeOf(err))
	return red, err
}
