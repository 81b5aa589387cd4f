package httpapi

import (
	"log/slog"
	"net/http"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/httpx"
	"github.com/platformco/platform/internal/muse"
	"github.com/platformco/platform/internal/service"
)

// statusOf is the one table from muse's error codes to HTTP statuses.
var statusOf = map[string]int{
	muse.CodeUnauthenticated:      http.StatusUnauthorized,
	muse.CodeCredentialUnreadable: http.StatusUnauthorized,
	muse.CodeForbidden:            http.StatusForbidden,
	muse.CodeInsufficientScope:    http.StatusForbidden,
	muse.CodeNotFound:             http.StatusNotFound,
	muse.CodeModelNotFound:        http.StatusNotFound,
	muse.CodeNameTaken:            http.StatusConflict,
	muse.CodeCredentialInUse:      http.StatusConflict,
	muse.CodeInvalidRequest:       http.StatusBadRequest,
	muse.CodeValidation:           http.StatusUnprocessableEntity,
	muse.CodeBudgetExhausted:      http.StatusTooManyRequests,
	muse.CodeUpstreamFailed:       http.StatusBadGateway,
	muse.CodeUnavailable:          http.StatusServiceUnavailable,
}

// problems is the management routes' writer: application/problem+json.
func problems(logger *slog.Logger) service.Errors {
	return service.Errors{Envelope: service.Problem, Status: statusOf, Realm: "muse", Logger: logger}
}

// openAIErrors is the writer of the two OpenAI-compatible routes: OpenAI's
// {"error": {message, type, param, code}}, so that its SDKs read muse's
// refusals as they read OpenAI's.
func openAIErrors(logger *slog.Logger) service.Errors {
	return service.Errors{Envelope: openAIEnvelope, Status: statusOf, Realm: "muse", Logger: logger}
}

type openAIError struct {
	Error openAIErrorBody `json:"error"`
}

type openAIErrorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
}

// errorType is OpenAI's error type for a status.
func errorType(status int, code string) string {
	switch {
	case code == muse.CodeBudgetExhausted:
		return "insufficient_quota"
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status == http.StatusForbidden:
		return "permission_error"
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status >= 500:
		return "server_error"
	default:
		return "invalid_request_error"
	}
}

func openAIEnvelope(w http.ResponseWriter, _ *http.Request, status int, code, message string, _ []errs.FieldError) {
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, status, openAIError{Error: openAIErrorBody{Message: message, Type: errorType(status, code), Code: code}})
}
