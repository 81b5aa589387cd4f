package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sort"
	"strings"

	"github.com/platformco/platform/internal/openapi"
)

// componentPrefix keeps the services' component names apart in the merged
// document (each has a NotFound, a Health, ...).
var componentPrefix = map[string]string{Identity: "Identity", Box: "Box", Courier: "Courier", Keyholder: "Keyholder", Pantry: "Pantry", Billing: "Billing", Darkroom: "Darkroom", Muse: "Muse"}

// servicePaths are a service's own paths that the gateway does not
// forward: it answers them itself.
var servicePaths = map[string]bool{"/healthz": true, "/readyz": true, "/openapi.json": true}

// NotAtEdge are the paths a service documents that the edge never
// forwards to it: courier's service-to-service routes (internalOnly) and
// its development mailbox, served on courier's own port.
var NotAtEdge = map[string]map[string]bool{
	Courier: {"/v1/emails": true, "/v1/emails/{id}": true, "/v1/emails/{id}/pushes": true, "/v1/suppressions": true, "/dev/mail": true, "/dev/mail.json": true},
	// billing's /up probe, the test processor's hosted checkout, served on
	// billing's own port, and its service-to-service usage route.
	Billing: {"/up": true, "/dev/checkout/{id}": true, "/v1/usage": true},
}

var operationMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

var templateParam = regexp.MustCompile(`\{[^}/]+\}`)

// SamplePath fills a path template's parameters with a sample value, so
// that the routing table can be asked where the path goes.
func SamplePath(template string) string {
	return templateParam.ReplaceAllString(template, "00000000-0000-4000-8000-000000000000")
}

// RouteOf returns the gateway route a request for method and path takes;
// false when the gateway answers it itself.
func RouteOf(method, path string) (Route, bool) {
	mux := http.NewServeMux()
	byPattern := make(map[string]Route)
	for _, rt := range Routes() {
		mux.Handle(rt.Pattern, http.NotFoundHandler())
		byPattern[rt.Pattern] = rt
	}
	_, pattern := mux.Handler(httptest.NewRequest(method, path, nil))
	rt, ok := byPattern[pattern]
	return rt, ok
}

// OpenAPI is the document the gateway serves at /openapi.json: the
// services' documents (by service name, as Options.Documents) merged
// under the gateway's routes. Errors as buildOpenAPI's.
func OpenAPI(docs map[string][]byte) ([]byte, error) { return buildOpenAPI(docs) }

// buildOpenAPI merges the services' documents (Options.Documents) under
// the gateway's routes.
// Each operation keeps its service's answers and gains the edge's own in
// the same envelope: 401 on a protected route, 429, 431 and 503.
// Errors: a document that is not JSON, or a path the gateway does not
// route to the service that documents it.
func buildOpenAPI(docs map[string][]byte) ([]byte, error) {
	out := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":   "The platform (public API at the gateway)",
			"version": "1",
			"description": "The services' public routes as the gateway exposes them. Protected routes take " +
				"`Authorization: Bearer <token>` (identity's access token, or a `plat_` API key, which the " +
				"gateway passes through unverified), identity's `__Host-session` cookie, or the gateway's " +
				"browser session from `/auth/login`. A cookie-authenticated state change needs " +
				"`Sec-Fetch-Site: same-origin` or an allowed `Origin`. The gateway's own refusals (401, 403, " +
				"429, 431, 503) are written in the envelope of the service behind the route. Rate limits count " +
				"per session or API key and per client address.",
		},
		// The gateway's own origin: it serves this document, and every
		// path in it, itself.
		"servers": []any{map[string]any{
			"url":         "/",
			"description": "The gateway that serves this document (`platform gateway serve`, or `platform dev`).",
		}},
	}
	tags := newTagSet(edgeTags())
	paths := map[string]any{}
	components := map[string]map[string]any{}
	component := func(kind string) map[string]any {
		if components[kind] == nil {
			components[kind] = map[string]any{}
		}
		return components[kind]
	}
	for kind, entries := range edgeComponents() {
		for k, v := range entries {
			component(kind)[k] = v
		}
	}
	names := make([]string, 0, len(docs))
	for name := range docs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		var doc map[string]any
		if err := json.Unmarshal(docs[name], &doc); err != nil {
			return nil, fmt.Errorf("%s's document: %w", name, err)
		}
		prefix, ok := componentPrefix[name]
		if !ok {
			return nil, fmt.Errorf("a document for %q, which the gateway does not route to", name)
		}
		renamed := rename(doc, prefix).(map[string]any)
		comps, _ := renamed["components"].(map[string]any)
		for kind, v := range comps {
			entries, _ := v.(map[string]any)
			for k, c := range entries {
				if kind == "securitySchemes" {
					component(kind)[k] = c // requirements name schemes as keys, not refs
					continue
				}
				component(kind)[prefix+k] = c
			}
		}
		if list, ok := renamed["tags"].([]any); ok {
			for _, t := range list {
				tags.add(t)
			}
		}
		defaultSecurity := renamed["security"]
		docPaths, _ := renamed["paths"].(map[string]any)
		for p, item := range docPaths {
			if servicePaths[p] || NotAtEdge[name][p] {
				continue
			}
			ops, _ := item.(map[string]any)
			for _, m := range operationMethods {
				op, ok := ops[m].(map[string]any)
				if !ok {
					continue
				}
				rt, ok := RouteOf(strings.ToUpper(m), SamplePath(p))
				if !ok || rt.Service != name {
					return nil, fmt.Errorf("%s documents %s %s, which the gateway routes to %q", name, strings.ToUpper(m), p, rt.Service)
				}
				if _, ok := op["security"]; !ok && defaultSecurity != nil {
					op["security"] = defaultSecurity
				}
				addEdgeAnswers(op, rt, component("responses"))
			}
			paths[p] = item
		}
	}
	for p, item := range edgePaths() {
		paths[p] = item
	}
	out["paths"] = paths
	out["tags"] = tags.used(paths)
	// Inline, not a component: a reference from an extension does not
	// count as a use of the component to a reader of the document.
	out["x-unmatched-responses"] = map[string]any{"404": edgeNotFound()}
	pruneComponents(out, components)
	out["components"] = components
	return json.MarshalIndent(out, "", "  ")
}

// edgeTags are the tags of the paths the gateway answers itself.
func edgeTags() []any {
	return []any{
		map[string]any{"name": "Probes", "description": "The gateway's liveness and readiness."},
		map[string]any{"name": "Meta", "description": "This document."},
	}
}

// tagSet gathers the services' tags by name: OpenAPI 3.1 wants tag names
// unique, and two services' "Accounts" are one group at the edge.
type tagSet struct {
	order  []string
	byName map[string]map[string]any
	own    map[string]bool // the edge's tags: the services' do not add to them
}

// newTagSet starts with the edge's own tags.
func newTagSet(own []any) *tagSet {
	ts := &tagSet{byName: map[string]map[string]any{}, own: map[string]bool{}}
	for _, t := range own {
		ts.add(t)
	}
	for name := range ts.byName {
		ts.own[name] = true
	}
	return ts
}

// add records t; a name seen before keeps its first entry, gaining the
// later one's description when it had none or a different one (unless
// the name is one of the edge's own tags).
func (ts *tagSet) add(t any) {
	tag, _ := t.(map[string]any)
	name, _ := tag["name"].(string)
	if name == "" || ts.own[name] {
		return
	}
	have, ok := ts.byName[name]
	if !ok {
		c := make(map[string]any, len(tag))
		for k, v := range tag {
			c[k] = v
		}
		ts.byName[name] = c
		ts.order = append(ts.order, name)
		return
	}
	mine, _ := have["description"].(string)
	theirs, _ := tag["description"].(string)
	switch {
	case theirs == "" || theirs == mine:
	case mine == "":
		have["description"] = theirs
	default:
		have["description"] = mine + "\n\n" + theirs
	}
}

// used lists the tags, in the order first seen, that an operation of
// paths names; a tag an operation names that no document declares is
// declared bare.
func (ts *tagSet) used(paths map[string]any) []any {
	named := map[string]bool{}
	var undeclared []string
	for _, item := range paths {
		ops, _ := item.(map[string]any)
		for _, m := range operationMethods {
			op, _ := ops[m].(map[string]any)
			list, _ := op["tags"].([]any)
			for _, t := range list {
				name, _ := t.(string)
				if name == "" || named[name] {
					continue
				}
				named[name] = true
				if _, ok := ts.byName[name]; !ok {
					undeclared = append(undeclared, name)
				}
			}
		}
	}
	out := []any{}
	for _, name := range ts.order {
		if named[name] {
			out = append(out, ts.byName[name])
		}
	}
	sort.Strings(undeclared)
	for _, name := range undeclared {
		out = append(out, map[string]any{"name": name})
	}
	return out
}

// pruneComponents drops the components nothing in doc uses: the merge
// brings every component of every service, and the paths the edge does
// not forward (probes, courier's internal routes) leave some unused. A
// use is a $ref outside the components and outside extensions ("x-"),
// or a $ref from a used component; a security scheme's use is a
// requirement naming it.
func pruneComponents(doc map[string]any, components map[string]map[string]any) {
	used := map[string]bool{} // "kind/name"
	var queue []string
	var walk func(node any)
	walk = func(node any) {
		switch n := node.(type) {
		case map[string]any:
			for k, v := range n {
				if strings.HasPrefix(k, "x-") {
					continue
				}
				if k == "security" {
					reqs, _ := v.([]any)
					for _, r := range reqs {
						req, _ := r.(map[string]any)
						for scheme := range req {
							used["securitySchemes/"+scheme] = true
						}
					}
					continue
				}
				if s, ok := v.(string); ok && k == "$ref" {
					if key, ok := componentKey(s); ok && !used[key] {
						used[key] = true
						queue = append(queue, key)
					}
					continue
				}
				walk(v)
			}
		case []any:
			for _, v := range n {
				walk(v)
			}
		}
	}
	for k, v := range doc {
		if k != "components" && !strings.HasPrefix(k, "x-") {
			walk(v)
		}
	}
	for len(queue) > 0 {
		kind, name, _ := strings.Cut(queue[0], "/")
		queue = queue[1:]
		walk(components[kind][name])
	}
	for kind, entries := range components {
		for name := range entries {
			if !used[kind+"/"+name] {
				delete(entries, name)
			}
		}
		if len(entries) == 0 {
			delete(components, kind)
		}
	}
}

// componentKey is "kind/name" of a local component reference
// (#/components/schemas/Name, or a pointer into one).
func componentKey(ref string) (string, bool) {
	rest, ok := strings.CutPrefix(ref, "#/components/")
	if !ok {
		return "", false
	}
	parts := strings.SplitN(rest, "/", 3)
	if len(parts) < 2 {
		return "", false
	}
	return parts[0] + "/" + parts[1], true
}

// rename rewrites every local component reference to its prefixed name.
func rename(node any, prefix string) any {
	switch n := node.(type) {
	case map[string]any:
		for k, v := range n {
			if s, ok := v.(string); ok && k == "$ref" && strings.HasPrefix(s, "#/components/") {
				parts := strings.SplitN(strings.TrimPrefix(s, "#/components/"), "/", 2)
				if len(parts) == 2 && parts[0] != "securitySchemes" {
					n[k] = "#/components/" + parts[0] + "/" + prefix + parts[1]
				}
				continue
			}
			n[k] = rename(v, prefix)
		}
	case []any:
		for i, v := range n {
			n[i] = rename(v, prefix)
		}
	}
	return node
}

// addEdgeAnswers adds the edge's own answers to op. Where the service
// declares the same status, the two are merged: either body may come.
func addEdgeAnswers(op map[string]any, rt Route, responses map[string]any) {
	declared, _ := op["responses"].(map[string]any)
	if declared == nil {
		declared = map[string]any{}
		op["responses"] = declared
	}
	kind := "Problem"
	if rt.env == boxEnvelope {
		kind = "Box"
	}
	add := func(status, name string) {
		ref := map[string]any{"$ref": "#/components/responses/Edge" + kind + name}
		existing, ok := declared[status].(map[string]any)
		if !ok {
			declared[status] = ref
			return
		}
		edge := resolve(responses, ref)
		own := resolve(responses, existing)
		if edge == nil || own == nil {
			return
		}
		declared[status] = mergeResponses(own, edge)
	}
	if !rt.Public {
		add("401", "Unauthorized")
		add("403", "CrossOrigin")
	}
	add("429", "RateLimited")
	add("431", "HeadersTooLarge")
	add("503", "Unavailable")
}

// resolve follows a response's $ref into responses.
func resolve(responses map[string]any, r map[string]any) map[string]any {
	ref, ok := r["$ref"].(string)
	if !ok {
		return r
	}
	resolved, _ := responses[strings.TrimPrefix(ref, "#/components/responses/")].(map[string]any)
	return resolved
}

// mergeResponses is one response allowing either of two: each media
// type's schema is anyOf both, and a header is required only when both
// require it.
func mergeResponses(a, b map[string]any) map[string]any {
	desc, _ := a["description"].(string)
	if d, _ := b["description"].(string); d != "" {
		desc += " " + d
	}
	out := map[string]any{"description": desc}
	headers := map[string]any{}
	ah, _ := a["headers"].(map[string]any)
	bh, _ := b["headers"].(map[string]any)
	for name, h := range ah {
		if _, both := bh[name]; both {
			headers[name] = h
		} else {
			headers[name] = optional(h)
		}
	}
	for name, h := range bh {
		if _, both := ah[name]; !both {
			headers[name] = optional(h)
		}
	}
	if len(headers) > 0 {
		out["headers"] = headers
	}
	content := map[string]any{}
	ac, _ := a["content"].(map[string]any)
	bc, _ := b["content"].(map[string]any)
	for mt, m := range ac {
		content[mt] = m
		if other, ok := bc[mt].(map[string]any); ok {
			mine, _ := m.(map[string]any)
			content[mt] = map[string]any{"schema": eitherSchema(mine["schema"], other["schema"])}
		}
	}
	for mt, m := range bc {
		if _, ok := content[mt]; !ok {
			content[mt] = m
		}
	}
	if len(content) > 0 {
		out["content"] = content
	}
	return out
}

// eitherSchema is a schema either of a and b satisfies: anyOf their
// branches (an anyOf alone is spliced in), each branch once, or the one
// schema when only one is left.
func eitherSchema(a, b any) any {
	var branches []any
	for _, s := range []any{a, b} {
		if m, ok := s.(map[string]any); ok && len(m) == 1 {
			if list, ok := m["anyOf"].([]any); ok {
				for _, br := range list {
					branches = appendDistinct(branches, br)
				}
				continue
			}
		}
		branches = appendDistinct(branches, s)
	}
	if len(branches) == 1 {
		return branches[0]
	}
	return map[string]any{"anyOf": branches}
}

// appendDistinct appends s to list unless an equal schema is there. The
// comparison is of the JSON encodings, so that the edge's schemas, built
// in Go (an int 401), equal the services', decoded (a float64 401).
func appendDistinct(list []any, s any) []any {
	enc, err := json.Marshal(s)
	for _, have := range list {
		h, herr := json.Marshal(have)
		if err == nil && herr == nil && bytes.Equal(h, enc) {
			return list
		}
	}
	return append(list, s)
}

// optional is a header as one of two answers declares it: never required.
func optional(h any) any {
	m, ok := h.(map[string]any)
	if !ok {
		return h
	}
	if _, ok := m["$ref"]; ok {
		// A referenced header keeps its rule: the services' are ones the
		// edge also sends (Cache-Control on box's), the edge's are optional.
		return m
	}
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = v
	}
	delete(c, "required")
	return c
}

// edgeComponents are the edge's answers in each envelope.
func edgeComponents() map[string]map[string]any {
	retryAfter := map[string]any{
		"description": "Whole seconds to wait before trying again; the edge always sends it.",
		"schema":      map[string]any{"type": "integer", "minimum": 1},
	}
	rateHeaders := map[string]any{"Retry-After": map[string]any{"$ref": "#/components/headers/EdgeRetryAfter"}}
	problem := func(status int, code, desc string, headers map[string]any) map[string]any {
		r := map[string]any{
			"description": desc,
			"content": map[string]any{"application/problem+json": map[string]any{"schema": map[string]any{
				"allOf": []any{
					map[string]any{"$ref": "#/components/schemas/IdentityProblem"},
					map[string]any{"properties": map[string]any{
						"status": map[string]any{"const": status},
						"code":   map[string]any{"const": code},
					}},
				},
			}}},
		}
		if headers != nil {
			r["headers"] = headers
		}
		return r
	}
	boxErr := func(code, desc string, headers map[string]any) map[string]any {
		r := map[string]any{
			"description": desc,
			"content": map[string]any{"application/json": map[string]any{"schema": map[string]any{
				"allOf": []any{
					map[string]any{"$ref": "#/components/schemas/BoxError"},
					map[string]any{"properties": map[string]any{"error": map[string]any{"properties": map[string]any{
						"code": map[string]any{"const": code},
					}}}},
				},
			}}},
		}
		if headers != nil {
			r["headers"] = headers
		}
		return r
	}
	const (
		unauthorized = "At the gateway: no bearer token or session cookie, or one that does not verify against identity's key set (bad signature, wrong issuer, expired, unknown key)."
		crossOrigin  = "At the gateway: a cookie-authenticated state change without `Sec-Fetch-Site: same-origin` or an allowed `Origin`."
		rateLimited  = "At the gateway: the caller's session, API key or address is over its rate limit."
		tooLarge     = "At the gateway: the request's header fields are over 64 KiB."
		unavailable  = "At the gateway: the service behind the route cannot be reached, or identity's key set is unavailable."
	)
	wwwAuth := map[string]any{"WWW-Authenticate": map[string]any{
		"description": "`Bearer realm=\"platform\"`.", "schema": map[string]any{"type": "string"},
	}}
	retry := map[string]any{"Retry-After": map[string]any{"$ref": "#/components/headers/EdgeRetryAfter"}}
	return map[string]map[string]any{
		"headers": {"EdgeRetryAfter": retryAfter},
		"responses": {
			"EdgeProblemUnauthorized":    problem(401, "unauthorized", unauthorized, wwwAuth),
			"EdgeProblemCrossOrigin":     problem(403, "forbidden", crossOrigin, nil),
			"EdgeProblemRateLimited":     problem(429, "rate_limited", rateLimited, rateHeaders),
			"EdgeProblemHeadersTooLarge": problem(431, "headers_too_large", tooLarge, nil),
			"EdgeProblemUnavailable":     problem(503, "unavailable", unavailable, retry),
			"EdgeBoxUnauthorized":        boxErr("unauthenticated", unauthorized, wwwAuth),
			"EdgeBoxCrossOrigin":         boxErr("forbidden", crossOrigin, nil),
			"EdgeBoxRateLimited":         boxErr("rate_limited", rateLimited, rateHeaders),
			"EdgeBoxHeadersTooLarge":     boxErr("headers_too_large", tooLarge, nil),
			"EdgeBoxUnavailable":         boxErr("unavailable", unavailable, retry),
		},
		"schemas": {
			"EdgeReadiness": map[string]any{
				"type":                 "object",
				"additionalProperties": false,
				"required":             []any{"status", "deps"},
				"properties": map[string]any{
					"status": map[string]any{"enum": []any{"ok", "degraded", "unavailable"}},
					"deps": map[string]any{
						"type":                 "object",
						"additionalProperties": false,
						"required":             []any{keySetDep},
						"properties":           readinessDeps(),
					},
				},
			},
		},
	}
}

// readinessDeps are the dependencies readiness may name.
func readinessDeps() map[string]any {
	state := map[string]any{"enum": []any{"ok", "unavailable"}}
	deps := map[string]any{keySetDep: state, "redis": state}
	for _, s := range []string{Identity, Box, Courier, Keyholder, Pantry, Parlor, Billing, Darkroom, Muse} {
		deps[s] = state
	}
	return deps
}

// edgeNotFound is the edge's answer to a path it routes nowhere.
func edgeNotFound() map[string]any {
	return map[string]any{
		"description": "At the gateway: no route, or the route's service is not configured.",
		"content": map[string]any{"application/problem+json": map[string]any{"schema": map[string]any{
			"allOf": []any{
				map[string]any{"$ref": "#/components/schemas/IdentityProblem"},
				map[string]any{"properties": map[string]any{
					"status": map[string]any{"const": 404},
					"code":   map[string]any{"const": "not_found"},
				}},
			},
		}}},
	}
}

// edgePaths are the routes the gateway answers itself.
func edgePaths() map[string]any {
	return map[string]any{
		"/healthz": map[string]any{"get": map[string]any{
			"operationId": "edgeHealthz", "summary": "Liveness", "tags": []any{"Probes"}, "security": []any{},
			"responses": map[string]any{"200": map[string]any{"description": "The process is up.",
				"content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/IdentityHealth"}}}}},
		}},
		"/readyz": map[string]any{"get": map[string]any{
			"operationId": "edgeReadyz", "summary": "Readiness", "tags": []any{"Probes"}, "security": []any{},
			"description": "Names every configured upstream, `key_set` and, when configured, `redis`. 503 only when the key set is unavailable; any other dependency down is 200 `degraded`.",
			"responses": map[string]any{
				"200": map[string]any{"description": "Ready, or degraded.", "content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/EdgeReadiness"}}}},
				"503": map[string]any{"description": "The key set is unavailable: no request can be verified.", "content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/EdgeReadiness"}}}},
			},
		}},
		"/openapi.json": map[string]any{"get": map[string]any{
			"operationId": "edgeOpenAPI", "summary": "This document", "tags": []any{"Meta"}, "security": []any{},
			"responses": map[string]any{
				"200": map[string]any{"description": "The merged public document.", "content": map[string]any{"application/json": map[string]any{"schema": map[string]any{"$ref": "#/components/schemas/IdentityOpenAPIDocument"}}}},
				"429": map[string]any{"$ref": "#/components/responses/EdgeProblemRateLimited"},
			},
		}},
	}
}

// serveOpenAPI answers the merged document.
func (g *Gateway) serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	if g.openapiErr != nil {
		writeError(w, r, g.log, g.openapiErr)
		return
	}
	g.openapiHandler.ServeHTTP(w, r)
}

func (g *Gateway) loadOpenAPI() {
	doc, err := buildOpenAPI(g.opts.Documents)
	if err != nil {
		g.openapiErr = fmt.Errorf("merging the OpenAPI documents: %w", err)
		return
	}
	g.openapiHandler = openapi.Handler(doc)
}
