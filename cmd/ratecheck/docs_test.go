package main

import (
	"encoding/json"
	"flag"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/connectbyjbrh/ratecheck/attack/scenario"
	"github.com/connectbyjbrh/ratecheck/method"
	"github.com/connectbyjbrh/ratecheck/timeline"
)

// repoRoot is the repository's root, seen from this package's directory.
const repoRoot = "../.."

// readDoc returns the text of a file of the repository, by its path from the
// root.
func readDoc(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, rel))
	if err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return string(b)
}

// skipDir reports whether a walk of the repository skips a directory, as
// the go command does (hidden, _-prefixed and testdata directories) and
// the archived runs.
func skipDir(rel, name string) bool {
	return rel != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || rel == "results")
}

// goPackages returns the directories of the repository, relative to its root
// and with a trailing slash, that hold non-test Go files: its packages.
func goPackages(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, path)
		if d.IsDir() {
			if skipDir(filepath.ToSlash(rel), d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), ".go") && !strings.HasSuffix(d.Name(), "_test.go") {
			seen[filepath.ToSlash(filepath.Dir(rel))+"/"] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// markdownFiles returns every Markdown file of the repository, relative to
// its root.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repoRoot, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if skipDir(rel, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), ".md") {
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// section returns the lines of doc under the heading that is exactly
// heading, up to the next heading of the same or a higher level ("" when
// there is no such heading).
func section(doc, heading string) string {
	level := strings.IndexByte(heading, ' ')
	var out []string
	in := false
	for _, line := range strings.Split(doc, "\n") {
		if in && strings.HasPrefix(line, "#") {
			l := strings.IndexByte(line, ' ')
			if l > 0 && l <= level && strings.Trim(line[:l], "#") == "" {
				break
			}
		}
		if in {
			out = append(out, line)
		}
		if line == heading {
			in = true
		}
	}
	return strings.Join(out, "\n")
}

// tables returns the Markdown tables of text: per table, its rows (the
// header first, the separator left out) as trimmed cells.
func tables(text string) [][][]string {
	var out [][][]string
	var cur [][]string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			if cur != nil {
				out, cur = append(out, cur), nil
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if strings.Trim(strings.Join(cells, ""), "-: ") == "" {
			continue // the separator row
		}
		cur = append(cur, cells)
	}
	if cur != nil {
		out = append(out, cur)
	}
	return out
}

// codeName returns the first `quoted` name of a table cell ("" for none).
func codeName(cell string) string {
	if m := regexp.MustCompile("`([^`]+)`").FindStringSubmatch(cell); m != nil {
		return m[1]
	}
	return ""
}

// TestArchitectureListsEveryPackage: the package map of ARCHITECTURE.md
// lists every Go package of the repository, once, and no package that is
// gone.
func TestArchitectureListsEveryPackage(t *testing.T) {
	doc := readDoc(t, "ARCHITECTURE.md")
	m := section(doc, "## Package map")
	if m == "" {
		t.Fatal(`ARCHITECTURE.md: no "## Package map" section`)
	}
	listed := map[string]int{}
	for _, tb := range tables(m) {
		for _, row := range tb[1:] {
			listed[codeName(row[0])]++
		}
	}
	pkgs := goPackages(t)
	for _, p := range pkgs {
		switch listed[p] {
		case 0:
			t.Errorf("ARCHITECTURE.md: package %s is missing from the package map: add a row | `%s` | what it is |", p, p)
		case 1:
		default:
			t.Errorf("ARCHITECTURE.md: package %s is listed %d times in the package map: keep one row", p, listed[p])
		}
	}
	for p := range listed {
		if !slices.Contains(pkgs, p) {
			t.Errorf("ARCHITECTURE.md: the package map lists %s, which is no Go package of the repository (any more): remove its row or fix its path (rows are `dir/`)", p)
		}
	}
}

// TestFeatureFoldersAreTheImports: each row of ARCHITECTURE.md's feature
// table lists exactly the repository's library packages (internal/ aside)
// that its command files import, so the table says where a feature's code
// is as the code says it.
func TestFeatureFoldersAreTheImports(t *testing.T) {
	doc := readDoc(t, "ARCHITECTURE.md")
	m := section(doc, "## Where each feature lives")
	tbs := tables(m)
	if len(tbs) == 0 {
		t.Fatal(`ARCHITECTURE.md: no table in a "## Where each feature lives" section`)
	}
	const module = "github.com/connectbyjbrh/ratecheck/"
	for _, row := range tbs[0][1:] {
		if len(row) != 3 {
			t.Fatalf("ARCHITECTURE.md: feature row %q: want | feature | command files | packages |", row)
		}
		files, err := filepath.Glob(filepath.Join(repoRoot, codeName(row[1])))
		if err != nil || len(files) == 0 {
			t.Errorf("ARCHITECTURE.md: feature %s: %s matches no file (%v)", row[0], row[1], err)
			continue
		}
		imported := map[string]bool{}
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, im := range f.Imports {
				p := strings.Trim(im.Path.Value, `"`)
				if strings.HasPrefix(p, module) && !strings.HasPrefix(p, module+"internal/") {
					imported[strings.TrimPrefix(p, module)] = true
				}
			}
		}
		listed := map[string]bool{}
		for _, p := range strings.Split(row[2], ",") {
			listed[strings.Trim(strings.TrimSpace(p), "`")] = true
		}
		for p := range imported {
			if !listed[p] {
				t.Errorf("ARCHITECTURE.md: feature %s: its command files import %s, which its row does not list", row[0], p)
			}
		}
		for p := range listed {
			if !imported[p] {
				t.Errorf("ARCHITECTURE.md: feature %s lists %s, which its command files (%s) do not import", row[0], p, row[1])
			}
		}
	}
}

// linkRE matches a Markdown inline link or image: [text](target).
var linkRE = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// TestDocLinksResolve: every relative link of the repository's Markdown
// files resolves to a file inside the repository (and its #anchor to a
// heading of that file), and no text points outside the repository.
func TestDocLinksResolve(t *testing.T) {
	files := markdownFiles(t)
	for _, must := range []string{"README.md", "ARCHITECTURE.md", "CONTRIBUTING.md", "docs/method.md"} {
		if !slices.Contains(files, must) {
			t.Errorf("%s is missing", must)
		}
	}
	anchors := map[string]map[string]bool{}
	for _, f := range files {
		anchors[f] = headingAnchors(readDoc(t, f))
	}
	for _, f := range files {
		doc := readDoc(t, f)
		// Built from parts, so that this file does not itself name the
		// folder beside the repository it looks for.
		for _, bad := range []string{".." + "/" + "shared", "/work/", "/tmp/"} {
			if strings.Contains(doc, bad) {
				t.Errorf("%s: mentions %q, outside the repository: the documentation stands on its own", f, bad)
			}
		}
		for _, m := range linkRE.FindAllStringSubmatch(doc, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			rel := f
			if path != "" {
				if strings.HasPrefix(path, "/") {
					t.Errorf("%s: link %s is absolute: make it relative to %s", f, target, filepath.Dir(f))
					continue
				}
				rel = filepath.ToSlash(filepath.Join(filepath.Dir(f), path))
				if rel == ".." || strings.HasPrefix(rel, "../") {
					t.Errorf("%s: link %s leaves the repository: link only to files inside it", f, target)
					continue
				}
				st, err := os.Stat(filepath.Join(repoRoot, rel))
				if err != nil {
					t.Errorf("%s: link %s: no file %s in the repository", f, target, rel)
					continue
				}
				if st.IsDir() {
					t.Errorf("%s: link %s is a directory: link to a file in it (its README.md, say)", f, target)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(rel, ".md") && !anchors[rel][anchor] {
				t.Errorf("%s: link %s: %s has no heading #%s", f, target, rel, anchor)
			}
		}
	}
}

// headingAnchors returns the anchors GitHub gives the headings of doc:
// lowercase, punctuation dropped, spaces as hyphens, repeats numbered.
func headingAnchors(doc string) map[string]bool {
	out := map[string]bool{}
	fence := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "```") {
			fence = !fence
		}
		if fence || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r > 127:
				b.WriteRune(r)
			}
		}
		a := b.String()
		for n, try := 1, a; ; n++ {
			if !out[try] {
				out[try] = true
				break
			}
			try = a + "-" + string(rune('0'+n))
		}
	}
	return out
}

// TestReadmeIsAFrontDoor: README.md is at most 200 lines and starts a
// newcomer with the two commands of its quick start.
func TestReadmeIsAFrontDoor(t *testing.T) {
	doc := readDoc(t, "README.md")
	if n := strings.Count(strings.TrimRight(doc, "\n"), "\n") + 1; n > 200 {
		t.Errorf("README.md has %d lines, want at most 200: move detail to docs/", n)
	}
	for _, want := range []string{"go run ./cmd/ratecheck verify", "go test ./..."} {
		if !strings.Contains(doc, want) {
			t.Errorf("README.md does not contain %q, the quick start's command", want)
		}
	}
}

// TestReadmeListsEveryCommand: the README's command table names every
// subcommand, and each has its page under docs/.
func TestReadmeListsEveryCommand(t *testing.T) {
	doc := readDoc(t, "README.md")
	listed := map[string]bool{}
	for _, tb := range tables(section(doc, "## Commands")) {
		for _, row := range tb[1:] {
			if f := strings.Fields(codeName(row[0])); len(f) >= 2 && f[0] == "ratecheck" {
				listed[f[1]] = true
			}
		}
	}
	for name := range commands() {
		if !listed[name] {
			t.Errorf("README.md: the command table has no row for ratecheck %s", name)
		}
	}
	for name := range listed {
		if _, ok := commands()[name]; !ok && name != "help" {
			t.Errorf("README.md: the command table lists ratecheck %s, which is no command", name)
		}
	}
}

// flagRE matches a flag line of a command's -h output.
var flagRE = regexp.MustCompile(`(?m)^  -([a-z0-9][a-z0-9-]*)`)

// TestCommandPagesNameEveryFlag: each command's page under docs/ names
// every flag of its -h as --flag, and no flag the command lacks.
func TestCommandPagesNameEveryFlag(t *testing.T) {
	pages := map[string]string{"verify": "docs/verify.md", "attack": "docs/attack.md", "analyze": "docs/analyze.md",
		"report": "docs/report.md", "compare": "docs/compare.md", "fleet": "docs/fleet.md", "serve": "docs/serve.md",
		"k8s-job": "docs/k8s-job.md", "history": "docs/history.md", "capacity": "docs/capacity.md"}
	flagless := map[string]string{"version": "", "contract": "docs/contract.md"} // no flags to name; contract's page says its actions
	for name, page := range flagless {
		if _, ok := commands()[name]; !ok {
			t.Errorf("%s is no command", name)
		}
		if page != "" && !strings.Contains(readDoc(t, page), "ratecheck "+name) {
			t.Errorf("%s does not show ratecheck %s", page, name)
		}
	}
	for name := range commands() {
		if _, ok := pages[name]; !ok && flagless[name] == "" && name != "version" {
			t.Errorf("command %s has no page under docs/: add docs/%s.md and a row of README.md's command table", name, name)
		}
	}
	for name, page := range pages {
		_, _, help := runCmd(t, name, "-h")
		has := map[string]bool{}
		for _, m := range flagRE.FindAllStringSubmatch(help, -1) {
			has[m[1]] = true
		}
		if len(has) == 0 {
			t.Errorf("ratecheck %s -h lists no flag:\n%s", name, help)
			continue
		}
		doc := readDoc(t, page)
		for f := range has {
			if !regexp.MustCompile("`--" + regexp.QuoteMeta(f) + "[ =`]").MatchString(doc) {
				t.Errorf("%s does not name --%s, a flag of ratecheck %s: add it to its flag table", page, f, name)
			}
		}
		for _, tb := range tables(section(doc, "## Flags")) {
			for _, row := range tb[1:] {
				for _, m := range regexp.MustCompile("`--([a-z0-9-]+)").FindAllStringSubmatch(row[0], -1) {
					if !has[m[1]] {
						t.Errorf("%s: the flag table lists --%s, which ratecheck %s does not have", page, m[1], name)
					}
				}
			}
		}
	}
}

// TestCheckNamesAreOneList: the check names of package method are the
// JSON Schema's enum of checks[].name (and the order its checks list
// says), the check table of docs/method.md, and any check table of the
// README; the groups are method.md's group table and verify's -h.
func TestCheckNamesAreOneList(t *testing.T) {
	names := method.CheckNames()

	var schema struct {
		Defs struct {
			Surface struct {
				Properties struct {
					Checks struct {
						Description string `json:"description"`
					} `json:"checks"`
				} `json:"properties"`
			} `json:"surface"`
			Check struct {
				Properties struct {
					Name struct {
						Description string   `json:"description"`
						Enum        []string `json:"enum"`
					} `json:"name"`
				} `json:"properties"`
			} `json:"check"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal([]byte(readDoc(t, "docs/schema/verdict.json")), &schema); err != nil {
		t.Fatalf("docs/schema/verdict.json: %v", err)
	}
	if enum := schema.Defs.Check.Properties.Name.Enum; !slices.Equal(enum, names) {
		t.Errorf("docs/schema/verdict.json: $defs.check.properties.name.enum is %v, want method.CheckNames() %v", enum, names)
	}
	if d := schema.Defs.Surface.Properties.Checks.Description; !strings.Contains(d, strings.Join(names, ", ")+".") {
		t.Errorf("docs/schema/verdict.json: $defs.surface.properties.checks.description %q does not give the order %s", d, strings.Join(names, ", "))
	}
	for _, n := range names {
		if !strings.Contains(schema.Defs.Check.Properties.Name.Description, n+": ") {
			t.Errorf("docs/schema/verdict.json: $defs.check.properties.name.description does not say what %s is (%q)", n, n+": …")
		}
	}

	surfaceTables := func(file, text string) int {
		found := 0
		for _, tb := range tables(text) {
			if len(tb) == 0 || tb[0][0] != "check" {
				continue
			}
			var got []string
			for _, row := range tb[1:] {
				got = append(got, codeName(row[0]))
			}
			if !slices.ContainsFunc(got, func(n string) bool { return slices.Contains(names, n) }) {
				continue // a fleet's checks
			}
			found++
			if !slices.Equal(got, names) {
				t.Errorf("%s: a check table lists %v, want method.CheckNames() %v in that order", file, got, names)
			}
		}
		return found
	}
	if surfaceTables("docs/method.md", section(readDoc(t, "docs/method.md"), "## The checks")) == 0 {
		t.Errorf(`docs/method.md: no check table under "## The checks" (| check | fails when | …)`)
	}
	for _, f := range markdownFiles(t) {
		if f != "docs/method.md" {
			surfaceTables(f, readDoc(t, f))
		}
	}

	groups := method.CheckGroups()
	got := map[string][]string{}
	for _, tb := range tables(section(readDoc(t, "docs/method.md"), "### Check groups")) {
		for _, row := range tb[1:] {
			for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(row[1], -1) {
				got[codeName(row[0])] = append(got[codeName(row[0])], m[1])
			}
		}
	}
	if len(got) != len(groups) {
		t.Errorf("docs/method.md: the table under \"### Check groups\" has groups %v, want method.CheckGroups() %v", got, groups)
	}
	var order []string
	for _, c := range method.Checks() {
		if !slices.Contains(order, c.Group) {
			order = append(order, c.Group)
		}
	}
	var line []string
	for _, g := range order {
		if !slices.Equal(got[g], groups[g]) {
			t.Errorf("docs/method.md: check group %s lists %v, want %v (method.CheckGroups())", g, got[g], groups[g])
		}
		line = append(line, g+" = "+strings.Join(groups[g], ", "))
	}
	_, _, help := runCmd(t, "verify", "-h")
	if want := strings.Join(line, "; ") + "."; !strings.Contains(strings.Join(strings.Fields(help), " "), want) {
		t.Errorf("ratecheck verify -h does not list the check groups as %q", want)
	}
}

// TestFailureTableIsOneList: profiles/errors.yaml probes exactly the
// non-retired method.ContractRows, each once and in their order (which
// rows judge which stream is TestEveryStreamIsJudged's), and docs/contract.md's
// probe table lists the same streams.
func TestFailureTableIsOneList(t *testing.T) {
	var want []string
	for _, r := range method.ContractRows {
		if !r.Retired {
			want = append(want, r.Stream)
		}
	}
	errs, err := scenario.LoadEmbedded("errors.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range errs.Streams {
		got = append(got, s.Name)
	}
	if !slices.Equal(got, want) {
		t.Errorf("profiles/errors.yaml: streams %v, want the non-retired method.ContractRows %v, each once, in that order", got, want)
	}

	var listed []string
	for _, tb := range tables(readDoc(t, "docs/contract.md")) {
		if len(tb) > 0 && strings.HasPrefix(tb[0][0], "probe") {
			for _, row := range tb[1:] {
				listed = append(listed, codeName(row[0]))
			}
		}
	}
	if !slices.Equal(listed, want) {
		t.Errorf("docs/contract.md: the probe table lists %v, want the non-retired method.ContractRows %v in that order", listed, want)
	}
}

// TestProbePlanTableIsThePlan: the probe-plan table of docs/method.md
// names exactly the streams of verify's plan, its follow-up included, the
// failure-table probes as one row.
func TestProbePlanTableIsThePlan(t *testing.T) {
	plan, err := scenario.VerifyProfile(scenario.VerifyOptions{RESTLimit: 240, MCPLimit: 120, Sources: []string{"127.0.0.1", "127.0.0.2", "127.0.0.3"},
		Limits: true, Isolation: true, Contract: true, FollowUpUntil: timeline.DefaultMaxDuration})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, s := range plan.Streams {
		if !method.IsContractStream(s.Name) && !slices.Contains(want, s.Name) {
			want = append(want, s.Name)
		}
	}
	var got []string
	for _, tb := range tables(section(readDoc(t, "docs/method.md"), "## The probe plan of `verify`")) {
		if len(tb) == 0 || tb[0][0] != "stream" {
			continue
		}
		for _, row := range tb[1:] {
			if n := codeName(row[0]); n != "" {
				got = append(got, n)
			}
		}
	}
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("docs/method.md: the probe-plan table names streams %v, want the streams of verify's plan %v", got, want)
	}
}

// invocationRE matches a command line of ratecheck in a text: the
// command and what follows it on the line, up to a shell separator or the
// end of a code span.
var invocationRE = regexp.MustCompile("ratecheck ([a-z][a-z0-9-]*)([^`|;&#)\n]*)")

// TestDocsNameOnlyFlagsCommandsHave: wherever the repository's Markdown
// or a command's -h shows a command line of ratecheck, every --flag on it
// is a flag of that command (as its -h lists it), so that no page sends a
// reader to a flag the command lacks.
func TestDocsNameOnlyFlagsCommandsHave(t *testing.T) {
	flags := map[string]map[string]bool{}
	texts := map[string]string{}
	for name := range commands() {
		_, _, help := runCmd(t, name, "-h")
		flags[name] = map[string]bool{"h": true, "help": true}
		for _, m := range flagRE.FindAllStringSubmatch(help, -1) {
			flags[name][m[1]] = true
		}
		texts["ratecheck "+name+" -h"] = help
	}
	// contract discover has flags of its own.
	_, _, help := runCmd(t, "contract", "discover", "-h")
	flags["contract discover"] = map[string]bool{"h": true, "help": true}
	for _, m := range flagRE.FindAllStringSubmatch(help, -1) {
		flags["contract discover"][m[1]] = true
	}
	texts["ratecheck contract discover -h"] = help
	for _, f := range markdownFiles(t) {
		texts[f] = readDoc(t, f)
	}
	checked := 0
	for where, text := range texts {
		for _, m := range invocationRE.FindAllStringSubmatch(text, -1) {
			has, ok := flags[m[1]]
			if !ok {
				continue // prose: "ratecheck itself", "ratecheck history makes"
			}
			cmd := m[1]
			for _, tok := range strings.Fields(m[2]) {
				if tok == "--" && cmd == "k8s-job" {
					// the flags of the command every pod runs
					cmd = "attack"
					if strings.Contains(m[2], "--capacity") {
						cmd = "capacity"
					}
					has = flags[cmd]
					continue
				}
				if tok == "-->" { // the end of a sample's mark (TestDocSamples)
					break
				}
				if tok == "discover" && cmd == "contract" {
					cmd = "contract discover"
					has = flags[cmd]
					continue
				}
				if !strings.HasPrefix(tok, "--") || len(tok) < 3 {
					continue
				}
				name, _, _ := strings.Cut(strings.TrimPrefix(tok, "--"), "=")
				name = strings.TrimRight(name, ".,:'\"")
				checked++
				if !has[name] {
					t.Errorf("%s: %q names --%s, which ratecheck %s does not have", where, strings.TrimSpace(m[0]), name, cmd)
				}
			}
		}
	}
	t.Logf("%d flags on command lines checked", checked)
	if checked < 50 {
		t.Errorf("only %d flags on command lines were checked: is the pattern still finding them?", checked)
	}
}

// updateReadme rewrites README.md's first-run sample from the archived
// run of testdata/readme-run instead of checking it.
var updateReadme = flag.Bool("update-readme", false, "rewrite README.md's first-run sample from testdata/readme-run")

// readmeVerdictIntro is the README line the first-run verdict sample
// follows.
const readmeVerdictIntro = "and the verdict on stdout, one table of checks per surface (the MCP table is alike):\n\n```\n"

// TestReadmeFirstRun: the verdict README.md shows for a first run is
// what ratecheck prints today for a real run of the embedded target,
// archived in testdata/readme-run (analyze of a verify run folder prints
// what verify printed): the REST table to its latency line, the MCP
// header and the verdict line, the run folder as results/. So the sample
// cannot go stale when a message changes; go test -run TestReadmeFirstRun
// -update-readme rewrites it, and a new real run may replace the folder.
// The stderr sample above it names the same run folder.
func TestReadmeFirstRun(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("testdata", "readme-run", "*-verify"))
	if len(dirs) != 1 {
		t.Fatalf("testdata/readme-run holds %v, want one verify run folder", dirs)
	}
	code, stdout, stderr := runCmd(t, "analyze", dirs[0])
	if code != exitOK {
		t.Fatalf("analyze of the README's run: exit %d, want 0 (a pass)\n%s", code, stderr)
	}
	lines := strings.Split(strings.ReplaceAll(stdout, filepath.Join("testdata", "readme-run")+string(filepath.Separator), "results/"), "\n")
	var sample []string
	rest := false
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "PASS  REST:"):
			rest = true
			sample = append(sample, l)
		case rest && strings.HasPrefix(l, "  latency:"):
			rest = false
			sample = append(sample, l, "  …")
		case rest:
			sample = append(sample, l)
		case strings.HasPrefix(l, "PASS  MCP:"):
			sample = append(sample, l, "  …")
		case strings.HasPrefix(l, "verdict: "):
			sample = append(sample, l)
		}
	}
	want := strings.Join(sample, "\n") + "\n"
	doc := readDoc(t, "README.md")
	i := strings.Index(doc, readmeVerdictIntro)
	if i < 0 {
		t.Fatalf("README.md has no %q", readmeVerdictIntro)
	}
	from := i + len(readmeVerdictIntro)
	to := from + strings.Index(doc[from:], "```")
	if *updateReadme {
		doc = doc[:from] + want + doc[to:]
		if err := os.WriteFile(filepath.Join(repoRoot, "README.md"), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if got := doc[from:to]; got != want {
		t.Errorf("README.md's first-run verdict is not what ratecheck prints for testdata/readme-run (go test ./cmd/ratecheck -run TestReadmeFirstRun -update-readme rewrites it):\n--- README\n%s--- ratecheck\n%s", got, want)
	}
	if run := "results/" + filepath.Base(dirs[0]); !strings.Contains(doc[:i], "ratecheck verify: report "+run+"/report.html") {
		t.Errorf("README.md's stderr sample does not name the run folder of its verdict, %s", run)
	}
}
