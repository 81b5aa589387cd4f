package gateway

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// methodTable is what the services' documents say each of their paths
// answers to, so that the edge refuses a method a path lacks as the
// service would (405 with Allow) rather than as a protected route
// without credentials (401): GET /v1/password/reset is a 405 at the edge
// as it is at identity.
type methodTable struct {
	paths *http.ServeMux
	// allow is a documented path's methods (as a ServeMux pattern), for
	// an Allow header.
	allow map[string]string
}

// newMethodTable reads the services' documents (Options.Documents). A
// document that does not parse leaves its paths out: their requests go
// on as before.
func newMethodTable(docs map[string][]byte) methodTable {
	t := methodTable{paths: http.NewServeMux(), allow: map[string]string{}}
	methods := map[string][]string{}
	for service, doc := range docs {
		var d struct {
			Paths map[string]map[string]json.RawMessage `json:"paths"`
		}
		if json.Unmarshal(doc, &d) != nil {
			continue
		}
		for path, ops := range d.Paths {
			if servicePaths[path] || NotAtEdge[service][path] {
				continue
			}
			pattern := muxPattern(path)
			for _, m := range operationMethods {
				if _, ok := ops[m]; ok && !slices.Contains(methods[pattern], strings.ToUpper(m)) {
					methods[pattern] = append(methods[pattern], strings.ToUpper(m))
				}
			}
		}
	}
	for pattern, ms := range methods {
		if slices.Contains(ms, http.MethodGet) && !slices.Contains(ms, http.MethodHead) {
			ms = append(ms, http.MethodHead)
		}
		slices.Sort(ms)
		t.paths.Handle(pattern, http.NotFoundHandler())
		t.allow[pattern] = strings.Join(ms, ", ")
	}
	return t
}

// muxPattern is a document's path template as a ServeMux pattern whose
// wildcards are numbered, so that two documents naming the same segment
// differently ({id}, {accountID}) make one pattern.
func muxPattern(path string) string {
	n := 0
	return templateParam.ReplaceAllStringFunc(path, func(string) string {
		n++
		return "{p" + strconv.Itoa(n) + "}"
	})
}

// refused is the Allow header for r when its path is documented and its
// method is not; ok is false otherwise.
func (t methodTable) refused(r *http.Request) (allow string, ok bool) {
	_, pattern := t.paths.Handler(&http.Request{Method: http.MethodGet, URL: r.URL, Host: r.Host})
	allow, documented := t.allow[pattern]
	if !documented || slices.Contains(strings.Split(allow, ", "), r.Method) {
		return "", false
	}
	return allow, true
}
