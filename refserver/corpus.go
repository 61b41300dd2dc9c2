package refserver

import (
	"embed"
	"encoding/json"
	"path"
	"sort"
	"strings"
)

//go:embed corpus/pages/*.md corpus/manifests/*.json
var corpusFS embed.FS

// page is one Markdown document of the built-in corpus.
type page struct {
	Ref      string `json:"ref"`
	Title    string `json:"title"`
	Markdown string `json:"markdown"`
	// lower are Markdown and Title in lower case, and lines Markdown's
	// lines with each in lower case: a search reads them on every request.
	lowerBody, lowerTitle string
	lines, lowerLines     []string
}

// corpus is the read-only content the reference target serves.
type corpus struct {
	pages     map[string]page
	order     []string // refs, sorted
	manifests map[string]json.RawMessage
}

// loadCorpus reads the embedded corpus; it panics on a malformed file, which
// is a build defect caught by every test.
func loadCorpus() *corpus {
	c := &corpus{pages: map[string]page{}, manifests: map[string]json.RawMessage{}}
	entries, _ := corpusFS.ReadDir("corpus/pages")
	for _, e := range entries {
		b, err := corpusFS.ReadFile("corpus/pages/" + e.Name())
		if err != nil {
			panic(err)
		}
		ref := strings.TrimSuffix(e.Name(), ".md")
		text := string(b)
		title, _, _ := strings.Cut(strings.TrimPrefix(text, "# "), "\n")
		lines := strings.Split(text, "\n")
		lower := make([]string, len(lines))
		for i, l := range lines {
			lower[i] = strings.ToLower(l)
		}
		c.pages[ref] = page{Ref: ref, Title: title, Markdown: text, lowerBody: strings.ToLower(text), lowerTitle: strings.ToLower(title), lines: lines, lowerLines: lower}
		c.order = append(c.order, ref)
	}
	sort.Strings(c.order)
	entries, _ = corpusFS.ReadDir("corpus/manifests")
	for _, e := range entries {
		b, err := corpusFS.ReadFile(path.Join("corpus/manifests", e.Name()))
		if err != nil || !json.Valid(b) {
			panic("corpus manifest " + e.Name() + " is not valid JSON")
		}
		c.manifests[strings.TrimSuffix(e.Name(), ".json")] = json.RawMessage(b)
	}
	return c
}

// hit is one search result.
type hit struct {
	Ref     string `json:"ref"`
	Title   string `json:"title"`
	Snippet string `json:"snippet"`
	score   int
}

// search ranks pages by how often the query's words occur in them, title
// matches counting double, and returns at most limit hits.
func (c *corpus) search(query string, limit int) []hit {
	words := strings.Fields(strings.ToLower(query))
	var hits []hit
	for _, ref := range c.order {
		p := c.pages[ref]
		score := 0
		for _, w := range words {
			score += strings.Count(p.lowerBody, w) + 2*strings.Count(p.lowerTitle, w)
		}
		if score == 0 {
			continue
		}
		hits = append(hits, hit{Ref: ref, Title: p.Title, Snippet: p.snippet(words), score: score})
	}
	sort.SliceStable(hits, func(i, j int) bool { return hits[i].score > hits[j].score })
	if len(hits) > limit {
		hits = hits[:limit]
	}
	return hits
}

// snippet returns the first line of the page that holds one of words (in
// lower case), trimmed to 160 bytes.
func (p page) snippet(words []string) string {
	for i, line := range p.lines {
		for _, w := range words {
			if strings.Contains(p.lowerLines[i], w) {
				if len(line) > 160 {
					line = line[:160]
				}
				return strings.TrimSpace(line)
			}
		}
	}
	return ""
}
