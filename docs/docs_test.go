// Package docs holds the project's documents; its test checks that they
// stand on their own: a reader who clones the repository finds every
// document they link to or name.
package docs

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	// mdLink is a Markdown link's target.
	mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	// codePath is a relative path in a code span: `../x`, `./x`.
	codePath = regexp.MustCompile("`(\\.{1,2}/[^`\\s]*)`")
	// mdName is a Markdown document named in the text.
	mdName = regexp.MustCompile(`[\w./-]*\b[\w-]+\.md\b`)
)

// TestDocumentsStandOnTheirOwn: the README, docs/, deploy/ and the
// services' OpenAPI documents link to nothing outside the repository,
// every relative link resolves to a file or directory in it, and every
// Markdown document they name is one of the repository's.
func TestDocumentsStandOnTheirOwn(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	var documents []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return nil
		}
		if strings.HasSuffix(p, ".md") {
			names[d.Name()] = true
		}
		top, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
		switch {
		case rel == "README.md", (top == "docs" || top == "deploy") && strings.HasSuffix(p, ".md"):
			documents = append(documents, rel)
		case strings.HasPrefix(filepath.ToSlash(rel), "internal/") && strings.HasSuffix(p, "/httpapi/openapi.json"):
			documents = append(documents, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(documents) < 5 {
		t.Fatalf("found %d documents under %s, want the README, docs/, deploy/ and the OpenAPI documents", len(documents), root)
	}
	for _, doc := range documents {
		raw, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		text := string(raw)
		dir := path.Dir(filepath.ToSlash(doc))
		var targets []string
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			targets = append(targets, m[1])
		}
		for _, m := range codePath.FindAllStringSubmatch(text, -1) {
			targets = append(targets, m[1])
		}
		for _, target := range targets {
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, _, _ := strings.Cut(target, "#")
			resolved := path.Clean(path.Join(dir, file))
			if resolved == ".." || strings.HasPrefix(resolved, "../") {
				t.Errorf("%s: %q leaves the repository", doc, target)
				continue
			}
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(resolved))); err != nil && !strings.HasPrefix(target, "./") {
				t.Errorf("%s: %q is not in the repository", doc, target)
			}
		}
		for _, m := range mdName.FindAllString(text, -1) {
			if !names[path.Base(m)] {
				t.Errorf("%s: names %q, which is not in the repository", doc, m)
			}
		}
	}
}
