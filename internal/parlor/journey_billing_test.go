//go:build e2e

package parlor_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// journeyBilling is issue 51's walk in the browser: the owner buys the
// identity plan for the team (which holds platform, granted by hand
// earlier) through the test processor's hosted checkout with Stripe's test
// card, the receipt reaches the local mailbox, the operator finds the
// payment in the inbox with the four facts checked and grants it, and the
// owner's Entitlements page lists identity. Then /pricing and the Billing
// page at a phone's width, and staff making a plan from the console.
func journeyBilling(t *testing.T, owner, _, operator *browser, base, team string) {
	t.Helper()
	const payer = "billing@acme-rockets.example"
	owner.do("pricing", []string{"Pricing", "Platform", "120.00 USD once", "identity", "240.00 USD once", "All three", "420.00 USD once",
		"Choose the account to buy for"}, chromedp.Navigate(base+"/pricing"))
	owner.do("billing-page", []string{"Buy", "No payments.", "No subscriptions."},
		chromedp.Navigate(base+"/app/accounts/"+team+"/billing"))
	owner.do("continue-to-payment", []string{"Continue to payment", "identity, 240.00 USD once for Acme Rockets"},
		chromedp.Click(chromedp.CSS(`button[aria-label="Buy identity"]`)))
	owner.do("test-checkout", []string{"Test checkout", "240.00 USD", "4242 4242 4242 4242"},
		chromedp.Click(chromedp.CSS(`#pay`)))
	if !strings.Contains(owner.location(), "/dev/checkout/") {
		t.Errorf("Buy led to %s, want the test processor's hosted checkout", owner.location())
	}
	owner.do("paid", []string{"Thank you: the payment is being recorded.", "240.00 USD", "succeeded"},
		chromedp.SendKeys(chromedp.CSS(`input[name="email"]`), payer),
		chromedp.SendKeys(chromedp.CSS(`input[name="card"]`), "4242 4242 4242 4242"),
		chromedp.Click(chromedp.CSS(`main form button[type=submit]`)))
	if !strings.Contains(owner.location(), "/app/accounts/"+team+"/billing?checkout=success") {
		t.Errorf("the checkout returned to %s, want the account's Billing page", owner.location())
	}
	reference := owner.text(`main td code.id`)
	if !strings.HasPrefix(reference, "pi_") {
		t.Fatalf("the Billing page's payment reference is %q, want the processor's payment id", reference)
	}
	receipt := mailboxText(t, payer, "240.00")
	for _, want := range []string{"240.00", "identity", reference} {
		if !strings.Contains(receipt, want) {
			t.Errorf("the receipt to %s does not say %q:\n%s", payer, want, receipt)
		}
	}

	// The inbox: the payment with the four facts checked, then granted.
	operator.do("payments-inbox", []string{"identity · 240.00 USD", "awaiting_grant", "✓ Amount equals the plan's price, one-time",
		"✓ Products: identity", "✓ Settled", "✓ Team account, bought by its owner owner@example.com", "the payment's email " + payer},
		chromedp.Navigate(base+"/operator/payments"))
	operator.do("payment-granted", []string{"Granted: box holds the entitlements.", "identity · 240.00 USD"},
		submit(`section[aria-label="Payment `+reference+`"] form[action$="/grant"]`))
	owner.do("entitlements-bought", []string{"identity", "platform", "kit"},
		chromedp.Navigate(base+"/app/accounts/"+team+"/entitlements"))
	holds, err := chromedp.Run(owner.ctx, chromedp.Evaluate[[]string](
		`[...document.querySelectorAll("main tbody tr td:first-child")].map(td => td.innerText.trim())`))
	if err != nil || !containsAll(holds, "identity", "platform", "kit") {
		t.Errorf("the Entitlements page lists %v (%v), want identity beside platform and kit", holds, err)
	}

	// The storefront and the Billing page at a phone's width.
	owner.do("phone-pricing", []string{"Pricing", "420.00 USD once"},
		chromedp.EmulateViewport(390, 844, chromedp.EmulatePortrait, chromedp.EmulateMobile),
		chromedp.Navigate(base+"/pricing"))
	owner.fitsWidth("phone-pricing")
	owner.do("phone-billing", []string{"Payments", reference},
		chromedp.Navigate(base+"/app/accounts/"+team+"/billing"))
	owner.fitsWidth("phone-billing")
	owner.do("billing-desktop", []string{"Payments", reference}, chromedp.EmulateViewport(1280, 900), chromedp.Reload())

	// Staff make a plan from the console: a price with a point is refused
	// in words, then the same form, corrected, puts it on sale.
	operator.do("plans", []string{"Plans", "All three", "New plan", "Price in minor units"}, chromedp.Navigate(base+"/operator/plans"))
	operator.do("plan-refused", []string{"Please correct the fields marked below.", "whole number of minor units"},
		chromedp.SendKeys(chromedp.CSS(`#plan-name`), "Support"),
		chromedp.Click(chromedp.CSS(`#plan-product-platform`)),
		chromedp.SendKeys(chromedp.CSS(`#plan-amount`), "99.50"),
		submit(`form[action="/operator/plans"]`))
	operator.do("plan-created", []string{"The plan was created", "Support", "99.50 USD once"},
		chromedp.SetValue(chromedp.CSS(`#plan-amount`), "9950"),
		submit(`form[action="/operator/plans"]`))
	operator.do("phone-plans", []string{"Support", "New plan"},
		chromedp.EmulateViewport(390, 844, chromedp.EmulatePortrait, chromedp.EmulateMobile),
		chromedp.Navigate(base+"/operator/plans"))
	operator.fitsWidth("phone-plans")
	operator.do("plans-desktop", []string{"Support"}, chromedp.EmulateViewport(1280, 900), chromedp.Reload())
}

func containsAll(have []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			found = found || h == w
		}
		if !found {
			return false
		}
	}
	return true
}

// mailboxText waits for a mail to address in the quick start's local
// mailbox whose text holds want, and returns the text.
func mailboxText(t *testing.T, address, want string) string {
	t.Helper()
	return mailboxWait(t, 60*time.Second, "a mail to "+address+" saying "+want, address, func(text string) string {
		if strings.Contains(text, want) {
			return text
		}
		return ""
	})
}
