// Package httpx is the HTTP plumbing every service shares: strict JSON
// decoding, buffered JSON and problem+json responses, trace context,
// request logging, panic recovery, probes and a server that shuts down
// gracefully. It knows nothing of any service's domain.
package httpx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
)

// MaxBodyBytes caps every request body.
const MaxBodyBytes = 1 << 20

// DecodeError is a request body that could not be decoded. Services map it
// into their own error envelope.
type DecodeError struct {
	Status  int    // 400, 413 or 415
	Code    string // malformed_json, body_too_large, unsupported_media_type
	Message string
}

func (e *DecodeError) Error() string { return e.Message }

// DecodeJSON decodes exactly one JSON object from r's body into dst. It
// refuses bodies over MaxBodyBytes (413), a content type other than JSON
// (415), unknown fields, wrong types, trailing data and anything that is not
// one object (400). It returns nil or a *DecodeError.
func DecodeJSON(w http.ResponseWriter, r *http.Request, dst any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return &DecodeError{http.StatusUnsupportedMediaType, "unsupported_media_type", "Content-Type must be application/json"}
		}
	}
	body := http.MaxBytesReader(w, r.Body, MaxBodyBytes)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return decodeError(err)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return decodeError(err)
		}
		return &DecodeError{http.StatusBadRequest, "malformed_json", "request body must hold a single JSON object"}
	}
	return nil
}

func decodeError(err error) *DecodeError {
	var (
		syntaxErr *json.SyntaxError
		typeErr   *json.UnmarshalTypeError
		tooLarge  *http.MaxBytesError
	)
	bad := func(msg string) *DecodeError {
		return &DecodeError{http.StatusBadRequest, "malformed_json", msg}
	}
	switch {
	case errors.As(err, &tooLarge):
		return &DecodeError{http.StatusRequestEntityTooLarge, "body_too_large", fmt.Sprintf("request body must not exceed %d bytes", MaxBodyBytes)}
	case errors.Is(err, io.EOF):
		return bad("request body must be a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return bad("request body is truncated JSON")
	case errors.As(err, &syntaxErr):
		return bad(fmt.Sprintf("request body is not valid JSON (at byte %d)", syntaxErr.Offset))
	case errors.As(err, &typeErr):
		if typeErr.Field == "" {
			return bad("request body must be a JSON object")
		}
		return bad(fmt.Sprintf("field %q must be of type %s", typeErr.Field, jsonType(typeErr.Type.Kind().String())))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return bad(fmt.Sprintf("unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field ")))
	default:
		return bad("request body is not valid JSON")
	}
}

func jsonType(kind string) string {
	switch kind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "struct", "map":
		return "object"
	case "slice", "array":
		return "array"
	case "ptr", "interface":
		return "value"
	default:
		return "number"
	}
}

// WriteJSON encodes v into a buffer first, so an encoding failure never
// sends half a body, then writes it with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	writeEncoded(w, status, "application/json", v)
}

func writeEncoded(w http.ResponseWriter, status int, contentType string, v any) {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(v); err != nil {
		http.Error(w, `{"error":"response encoding failed"}`, http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Content-Length", fmt.Sprint(buf.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
