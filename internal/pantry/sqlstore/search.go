package sqlstore

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/platformco/platform/internal/errs"
	"github.com/platformco/platform/internal/ids"
	"github.com/platformco/platform/internal/pantry"
	"github.com/platformco/platform/internal/sqldb"
)

// cursor is where a page starts: after the row (key, id) in the sort's
// order, or, for relevance, after offset rows. It travels as unpadded
// base64url of "sort|key|id" or "relevance|offset", which is opaque to
// clients and checked when it comes back.
type cursor struct {
	sort   string
	key    string
	id     string
	offset int
}

func (c cursor) encode() string {
	s := c.sort + "|" + c.key + "|" + c.id
	if c.sort == pantry.SortRelevance {
		s = c.sort + "|" + strconv.Itoa(c.offset)
	}
	return base64.RawURLEncoding.EncodeToString([]byte(s))
}

func badCursor() error {
	return &errs.Error{Code: pantry.CodeValidation, Message: "the cursor is not one this list gave",
		Fields: []errs.FieldError{{Field: "cursor", Code: pantry.RuleInvalid}}}
}

func decodeCursor(raw, sort string) (cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(raw)
	if err != nil {
		return cursor{}, badCursor()
	}
	parts := strings.Split(string(b), "|")
	if parts[0] != sort {
		return cursor{}, badCursor()
	}
	c := cursor{sort: sort}
	switch {
	case sort == pantry.SortRelevance && len(parts) == 2:
		n, err := strconv.Atoi(parts[1])
		if err != nil || n < 0 || n > 100_000 {
			return cursor{}, badCursor()
		}
		c.offset = n
		return c, nil
	case sort != pantry.SortRelevance && len(parts) == 3 && ids.Valid(parts[2]):
		c.key, c.id = parts[1], parts[2]
		if sort == pantry.SortStars {
			if _, err := strconv.ParseInt(c.key, 10, 64); err != nil {
				return cursor{}, badCursor()
			}
		}
		return c, nil
	}
	return cursor{}, badCursor()
}

// ListProjects implements pantry.Store over a checked query: public
// projects only, filtered by tag and use, ordered by the sort and, for a
// search, by whether the name matches first.
func (s *Store) ListProjects(ctx context.Context, q pantry.Query) (pantry.Page, error) {
	var c cursor
	if q.Cursor != "" {
		var err error
		if c, err = decodeCursor(q.Cursor, q.Sort); err != nil {
			return pantry.Page{}, err
		}
	}
	var (
		from    = "projects p"
		where   = []string{"p.visibility = 'public'"}
		filters []string
		args    []any
		order   string
	)
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	if q.Tag != "" {
		filters = append(filters, "EXISTS (SELECT 1 FROM project_tags t WHERE t.project_id = p.id AND t.tag = "+arg(q.Tag)+")")
	}
	if q.Uses != "" {
		filters = append(filters, "(' ' || p.uses || ' ') LIKE "+arg("% "+q.Uses+" %"))
	}
	if q.Q != "" {
		if s.db.Engine == sqldb.Postgres {
			query := arg(q.Q)
			from = "projects p, websearch_to_tsquery('english', " + query + ") tq"
			where = append(where, "p.search @@ tq")
			order = "(ts_filter(p.search, '{a}') @@ tq) DESC, ts_rank(p.search, tq) DESC, p.id DESC"
		} else {
			match := ftsQuery(q.Q)
			if match == "" {
				return pantry.Page{Projects: []pantry.Project{}}, nil
			}
			if q.Sort == pantry.SortRelevance {
				return s.searchFTS(ctx, q, c, match, filters, args)
			}
			from = "projects_fts JOIN projects p ON p.seq = projects_fts.rowid"
			where = append(where, "projects_fts MATCH "+arg(match))
		}
	}
	where = append(where, filters...)
	var key func(p pantry.Project) string
	switch q.Sort {
	case pantry.SortRecent:
		order = "p.id DESC"
		if c.id != "" {
			where = append(where, "p.id < "+arg(c.id))
		}
		key = func(pantry.Project) string { return "" }
	case pantry.SortStars:
		order = "p.stars DESC, p.id DESC"
		if c.id != "" {
			n, _ := strconv.ParseInt(c.key, 10, 64)
			a, b := arg(n), arg(c.id)
			where = append(where, fmt.Sprintf("(p.stars < %s OR (p.stars = %s AND p.id < %s))", a, a, b))
		}
		key = func(p pantry.Project) string { return strconv.FormatInt(p.Stars, 10) }
	case pantry.SortName:
		order = "p.sort_name, p.id"
		if c.id != "" {
			a, b := arg(c.key), arg(c.id)
			where = append(where, fmt.Sprintf("(p.sort_name > %s OR (p.sort_name = %s AND p.id > %s))", a, a, b))
		}
		key = func(p pantry.Project) string { return strings.ToLower(p.Name) }
	}
	query := "SELECT " + columns + " FROM " + from + " WHERE " + strings.Join(where, " AND ") +
		" ORDER BY " + order + " LIMIT " + arg(q.Limit+1)
	if q.Sort == pantry.SortRelevance && c.offset > 0 {
		query += " OFFSET " + arg(c.offset)
	}
	return s.page(ctx, q, c, key, query, args)
}

// searchFTS is a search in relevance order on SQLite. The index holds
// public projects only (decision 0028), so the ranking runs over FTS5's
// own rows: a match's project row is read only when a filter needs it,
// and only the page's rows are read whole.
func (s *Store) searchFTS(ctx context.Context, q pantry.Query, c cursor, match string, filters []string, args []any) (pantry.Page, error) {
	arg := func(v any) string {
		args = append(args, v)
		return "$" + strconv.Itoa(len(args))
	}
	where := "projects_fts MATCH " + arg(match)
	if len(filters) > 0 {
		where += " AND EXISTS (SELECT 1 FROM projects p WHERE p.seq = f.rowid AND " + strings.Join(filters, " AND ") + ")"
	}
	query := "SELECT " + columns + " FROM (SELECT f.rowid AS seq, " +
		"f.rowid IN (SELECT rowid FROM projects_fts WHERE projects_fts MATCH " + arg("name : ("+match+")") + ") AS name_hit, " +
		"bm25(projects_fts, 10.0, 4.0, 1.0) AS score FROM projects_fts f WHERE " + where +
		" ORDER BY name_hit DESC, score, f.rowid DESC LIMIT " + arg(q.Limit+1) + " OFFSET " + arg(c.offset) +
		") m JOIN projects p ON p.seq = m.seq ORDER BY m.name_hit DESC, m.score, m.seq DESC"
	return s.page(ctx, q, c, nil, query, args)
}

// page runs a list query that asked for one row more than the page and
// makes the next page's cursor from the last row kept.
func (s *Store) page(ctx context.Context, q pantry.Query, c cursor, key func(pantry.Project) string, query string, args []any) (pantry.Page, error) {
	rows, err := s.db.Query(ctx, query, args...)
	if err != nil {
		return pantry.Page{}, err
	}
	list, err := collect(rows)
	if err != nil {
		return pantry.Page{}, err
	}
	page := pantry.Page{Projects: list}
	if len(list) > q.Limit {
		page.Projects = list[:q.Limit]
		last := page.Projects[q.Limit-1]
		next := cursor{sort: q.Sort, offset: c.offset + q.Limit}
		if key != nil {
			next.key, next.id = key(last), last.ID
		}
		page.Next = next.encode()
	}
	return page, nil
}

// ftsQuery turns search text into an FTS5 query that cannot be a syntax
// error, with websearch_to_tsquery's meaning: words are ANDed, "quoted
// words" are a phrase, a leading - excludes a word, and `or` between
// words is OR. Every word is a quoted string of letters and digits only,
// so no FTS5 operator, column filter or quote in the input reaches the
// parser. "" when nothing searchable is left.
func ftsQuery(text string) string {
	type term struct {
		words  []string
		negate bool
	}
	var (
		groups [][]term
		cur    []term
		negs   []term
	)
	words := func(s string) []string {
		return strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	}
	for i := 0; i < len(text); {
		switch {
		case text[i] == '"':
			end := strings.IndexByte(text[i+1:], '"')
			var phrase string
			if end < 0 {
				phrase, i = text[i+1:], len(text)
			} else {
				phrase, i = text[i+1:i+1+end], i+end+2
			}
			if w := words(phrase); len(w) > 0 {
				cur = append(cur, term{words: w})
			}
		case text[i] == ' ' || text[i] == '\t':
			i++
		default:
			end := strings.IndexAny(text[i:], " \t\"")
			if end < 0 {
				end = len(text) - i
			}
			tok := text[i : i+end]
			i += end
			negate := strings.HasPrefix(tok, "-")
			if strings.EqualFold(tok, "or") && len(cur) > 0 {
				groups, cur = append(groups, cur), nil
				continue
			}
			for _, w := range words(tok) {
				if negate {
					negs = append(negs, term{words: []string{w}, negate: true})
					continue
				}
				cur = append(cur, term{words: []string{w}})
			}
		}
	}
	if len(cur) > 0 {
		groups = append(groups, cur)
	}
	if len(groups) == 0 {
		return ""
	}
	quote := func(t term) string {
		return `"` + strings.Join(t.words, " ") + `"`
	}
	var b strings.Builder
	for gi, g := range groups {
		if gi > 0 {
			b.WriteString(" OR ")
		}
		b.WriteString("(")
		for ti, t := range g {
			if ti > 0 {
				b.WriteString(" AND ")
			}
			b.WriteString(quote(t))
		}
		b.WriteString(")")
	}
	out := b.String()
	if len(groups) > 1 {
		out = "(" + out + ")"
	}
	for _, t := range negs {
		out += " NOT " + quote(t)
	}
	return out
}
