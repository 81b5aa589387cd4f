// Package openapitest keeps a service's OpenAPI 3.1 document honest: it
// validates every request and response a test suite sends through a
// handler (Wrap) or an HTTP client (Transport) against the document, and
// fails the test on any status, field, header or content type the
// document does not declare, or any required field it does.
//
// Validation is done by github.com/pb33f/libopenapi-validator (OpenAPI 3.1
// and JSON Schema 2020-12). Load adds the rules a library cannot know:
// the document must be OpenAPI 3.1 and valid against its schema; every
// object schema must say whether it is closed, and all but an explicit few
// are (additionalProperties: false), so an undeclared response field
// fails; no operation may declare a "default" response, so an undeclared
// status fails; and a response the document declares without content must
// arrive without a body.
//
// Requests are judged by what the handler did with them. A test may send
// a request the document refuses (a malformed body, a missing token) to
// exercise an error path: that is correct when the handler refused it
// too, with a 4xx. A request the document refuses but the handler
// accepted (status below 400) means the two disagree, and fails the test.
//
// A request no operation matches is answered by the service's fallback.
// The document declares that answer in its top-level extension
// x-unmatched-responses, a map from status to a response (usually a
// $ref to components/responses); any other status fails the test.
package openapitest

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	verrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/helpers"
	"github.com/pb33f/libopenapi-validator/paths"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
	"github.com/pb33f/libopenapi/orderedmap"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// TB is the part of testing.TB the validator reports through; any
// *testing.T, *testing.B or *testing.F is one.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// Document is a loaded, checked OpenAPI 3.1 document ready to judge
// traffic. It is safe for concurrent use.
type Document struct {
	validator validator.Validator
	model     *v3.Document
	options   *config.ValidationOptions
	// unmatched holds, per status, the body schemas (by media type) of
	// the answer to a request no operation matches; an empty map means
	// the answer has no body.
	unmatched map[int]map[string]*jsonschema.Schema
}

// loaded memoises Load by the document's digest: a suite wraps hundreds
// of handlers in one document, and building the validator is the costly
// part. It holds only immutable documents, never test state.
var loaded sync.Map // [sha256.Size]byte → loadResult

type loadResult struct {
	doc *Document
	err error
}

// Load parses raw as an OpenAPI 3.1 document, checks it (see the package
// comment) and builds its validator. The error lists every problem found.
func Load(raw []byte) (*Document, error) {
	key := sha256.Sum256(raw)
	if r, ok := loaded.Load(key); ok {
		return r.(loadResult).doc, r.(loadResult).err
	}
	doc, err := load(raw)
	loaded.Store(key, loadResult{doc, err})
	return doc, err
}

func load(raw []byte) (*Document, error) {
	tree, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("openapi: the document is not JSON: %w", err)
	}
	root, ok := tree.(map[string]any)
	if !ok {
		return nil, errors.New("openapi: the document is not a JSON object")
	}
	if v, _ := root["openapi"].(string); !strings.HasPrefix(v, "3.1.") {
		return nil, fmt.Errorf("openapi: the document declares openapi %q; want 3.1.x", v)
	}
	parsed, err := libopenapi.NewDocument(raw)
	if err != nil {
		return nil, fmt.Errorf("openapi: parse: %w", err)
	}
	v, errs := validator.NewValidator(parsed, config.WithFormatAssertions())
	if len(errs) > 0 {
		return nil, fmt.Errorf("openapi: build the validator: %w", errors.Join(errs...))
	}
	var problems []string
	if ok, verrs := v.ValidateDocument(); !ok {
		for _, e := range verrs {
			problems = append(problems, "not a valid OpenAPI 3.1 document: "+describe(e))
		}
	}
	problems = append(problems, Lint(root)...)
	model, err := parsed.BuildV3Model()
	if err != nil {
		return nil, fmt.Errorf("openapi: build the model: %w", err)
	}
	unmatched, ups := unmatchedResponses(root)
	problems = append(problems, ups...)
	if len(problems) > 0 {
		return nil, fmt.Errorf("openapi: the document has %d problem(s):\n\t%s", len(problems), strings.Join(problems, "\n\t"))
	}
	return &Document{
		validator: v,
		model:     &model.Model,
		options:   config.NewValidationOptions(config.WithFormatAssertions()),
		unmatched: unmatched,
	}, nil
}

// Lint returns the document's breaches of the platform's rules for
// OpenAPI documents: an object schema that does not declare
// additionalProperties (it must be false, or true only where a body is
// deliberately open), and a "default" response. root is the document as
// decoded JSON.
func Lint(root map[string]any) []string {
	var out []string
	walkSchemas(root, "", func(ptr string, s map[string]any, refinement bool) {
		if refinement {
			return
		}
		_, hasProps := s["properties"]
		if s["type"] == "object" || hasProps {
			ap, declared := s["additionalProperties"]
			if _, closedByUneval := s["unevaluatedProperties"]; !declared && !closedByUneval {
				out = append(out, ptr+": object schema does not declare additionalProperties (false closes it)")
			} else if declared && ap != false && ap != true {
				out = append(out, ptr+": additionalProperties must be false (closed) or, deliberately, true")
			}
		}
	})
	if ps, ok := root["paths"].(map[string]any); ok {
		for _, p := range sortedKeys(ps) {
			item, _ := ps[p].(map[string]any)
			for _, m := range sortedKeys(item) {
				op, _ := item[m].(map[string]any)
				if rs, ok := op["responses"].(map[string]any); ok {
					if _, has := rs["default"]; has {
						out = append(out, "/paths/"+escape(p)+"/"+m+"/responses/default: declare each status; a default response hides undeclared ones")
					}
				}
			}
		}
	}
	return out
}

// walkSchemas calls fn for every schema object under the document's
// paths and components. refinement is true for a member of an allOf,
// anyOf or oneOf that has no type of its own, and for the untyped
// properties of such a member: it narrows a sibling schema (for example a
// problem's status and code) and is closed by it.
func walkSchemas(node any, ptr string, fn func(ptr string, s map[string]any, refinement bool)) {
	var visit func(v any, ptr string, refinement bool)
	visit = func(v any, ptr string, refinement bool) {
		s, ok := v.(map[string]any)
		if !ok {
			return
		}
		fn(ptr, s, refinement)
		if props, ok := s["properties"].(map[string]any); ok {
			for _, k := range sortedKeys(props) {
				// A refinement's properties narrow the sibling's
				// properties of the same name, and are closed by them.
				visit(props[k], ptr+"/properties/"+escape(k), refinement && !typed(props[k]))
			}
		}
		for _, k := range []string{"items", "additionalProperties", "not", "if", "then", "else", "contains", "unevaluatedProperties"} {
			if sub, ok := s[k].(map[string]any); ok {
				visit(sub, ptr+"/"+k, k == "not" || k == "if" || k == "then" || k == "else")
			}
		}
		for _, k := range []string{"allOf", "anyOf", "oneOf", "prefixItems"} {
			if list, ok := s[k].([]any); ok {
				for i, sub := range list {
					visit(sub, ptr+"/"+k+"/"+strconv.Itoa(i), k != "prefixItems" && !typed(sub))
				}
			}
		}
	}
	// Schemas sit under "schema" keys (media types, parameters, headers)
	// and in components/schemas.
	var find func(v any, ptr string)
	find = func(v any, ptr string) {
		switch t := v.(type) {
		case map[string]any:
			for _, k := range sortedKeys(t) {
				p := ptr + "/" + escape(k)
				if k == "schema" {
					visit(t[k], p, false)
					continue
				}
				if k == "schemas" && ptr == "/components" {
					if ss, ok := t[k].(map[string]any); ok {
						for _, name := range sortedKeys(ss) {
							visit(ss[name], p+"/"+escape(name), false)
						}
					}
					continue
				}
				find(t[k], p)
			}
		case []any:
			for i, e := range t {
				find(e, ptr+"/"+strconv.Itoa(i))
			}
		}
	}
	find(node, ptr)
}

func typed(schema any) bool {
	m, _ := schema.(map[string]any)
	_, ok := m["type"]
	return ok
}

// unmatchedResponses compiles the x-unmatched-responses extension.
func unmatchedResponses(root map[string]any) (map[int]map[string]*jsonschema.Schema, []string) {
	ext, ok := root["x-unmatched-responses"].(map[string]any)
	if !ok {
		return nil, nil
	}
	const base = "urn:openapitest:document"
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(base, root); err != nil {
		return nil, []string{"x-unmatched-responses: " + err.Error()}
	}
	out := map[int]map[string]*jsonschema.Schema{}
	var problems []string
	for _, k := range sortedKeys(ext) {
		status, err := strconv.Atoi(k)
		if err != nil {
			continue // "description" and other annotations
		}
		ptr := "/x-unmatched-responses/" + k
		resp, ok := ext[k].(map[string]any)
		if !ok {
			problems = append(problems, ptr+": not a response object")
			continue
		}
		if ref, ok := resp["$ref"].(string); ok {
			ptr = strings.TrimPrefix(ref, "#")
			if resp, ok = resolve(root, ptr).(map[string]any); !ok {
				problems = append(problems, "x-unmatched-responses/"+k+": $ref "+ref+" names no response object")
				continue
			}
		}
		media := map[string]*jsonschema.Schema{}
		contents, _ := resp["content"].(map[string]any)
		for _, mt := range sortedKeys(contents) {
			sch, err := c.Compile(base + "#" + ptr + "/content/" + escape(mt) + "/schema")
			if err != nil {
				problems = append(problems, fmt.Sprintf("x-unmatched-responses/%s %s: %v", k, mt, err))
				continue
			}
			media[mt] = sch
		}
		out[status] = media
	}
	return out, problems
}

func resolve(root any, ptr string) any {
	cur := root
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")]
	}
	return cur
}

func escape(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// mustLoad loads doc for a test, failing it when the document is unusable.
func mustLoad(t TB, doc []byte) *Document {
	t.Helper()
	d, err := Load(doc)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return d
}

// Wrap returns h with every request and response it serves validated
// against doc; each disagreement is reported through t.Errorf. To opt a
// suite in, wrap the handler it tests:
//
//	h = openapitest.Wrap(t, httpapi.OpenAPI(), h)
func Wrap(t TB, doc []byte, h http.Handler) http.Handler {
	t.Helper()
	d := mustLoad(t, doc)
	if d == nil {
		return h // t has failed already
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("openapi: %s %s: read the request body: %v", r.Method, r.URL.RequestURI(), err)
			return
		}
		_ = r.Body.Close()
		req := r.Clone(r.Context())
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec := &recorder{ResponseWriter: w}
		h.ServeHTTP(rec, r)
		d.report(t, req, body, rec.result())
	})
}

// Transport returns an http.RoundTripper that sends through base
// (http.DefaultTransport when nil) and validates every exchange against
// doc, for clients of a running service:
//
//	client := &http.Client{Transport: openapitest.Transport(t, httpapi.OpenAPI(), nil)}
func Transport(t TB, doc []byte, base http.RoundTripper) http.RoundTripper {
	t.Helper()
	if base == nil {
		base = http.DefaultTransport
	}
	d := mustLoad(t, doc)
	if d == nil {
		return base // t has failed already
	}
	return &transport{t: t, doc: d, base: base}
}

type transport struct {
	t    TB
	doc  *Document
	base http.RoundTripper
}

func (tr *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		b, err := io.ReadAll(r.Body)
		_ = r.Body.Close()
		if err != nil {
			return nil, err
		}
		body = b
	}
	out := r.Clone(r.Context())
	out.Body = io.NopCloser(bytes.NewReader(body))
	if r.Body == nil {
		out.Body = nil
	}
	res, err := tr.base.RoundTrip(out)
	if err != nil {
		return nil, err
	}
	resBody, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if err != nil {
		return nil, err
	}
	res.Body = io.NopCloser(bytes.NewReader(resBody))
	tr.doc.report(tr.t, r.Clone(r.Context()), body, exchange{status: res.StatusCode, header: res.Header.Clone(), body: resBody})
	return res, nil
}

// exchange is one response as the validator sees it.
type exchange struct {
	status int
	header http.Header
	body   []byte
}

func (d *Document) report(t TB, req *http.Request, reqBody []byte, res exchange) {
	problems := d.Check(req, reqBody, res.status, res.header, res.body)
	if len(problems) > 0 {
		t.Errorf("openapi: %s %s answered %d, which the document does not allow:\n\t%s",
			req.Method, req.URL.RequestURI(), res.status, strings.Join(problems, "\n\t"))
	}
}

// Check judges one exchange: the request (its body given separately) and
// the response's status, headers and body. It returns one line per
// disagreement with the document, none when they agree.
func (d *Document) Check(req *http.Request, reqBody []byte, status int, header http.Header, body []byte) []string {
	req = req.Clone(req.Context())
	// httpx.DecodeJSON reads a body without a Content-Type, or with any
	// +json type (application/merge-patch+json), as application/json; say
	// so to the validator, which otherwise finds no declared media type.
	mt, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
	if (mt == "" && len(reqBody) > 0) || strings.HasSuffix(mt, "+json") {
		req.Header.Set("Content-Type", "application/json")
	}
	newReq := func() *http.Request {
		r := req.Clone(req.Context())
		r.Body = io.NopCloser(bytes.NewReader(reqBody))
		r.ContentLength = int64(len(reqBody))
		return r
	}
	pathItem, _, _ := paths.FindPath(newReq(), d.model, d.options)
	var op *v3.Operation
	if pathItem != nil {
		op = helpers.ExtractOperation(req, pathItem)
	}
	if op == nil {
		return d.checkUnmatched(status, header, body)
	}

	var out []string
	if ok, errs := d.validator.ValidateHttpRequestSync(newReq()); !ok && status < 400 {
		for _, e := range errs {
			out = append(out, "the handler accepted a request the document refuses: "+describe(e))
		}
	}
	res := &http.Response{
		StatusCode: status,
		Header:     header,
		Body:       io.NopCloser(bytes.NewReader(body)),
		Request:    newReq(),
	}
	if ok, errs := d.validator.ValidateHttpResponse(newReq(), res); !ok {
		for _, e := range errs {
			out = append(out, "response: "+describe(e))
		}
	}
	if op.Responses != nil && op.Responses.Codes != nil {
		declared := op.Responses.Codes.GetOrZero(strconv.Itoa(status))
		switch {
		case declared == nil:
		case orderedmap.Len(declared.Content) == 0 && len(body) > 0:
			out = append(out, fmt.Sprintf("response: %d is declared without content, but it carries a %d-byte body (Content-Type %q)",
				status, len(body), header.Get("Content-Type")))
		case orderedmap.Len(declared.Content) > 0 && len(body) == 0 && req.Method != http.MethodHead:
			out = append(out, fmt.Sprintf("response: %d is declared with content, but its body is empty", status))
		}
	}
	return out
}

func (d *Document) checkUnmatched(status int, header http.Header, body []byte) []string {
	media, ok := d.unmatched[status]
	if !ok {
		declared := make([]string, 0, len(d.unmatched))
		for s := range d.unmatched {
			declared = append(declared, strconv.Itoa(s))
		}
		sort.Strings(declared)
		return []string{fmt.Sprintf("no operation matches the request, and x-unmatched-responses declares %s, not %d",
			orNone(declared), status)}
	}
	if len(media) == 0 {
		if len(body) > 0 {
			return []string{fmt.Sprintf("response: %d to an unmatched request is declared without content, but it carries a %d-byte body", status, len(body))}
		}
		return nil
	}
	mt, _, _ := mime.ParseMediaType(header.Get("Content-Type"))
	sch, ok := media[mt]
	if !ok {
		return []string{fmt.Sprintf("response: Content-Type %q is not declared for %d to an unmatched request", header.Get("Content-Type"), status)}
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return []string{fmt.Sprintf("response: the %d body is not JSON: %v", status, err)}
	}
	if err := sch.Validate(v); err != nil {
		return []string{fmt.Sprintf("response: the %d body to an unmatched request breaks its schema: %v", status, err)}
	}
	return nil
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}

// describe renders a library error as one line: what failed, why, and
// where in the body or document.
func describe(e *verrors.ValidationError) string {
	var b strings.Builder
	b.WriteString(e.Message)
	if e.Reason != "" && e.Reason != e.Message {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	for _, f := range e.SchemaValidationErrors {
		b.WriteString("; ")
		switch {
		case f.FieldPath != "":
			b.WriteString(f.FieldPath + ": ")
		case len(f.InstancePath) > 0:
			b.WriteString("/" + strings.Join(f.InstancePath, "/") + ": ")
		}
		b.WriteString(f.Reason)
		if f.KeywordLocation != "" {
			b.WriteString(" (schema " + f.KeywordLocation + ")")
		}
	}
	return b.String()
}

// recorder passes a response through and keeps what the validator needs:
// the status, the headers as they were when it was sent, and the body.
type recorder struct {
	http.ResponseWriter
	status int
	header http.Header
	body   bytes.Buffer
}

func (c *recorder) WriteHeader(code int) {
	if c.status == 0 && code >= 200 {
		c.status = code
		c.header = c.ResponseWriter.Header().Clone()
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *recorder) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.WriteHeader(http.StatusOK)
	}
	c.body.Write(b)
	return c.ResponseWriter.Write(b)
}

func (c *recorder) Unwrap() http.ResponseWriter { return c.ResponseWriter }

func (c *recorder) result() exchange {
	if c.status == 0 {
		// Nothing written: net/http sends 200 with an empty body.
		c.status, c.header = http.StatusOK, c.ResponseWriter.Header().Clone()
	}
	body := c.body.Bytes()
	if c.header.Get("Content-Type") == "" && len(body) > 0 {
		// What net/http would have sent.
		c.header.Set("Content-Type", http.DetectContentType(body))
	}
	return exchange{status: c.status, header: c.header, body: body}
}

var _ http.RoundTripper = (*transport)(nil)

// Route returns the method and path template of the operation r matches,
// for example "GET /v1/accounts/{accountID}"; ok is false when none does.
func (d *Document) Route(r *http.Request) (route string, ok bool) {
	pathItem, _, template := paths.FindPath(r, d.model, d.options)
	if pathItem == nil || helpers.ExtractOperation(r, pathItem) == nil {
		return "", false
	}
	return r.Method + " " + template, true
}

// Responses returns every response the document declares, as
// "METHOD /template STATUS" (for example "GET /v1/me 401"), sorted, with
// each status of x-unmatched-responses as "UNMATCHED STATUS". A suite can
// compare it with the responses it saw to find the ones it never
// exercised.
func (d *Document) Responses() []string {
	var out []string
	for p := d.model.Paths.PathItems.First(); p != nil; p = p.Next() {
		for o := p.Value().GetOperations().First(); o != nil; o = o.Next() {
			if o.Value().Responses == nil || o.Value().Responses.Codes == nil {
				continue
			}
			for c := o.Value().Responses.Codes.First(); c != nil; c = c.Next() {
				out = append(out, strings.ToUpper(o.Key())+" "+p.Key()+" "+c.Key())
			}
		}
	}
	for s := range d.unmatched {
		out = append(out, "UNMATCHED "+strconv.Itoa(s))
	}
	sort.Strings(out)
	return out
}
