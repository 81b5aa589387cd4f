package billing

import (
	"context"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/ids"
	"github.com/platformco/platform/internal/products"
	"github.com/platformco/platform/internal/semver"
)

// Service is billing's application logic. Its methods take a Staff or a
// Buyer, which only the identity checks below produce.
type Service struct {
	store     Store
	identity  Identity
	processor Processor
	// ReturnURL is where checkout returns (the web app, behind the gateway).
	returnURL string
}

// NewService returns the service over its ports; returnURL is
// BILLING_PUBLIC_URL.
func NewService(store Store, identity Identity, processor Processor, returnURL string) *Service {
	return &Service{store: store, identity: identity, processor: processor, returnURL: strings.TrimRight(returnURL, "/")}
}

// Store returns the service's store (the webhook applier shares it).
func (s *Service) Store() Store { return s.store }

// Staff is a caller confirmed as platform staff.
type Staff struct{ UserID string }

// Member is a caller confirmed as a member of one account.
type Member struct {
	AccountID string
	Role      string
	Personal  bool
}

func unauthenticated() error { return errs.New(CodeUnauthenticated, "valid bearer token required") }

// NotFound is billing's 404.
func NotFound() error { return errs.New(CodeNotFound, "not found") }

// Staff checks with identity that token is platform staff.
func (s *Service) Staff(ctx context.Context, token string) (Staff, error) {
	if token == "" {
		return Staff{}, unauthenticated()
	}
	id, err := s.identity.OperatorMe(ctx, token)
	if err != nil {
		return Staff{}, err
	}
	return Staff{UserID: id}, nil
}

// Member checks with identity that token is a member of accountID; a
// malformed id names no account and is not sent.
func (s *Service) Member(ctx context.Context, token, accountID string) (Member, error) {
	if token == "" {
		return Member{}, unauthenticated()
	}
	id, ok := ids.Parse(accountID)
	if !ok {
		return Member{}, NotFound()
	}
	a, err := s.identity.Account(ctx, token, id)
	if err != nil {
		return Member{}, err
	}
	return Member{AccountID: id, Role: a.Role, Personal: a.Personal}, nil
}

// PlanInput is a plan's body; nil means absent.
type PlanInput struct {
	Name     *string
	Products *[]string
	// Amount and TrialDays are the JSON text as sent: only an integer
	// literal is accepted (a string, a fraction or an exponent is 422).
	Amount       *string
	Currency     *string
	Interval     *string
	TrialDays    *string
	VersionRange *string
	// Meter is the metric a recurring plan bills by; "" clears it.
	Meter  *string
	Active *bool
}

var currencyRE = regexp.MustCompile(`^[a-z]{3}$`)

// MaxAmount bounds an amount in minor units (Stripe's own limit is 8 digits
// for most currencies; a bigger one is a typo).
const MaxAmount = 99_999_999

type problems struct{ errs.Fields }

func (p *problems) err() error {
	if len(p.Fields) == 0 {
		return nil
	}
	return p.Fields.Err(CodeValidation, "the request has invalid fields")
}

// minor reads an integer amount of minor units: a fraction, an exponent, a
// negative or an absurd figure is refused.
func (p *problems) minor(field string, n *string, max int64) int64 {
	if n == nil {
		p.Add(field, "required")
		return 0
	}
	v, err := strconv.ParseInt(*n, 10, 64)
	switch {
	case err != nil:
		p.Add(field, "integer_minor_units")
	case v < 0:
		p.Add(field, "negative")
	case v > max:
		p.Add(field, "too_large")
	}
	return v
}

func (p *problems) plan(in PlanInput, pl *Plan, create bool) {
	if in.Name != nil || create {
		if in.Name == nil || strings.TrimSpace(*in.Name) == "" || len([]rune(*in.Name)) > 120 {
			p.Add("name", "required")
		} else {
			pl.Name = strings.TrimSpace(*in.Name)
		}
	}
	if in.Products != nil || create {
		if in.Products == nil || len(*in.Products) == 0 {
			p.Add("products", "required")
		} else {
			ps := slices.Clone(*in.Products)
			slices.Sort(ps)
			if len(slices.Compact(ps)) != len(*in.Products) {
				p.Add("products", "duplicate")
			}
			for _, x := range ps {
				if !Sellable(x) {
					p.Add("products", "not_sellable")
					break
				}
			}
			pl.Products = order(ps)
		}
	}
	if in.Amount != nil || create {
		pl.Amount = p.minor("amount", in.Amount, MaxAmount)
	}
	if in.Currency != nil || create {
		if in.Currency == nil || !currencyRE.MatchString(*in.Currency) {
			p.Add("currency", "iso4217_lower")
		} else if !create && *in.Currency != pl.Currency {
			p.Add("currency", "currency_mismatch")
		} else {
			pl.Currency = *in.Currency
		}
	}
	if in.Interval != nil || create {
		switch {
		case in.Interval == nil:
			p.Add("interval", "required")
		case *in.Interval != IntervalOnce && *in.Interval != IntervalMonth && *in.Interval != IntervalYear:
			p.Add("interval", "one_of")
		default:
			pl.Interval = *in.Interval
		}
	}
	if in.TrialDays != nil {
		pl.TrialDays = int(p.minor("trial_days", in.TrialDays, 730))
	}
	if in.VersionRange != nil {
		if _, err := semver.ParseRange(*in.VersionRange); err != nil || *in.VersionRange == "" {
			p.Add("version_range", "invalid")
		} else {
			v := *in.VersionRange
			pl.VersionRange = &v
		}
	}
	if in.Meter != nil {
		switch {
		case *in.Meter == "":
			pl.Meter = nil
		case !ValidMetric(*in.Meter):
			p.Add("meter", "metric_name")
		default:
			m := *in.Meter
			pl.Meter = &m
		}
	}
	if in.Active != nil {
		pl.Active = *in.Active
	}
	if pl.Interval == IntervalOnce && pl.Meter != nil {
		p.Add("meter", "once_is_not_metered")
	}
	if pl.Interval == IntervalOnce && pl.TrialDays != 0 {
		p.Add("trial_days", "once_has_no_trial")
	}
}

// order returns ps in the products list's order.
func order(ps []string) []string {
	out := make([]string, 0, len(ps))
	for _, x := range products.All() {
		if slices.Contains(ps, x) {
			out = append(out, x)
		}
	}
	return out
}

// CreatePlan validates in, makes the processor's product and price, and
// stores the plan. Errors: validation_failed, conflict, unavailable.
func (s *Service) CreatePlan(ctx context.Context, _ Staff, in PlanInput) (Plan, error) {
	pl := Plan{ID: ids.New(), Active: true}
	var p problems
	p.plan(in, &pl, true)
	if err := p.err(); err != nil {
		return Plan{}, err
	}
	return s.createPlan(ctx, pl)
}

func (s *Service) createPlan(ctx context.Context, pl Plan) (Plan, error) {
	price, err := s.processor.CreatePrice(ctx, pl)
	if err != nil {
		return Plan{}, err
	}
	pl.ProcessorPriceID = price
	if err := s.store.CreatePlan(ctx, pl); err != nil {
		return Plan{}, err
	}
	return s.store.Plan(ctx, pl.ID)
}

// UpdatePlan changes a plan; a price or interval change makes a new
// processor price (existing subscriptions keep theirs). Errors: not_found,
// validation_failed, unavailable.
func (s *Service) UpdatePlan(ctx context.Context, _ Staff, id string, in PlanInput) (Plan, error) {
	if !ValidUUID(id) {
		return Plan{}, NotFound()
	}
	return s.store.UpdatePlan(ctx, id, func(pl *Plan) (bool, error) {
		before := *pl
		before.Products = slices.Clone(pl.Products)
		var p problems
		p.plan(in, pl, false)
		if err := p.err(); err != nil {
			return false, err
		}
		if pl.Amount != before.Amount || pl.Interval != before.Interval || pl.TrialDays != before.TrialDays || !sameString(pl.Meter, before.Meter) {
			price, err := s.processor.CreatePrice(ctx, *pl)
			if err != nil {
				return false, err
			}
			pl.ProcessorPriceID = price
		}
		changed := pl.Name != before.Name || !slices.Equal(pl.Products, before.Products) || pl.Amount != before.Amount ||
			pl.Interval != before.Interval || pl.TrialDays != before.TrialDays || pl.Active != before.Active ||
			!sameString(pl.VersionRange, before.VersionRange) || !sameString(pl.Meter, before.Meter)
		return changed, nil
	})
}

func sameString(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// Plans lists active plans to anyone (the storefront).
func (s *Service) Plans(ctx context.Context) ([]Plan, error) { return s.store.Plans(ctx, true) }

// AllPlans lists every plan, inactive ones included, to staff.
func (s *Service) AllPlans(ctx context.Context, _ Staff) ([]Plan, error) {
	return s.store.Plans(ctx, false)
}

// SeedPlans are entitlements.md's four one-time plans, in US cents.
var SeedPlans = []Plan{
	{Name: "Platform", Products: []string{products.Platform}, Amount: 12000, Currency: "usd", Interval: IntervalOnce},
	{Name: "identity", Products: []string{products.Identity}, Amount: 24000, Currency: "usd", Interval: IntervalOnce},
	{Name: "courier", Products: []string{products.Courier}, Amount: 24000, Currency: "usd", Interval: IntervalOnce},
	{Name: "All three", Products: []string{products.Platform, products.Identity, products.Courier}, Amount: 42000, Currency: "usd", Interval: IntervalOnce},
}

// Seed creates each of SeedPlans that no plan of the same name has yet;
// it returns how many it created. Seeding twice creates nothing.
func (s *Service) Seed(ctx context.Context) (int, error) {
	have, err := s.store.Plans(ctx, false)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, sp := range SeedPlans {
		if slices.ContainsFunc(have, func(p Plan) bool { return p.Name == sp.Name }) {
			continue
		}
		sp.ID, sp.Active = ids.New(), true
		sp.Products = slices.Clone(sp.Products)
		if _, err := s.createPlan(ctx, sp); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// Checkout starts a Checkout Session for the caller's team account
// (billing.md §3). The caller must be its owner or admin; a personal
// account is refused. idempotencyKey, when set, returns the session made
// under it before and goes to the processor. Errors: unauthenticated,
// not_found, forbidden, personal_account, validation_failed, unavailable.
func (s *Service) Checkout(ctx context.Context, token, accountID, planID, idempotencyKey string) (Checkout, bool, error) {
	m, err := s.Member(ctx, token, accountID)
	if err != nil {
		return Checkout{}, false, err
	}
	if m.Role != "owner" && m.Role != "admin" {
		return Checkout{}, false, errs.New(CodeForbidden, "only the account's owner or an admin can buy for it")
	}
	if m.Personal {
		return Checkout{}, false, errs.New(CodePersonalAccount, "a paid unit goes to a team account; create one and buy for it")
	}
	if idempotencyKey != "" {
		if len(idempotencyKey) > 255 {
			return Checkout{}, false, (&problems{errs.Fields{{Field: "Idempotency-Key", Code: "too_long"}}}).err()
		}
		if c, err := s.store.CheckoutByKey(ctx, m.AccountID, idempotencyKey); err == nil {
			return c, false, nil
		} else if errs.Code(err) != CodeNotFound {
			return Checkout{}, false, err
		}
	}
	var plan Plan
	if !ValidUUID(planID) {
		return Checkout{}, false, (&problems{errs.Fields{{Field: "plan_id", Code: "unknown_plan"}}}).err()
	}
	if plan, err = s.store.Plan(ctx, planID); errs.Code(err) == CodeNotFound || (err == nil && !plan.Active) {
		return Checkout{}, false, (&problems{errs.Fields{{Field: "plan_id", Code: "unknown_plan"}}}).err()
	} else if err != nil {
		return Checkout{}, false, err
	}
	user, err := s.identity.Me(ctx, token)
	if err != nil {
		return Checkout{}, false, err
	}
	cust, err := s.customer(ctx, m.AccountID, user.Email)
	if err != nil {
		return Checkout{}, false, err
	}
	back := s.returnURL + "/app/accounts/" + m.AccountID + "/billing"
	pc, err := s.processor.CreateCheckout(ctx, CheckoutSpec{Mode: CheckoutMode(plan.Interval), CustomerID: cust.ProcessorCustomerID,
		PriceID: plan.ProcessorPriceID, Amount: plan.Amount, Currency: plan.Currency, Interval: plan.Interval, AccountID: m.AccountID, PlanID: plan.ID, UserID: user.ID, TrialDays: plan.TrialDays,
		Metered: plan.Meter != nil, SuccessURL: back + "?checkout=success", CancelURL: back + "?checkout=canceled", IdempotencyKey: idempotencyKey})
	if err != nil {
		return Checkout{}, false, err
	}
	return s.store.CreateCheckout(ctx, Checkout{ID: ids.New(), AccountID: m.AccountID, PlanID: plan.ID, UserID: user.ID,
		BuyerRole: m.Role, BuyerEmail: user.Email, ProcessorCheckoutID: pc.ID, URL: pc.URL, ExpiresAt: pc.ExpiresAt}, idempotencyKey)
}

// customer returns the account's customer, making it at the processor on
// the account's first checkout.
func (s *Service) customer(ctx context.Context, accountID, email string) (Customer, error) {
	c, err := s.store.Customer(ctx, accountID)
	if err == nil || errs.Code(err) != CodeNotFound {
		return c, err
	}
	pid, err := s.processor.CreateCustomer(ctx, CustomerSpec{AccountID: accountID, Email: email, IdempotencyKey: "customer-" + accountID})
	if err != nil {
		return Customer{}, err
	}
	c, _, err = s.store.CreateCustomer(ctx, Customer{ID: ids.New(), AccountID: accountID, ProcessorCustomerID: pid, Email: email})
	return c, err
}
