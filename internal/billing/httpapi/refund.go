package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/platformco/platform/internal/httpx"
)

// refund is POST /v1/operator/payments/{id}/refund (staff): 202, as the
// payment's state follows from the processor's charge.refunded.
func (h *handlers) refund(w http.ResponseWriter, r *http.Request) {
	staff, err := h.svc.Staff(r.Context(), bearer(r))
	if err != nil {
		h.errs.Write(w, r, err)
		return
	}
	var body struct {
		Amount *json.RawMessage `json:"amount"`
	}
	if err := httpx.DecodeJSON(w, r, &body); err != nil {
		h.errs.Write(w, r, err)
		return
	}
	re, err := h.inbox.Refund(r.Context(), staff, r.PathValue("id"), raw(body.Amount), r.Header.Get("Idempotency-Key"))
	if err != nil {
		h.errs.Write(w, r, err)
		return
	}
	httpx.WriteJSON(w, http.StatusAccepted, map[string]any{"refund": map[string]any{"id": re.ID, "payment_id": re.PaymentID,
		"amount": re.Amount, "currency": re.Currency}})
}
