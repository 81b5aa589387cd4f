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
	"reflect"
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
// (415), unknown fields, fields named in another case than the struct's,
// duplicate keys, wrong types, trailing data and anything that is not one
// object (400). It returns nil or a *DecodeError.
func DecodeJSON(w http.ResponseWriter, r *http.Request, dst any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return &DecodeError{http.StatusUnsupportedMediaType, "unsupported_media_type", "Content-Type must be application/json"}
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		return decodeError(err)
	}
	// encoding/json matches keys case-insensitively and lets the last of
	// two equal keys win, so {"product":"identity","PRODUCT":"courier"}
	// would read as courier: one pass over the tokens refuses both before
	// the values are decoded.
	if err := checkKeys(body, reflect.TypeOf(dst)); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return decodeError(err)
	}
	if err := dec.Decode(&struct{}{}); !errors.Is(err, io.EOF) {
		return &DecodeError{http.StatusBadRequest, "malformed_json", "request body must hold a single JSON object"}
	}
	return nil
}

// checkKeys walks body's tokens once alongside t, the type decoded into,
// and refuses an object holding a key twice, or a key naming a struct
// field other than by its exact name. Malformed JSON is left to the
// decoder, whose messages say where.
func checkKeys(body []byte, t reflect.Type) *DecodeError {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	err := walkValue(dec, t)
	if d, ok := err.(*DecodeError); ok {
		return d
	}
	return nil
}

// errStop ends the walk at malformed input.
var errStop = errors.New("stop")

// walkValue consumes one value from dec; t is the Go type it decodes into
// (nil when unknown: keys are then only checked for duplicates).
func walkValue(dec *json.Decoder, t reflect.Type) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	tok, err := dec.Token()
	if err != nil {
		return errStop
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch delim {
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for dec.More() {
			if err := walkValue(dec, elem); err != nil {
				return err
			}
		}
	case '{':
		var (
			fields map[string]reflect.Type
			elem   reflect.Type
		)
		switch {
		case t == nil:
		case t.Kind() == reflect.Struct:
			fields = jsonFields(t, nil)
		case t.Kind() == reflect.Map:
			elem = t.Elem()
		}
		seen := make(map[string]struct{})
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return errStop
			}
			key, _ := tok.(string)
			if _, dup := seen[key]; dup {
				return &DecodeError{http.StatusBadRequest, "malformed_json", fmt.Sprintf("duplicate field %q", key)}
			}
			seen[key] = struct{}{}
			if fields != nil {
				ft, exact := fields[key]
				if !exact {
					// Unknown, or known only under another case: the
					// decoder would take the latter silently.
					return &DecodeError{http.StatusBadRequest, "malformed_json", fmt.Sprintf("unknown field %q", key)}
				}
				elem = ft
			}
			if err := walkValue(dec, elem); err != nil {
				return err
			}
		}
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return errStop
	}
	return nil
}

// jsonFields returns the JSON names of t's fields as encoding/json sees
// them (tags, "-", embedded structs promoted) with their types.
func jsonFields(t reflect.Type, into map[string]reflect.Type) map[string]reflect.Type {
	if into == nil {
		into = make(map[string]reflect.Type, t.NumField())
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			et := ft
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				jsonFields(et, into)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, taken := into[name]; !taken {
			into[name] = ft
		}
	}
	return into
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
