package pantry

import (
	"bytes"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// markdown renders descriptions: goldmark with raw HTML off (its default:
// raw HTML is dropped, dangerous link schemes are not linked), then
// bluemonday's UGC policy over the output, so whatever goldmark lets
// through, no script, event handler, javascript: or data: URL survives.
var (
	markdown = goldmark.New(goldmark.WithExtensions(extension.GFM))
	policy   = bluemonday.UGCPolicy()
)

// RenderMarkdown returns src rendered as safe HTML.
func RenderMarkdown(src string) (string, error) {
	var buf bytes.Buffer
	if err := markdown.Convert([]byte(src), &buf); err != nil {
		return "", err
	}
	return policy.SanitizeReader(&buf).String(), nil
}
