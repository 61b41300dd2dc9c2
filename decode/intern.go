package decode

import (
	"bytes"
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/connectbyjbrh/ratecheck/archive"
	"github.com/connectbyjbrh/ratecheck/mcpwire"
)

// The interner, which turns each result into a record of shared labels and
// answers, and what it does on the way: the samples a report quotes, the
// judging of refusal bodies, and the caps of what it remembers.

// The caps of what an interner and its reader remember besides the tables:
// samples, Judge's verdicts, and the answers and bodies shared. They bound
// memory only; the bounds of the tables themselves (maxLabels, maxSources,
// maxAnswers, maxLabelLen, maxFolded) are in bounds.go.
const (
	// maxSamples is how many answers of each label, status and judgement a
	// reader keeps a sample of.
	maxSamples = 3
	// maxSampled is how many samples a reader keeps in all, of every key
	// (readInputs starts afresh at each file).
	maxSampled = 4096
	// maxJudgedPerSurface is how many refusal bodies' verdicts a surface's
	// judgeMemo holds; further bodies are judged every time they come.
	maxJudgedPerSurface = 1024
	// maxJudged is how many verdicts an interner's judgeMemos hold in all,
	// every surface's.
	maxJudged = 4096
	// maxHeaderAnswers is how many distinct answers a file's results keep
	// with the headers that change with every answer (Retry-After,
	// RateLimit, the advertised fields), the first in file order; past it,
	// new answers drop them (see answer).
	maxHeaderAnswers = 4096
	// maxSharedBodies is how many distinct bodies an interner shares
	// between answers; further bodies are copied for each answer.
	maxSharedBodies = 1024
)

// interner shares the few distinct labels and answers of a file: each is
// parsed and copied once, into the reader's tables. One goroutine uses it.
type interner struct {
	*reader
	key     []byte                // scratch for a label's key
	advert  []byte                // scratch for an answer's Advert
	labels  map[string]uint32     // attack label (and surface) -> labels index
	given   map[givenKey]uint32   // labels given with a result (FromResults) -> labels index
	folds   map[string]uint32     // surface and stream of folded labels -> labels index
	judgedN int                   // bodies judged memos hold, every surface's
	judged  map[string]*judgeMemo // per surface, refusal body -> Judge's verdict
	answers map[answerKey]uint32
	bodies  map[string][]byte
	layouts map[string]*resultLayout // by a stream's type definitions
	// Samples taken since takeSamples, and how many of each key.
	pending []Sample
	seen    map[seenKey]int
	// headerAnswers is how many answers with volatile headers (see
	// answer) the interner added to the tables.
	headerAnswers int
	// deferHeads is set on a worker of a parallel read: an answer's
	// volatile headers are left to the collector, which keeps them in file
	// order (see pendingHead); the record gets the answer without them,
	// and heads, what the collector needs, the answer as it came (its
	// strings in headBuf). made counts the records since takeHeads.
	deferHeads bool
	heads      []pendingHead
	headBuf    []byte
	made       int
	// keep says, by label index, whether the label's bodies are kept
	// (Options.KeepBody): 0 not asked yet, 1 no, 2 yes.
	keep []uint8
	// status is, by label index, the status its surface refuses with
	// (Options.RefusedWith): 0 not asked yet.
	status []uint16
}

// pendingHead is an answer with volatile headers whose record, the rec-th
// of its batch, the collector gives an answer in file order: with its
// headers while fewer than maxHeaderAnswers such answers are kept, so
// that which records keep them does not depend on which worker decoded
// which batch.
type pendingHead struct {
	rec int
	a   Answer
}

// seenKey counts a batch's sample candidates: a label, status and judgement.
type seenKey struct {
	label   uint32
	code    uint16
	refused bool
}

// newInterner returns an empty interner of the reader's tables.
func (rd *reader) newInterner() *interner {
	return &interner{reader: rd, labels: map[string]uint32{}, folds: map[string]uint32{}, answers: map[answerKey]uint32{}, bodies: map[string][]byte{},
		layouts: map[string]*resultLayout{}, judged: map[string]*judgeMemo{}, seen: map[seenKey]int{}}
}

// givenKey is labels given with a result as a map key: their strings,
// and their fleet tag's value rather than its address.
type givenKey struct {
	surface, source, stream string
	fleet                   bool
	tag                     archive.FleetTag
}

// record keeps what the analysis needs of a result. given, when set, are
// its labels as the engine sent it with (FromResults), taken as they are;
// else, for a result read from a file, its label is parsed (ParseLabel)
// once per distinct label and URL. Either way labels are shared, so a
// million results hold a handful of strings.
func (it *interner) record(r *result, given *archive.Labels) Record {
	rec := Record{Start: r.Start, End: r.Start + max(r.Latency, 0), Code: r.Code}
	if rec.End < rec.Start { // overflow
		rec.End = math.MaxInt64
	}
	var id uint32
	if given != nil {
		id = it.givenLabel(r, given)
	} else {
		labelled := strings.Contains(r.Attack, "surface=")
		key := r.Attack
		if !labelled { // the surface comes from the URL
			it.key = append(append(append(it.key[:0], r.Attack...), 0), archive.SurfaceOf(r.URL)...)
			key = view(it.key)
		}
		var ok bool
		if id, ok = it.labels[key]; !ok {
			id = it.newLabel(r, key, labelled)
		}
	}
	rec.label = id
	l := it.tab.labels.at(id)
	if r.ContentType != "" {
		rec.SetJSON(isJSONType(r.ContentType))
	}
	var a Answer
	if it.opts.KeepBody != nil && it.keepBody(id, l.Stream) {
		a.Body = r.Body[:min(len(r.Body), maxKeptBody)]
		a.ContentType = r.ContentType
	}
	if st := it.refusedWith(id, l.Surface); st != 429 {
		rec.flags |= ownStatus
		if r.Code == st {
			rec.flags |= refusal
		}
	}
	if rec.Refused() {
		if it.opts.Judge != nil {
			rec.flags |= judged
			if !it.judge(l.Surface, r.Body) {
				rec.flags |= judgedBad
			}
		}
		a.RetryAfter = r.RetryAfter
		switch { // RateLimit, then RateLimit-Policy, space-separated
		case r.RateLimitPolicy == "":
			a.RateLimit = strings.TrimSpace(r.RateLimit)
		case r.RateLimit == "":
			a.RateLimit = strings.TrimSpace(r.RateLimitPolicy)
		default:
			a.RateLimit = strings.TrimSpace(r.RateLimit + " " + r.RateLimitPolicy)
		}
	}
	if r.Error != "" {
		a.Err = archive.ErrKind(r.Error)
	}
	a.Allow = r.Allow
	it.advert = appendAdvert(it.advert[:0], &r.Advertised)
	a.Advert = view(it.advert)
	if it.deferHeads && volatile(&a) {
		it.heads = append(it.heads, pendingHead{rec: it.made, a: it.keepHead(&a)})
	}
	it.made++
	if len(a.Body) > 0 || a.Err != "" || a.Allow != "" || a.RetryAfter != "" || a.RateLimit != "" || a.Advert != "" {
		rec.answer = it.answer(a)
	}
	if r.Code != 0 {
		refusedBad := rec.flags&judgedBad != 0
		// Keyed by the label's index rather than its strings (labels with
		// the same surface, source and stream but another fleet tag or
		// attack name count apart here): hashing an index costs far less,
		// and the batch's candidates are only a superset of what keep,
		// which counts by sampleKey in file order, would take from them.
		k := seenKey{id, r.Code, refusedBad}
		if n := it.seen[k]; n < maxSamples {
			it.seen[k] = n + 1
			it.pending = append(it.pending, Sample{Labels: archive.Labels{Surface: l.Surface, Source: l.Source, Stream: l.Stream}, Code: r.Code,
				Refused: refusedBad, Path: strings.Clone(cut(pathOf(r.URL), maxText)), ContentType: strings.Clone(cut(r.ContentType, maxText)),
				Body: bytes.Clone(sampleOf(r.ContentType, r.Body))})
		}
	}
	return rec
}

// newLabel adds the labels of a result whose key the interner has not
// seen, and returns their index. Past MaxLabels distinct labels in the
// tables or MaxSources distinct sources, or for a key longer than
// maxLabelLen, the result is folded: it
// keeps its surface and stream (cut to maxLabelLen, and at most maxFolded
// of them, then "other") under source OtherSources, without a fleet tag,
// and is counted in reader.folded.
func (it *interner) newLabel(r *result, key string, labelled bool) uint32 {
	if len(key) > maxLabelLen || it.tab.labels.len() >= maxLabels {
		return it.fold(archive.ParseLabel(r.Attack, r.URL))
	}
	attack := strings.Clone(r.Attack)
	l := archive.ParseLabel(attack, r.URL)
	if it.newSource(l.Source) {
		return it.fold(l)
	}
	k := attack // the key of a labelled result is its label: share it
	if !labelled {
		k = strings.Clone(key)
	}
	if id, ok := it.tab.labels.addUnder(l, maxLabels); ok {
		it.labels[k] = id
		return id
	}
	return it.fold(l)
}

// givenLabel returns the index of l, the labels the engine gave result r,
// adding them the first time they come. They are not parsed, and their
// strings, which never change, are shared with the engine's (the fleet
// tag is copied); they are bounded and folded as a label read from a
// file is, by the length of the label they are written as (r's Attack).
func (it *interner) givenLabel(r *result, l *archive.Labels) uint32 {
	k := givenKey{surface: l.Surface, source: l.Source, stream: l.Stream}
	if l.Fleet != nil {
		k.fleet, k.tag = true, *l.Fleet
	}
	if id, ok := it.given[k]; ok {
		return id
	}
	if len(r.Attack) > maxLabelLen || it.tab.labels.len() >= maxLabels || it.newSource(l.Source) {
		return it.fold(*l)
	}
	own := *l
	if own.Fleet != nil {
		tag := *own.Fleet
		own.Fleet = &tag
	}
	id, ok := it.tab.labels.addUnder(own, maxLabels)
	if !ok {
		return it.fold(*l)
	}
	if it.given == nil {
		it.given = map[givenKey]uint32{}
	}
	it.given[k] = id
	return id
}

// newSource reports whether source is past the first MaxSources distinct
// sources of the reader's tables.
func (it *interner) newSource(source string) bool {
	it.mu.Lock()
	defer it.mu.Unlock()
	if _, ok := it.sources[source]; ok {
		return false
	}
	if len(it.sources) >= maxSources {
		return true
	}
	if it.sources == nil {
		it.sources = map[string]struct{}{}
	}
	it.sources[source] = struct{}{}
	return false
}

// fold returns the index of l folded (see newLabel).
func (it *interner) fold(l archive.Labels) uint32 {
	it.folded.Add(1)
	l.Surface, l.Stream = cut(l.Surface, maxLabelLen), cut(l.Stream, maxLabelLen)
	fk := l.Surface + "\x00" + l.Stream
	if id, ok := it.folds[fk]; ok {
		return id
	}
	if len(it.folds) >= maxFolded {
		l.Surface, l.Stream, fk = "other", "other", "other\x00other"
		if id, ok := it.folds[fk]; ok {
			return id
		}
	}
	id := it.tab.labels.add(archive.Labels{Surface: strings.Clone(l.Surface), Source: OtherSources, Stream: strings.Clone(l.Stream)})
	it.folds[fk] = id
	return id
}

// keepBody returns Options.KeepBody of stream, the stream of label id,
// asking once per label: it runs for every result.
func (it *interner) keepBody(id uint32, stream string) bool {
	if int(id) >= len(it.keep) {
		it.keep = slices.Grow(it.keep, int(id)+1-len(it.keep))[:int(id)+1]
	}
	if it.keep[id] == 0 {
		it.keep[id] = 1
		if it.opts.KeepBody(stream) {
			it.keep[id] = 2
		}
	}
	return it.keep[id] == 2
}

// refusedWith is the status label id's surface refuses with: 429 unless
// Options.RefusedWith says another, asked once per label.
func (it *interner) refusedWith(id uint32, surface string) uint16 {
	if it.opts.RefusedWith == nil {
		return 429
	}
	if int(id) >= len(it.status) {
		it.status = slices.Grow(it.status, int(id)+1-len(it.status))[:int(id)+1]
	}
	if it.status[id] == 0 {
		it.status[id] = cmp.Or(it.opts.RefusedWith(surface), 429)
	}
	return it.status[id]
}

type answerKey struct{ body, allow, retryAfter, rateLimit, err, contentType, advert string }

// answer returns the index of a's copy in the answers table (a's fields
// may alias the decoded result, which it does not keep). Bodies are shared
// on their own too.
//
// Response headers that change with every answer (a remaining count, a
// reset time) would make every answer distinct: past maxHeaderAnswers,
// new answers drop them (the report names only the first few anyway); a
// worker of a parallel read drops them always, and the collector gives
// the records their answers with them, in file order (see pendingHead).
// Headers and error kinds are cut to maxText bytes. Past MaxAnswers
// distinct answers in the tables, a new one is not kept (0: the record
// keeps only its status) and is counted in reader.dropped.
func (it *interner) answer(a Answer) uint32 {
	a.Allow, a.RetryAfter, a.RateLimit, a.Err = cut(a.Allow, maxText), cut(a.RetryAfter, maxText), cut(a.RateLimit, maxText), cut(a.Err, maxText)
	a.ContentType = cut(a.ContentType, maxText)
	k := answerKey{view(a.Body), a.Allow, a.RetryAfter, a.RateLimit, a.Err, a.ContentType, a.Advert}
	if id, ok := it.answers[k]; ok { // never one with volatile headers where they are deferred
		return id
	}
	if volatile(&a) && (it.deferHeads || it.headerAnswers >= maxHeaderAnswers) {
		a.RetryAfter, a.RateLimit, a.Advert = "", "", ""
		k.retryAfter, k.rateLimit, k.advert = "", "", ""
		if id, ok := it.answers[k]; ok {
			return id
		}
	}
	if it.tab.answers.len() >= maxAnswers {
		it.dropped.Add(1)
		return 0
	}
	body, ok := it.bodies[view(a.Body)]
	if !ok {
		body = bytes.Clone(a.Body)
		if len(it.bodies) < maxSharedBodies {
			it.bodies[string(body)] = body
		}
	}
	v := Answer{Body: body, Allow: strings.Clone(a.Allow), RetryAfter: strings.Clone(a.RetryAfter),
		RateLimit: strings.Clone(a.RateLimit), Err: strings.Clone(a.Err), ContentType: strings.Clone(a.ContentType), Advert: strings.Clone(a.Advert)}
	id, ok := it.tab.answers.addUnder(v, maxAnswers)
	if !ok { // another interner filled the table meanwhile
		it.dropped.Add(1)
		return 0
	}
	// Kept even past maxHeaderAnswers: without the headers, answers differ
	// only by contract probes' bodies, error kinds and Allow, which are few.
	it.answers[answerKey{string(v.Body), v.Allow, v.RetryAfter, v.RateLimit, v.Err, v.ContentType, v.Advert}] = id
	if volatile(&v) {
		it.headerAnswers++
	}
	return id
}

// volatile reports whether a carries a header that changes with every
// answer: Retry-After, RateLimit or an advertised field.
func volatile(a *Answer) bool { return a.RetryAfter != "" || a.RateLimit != "" || a.Advert != "" }

// keepHead copies a's fields into the interner's headBuf, where they stay
// until takeHeads hands the buffer to the batch (the decoded result's and
// the scratch advert's bytes are reused). The copy refers to headBuf alone,
// so that what a refers to stays where it was made.
func (it *interner) keepHead(a *Answer) Answer {
	k := Answer{Allow: it.keepString(a.Allow), RetryAfter: it.keepString(a.RetryAfter), RateLimit: it.keepString(a.RateLimit),
		Err: it.keepString(a.Err), ContentType: it.keepString(a.ContentType), Advert: it.keepString(a.Advert)}
	if a.Body != nil {
		at := len(it.headBuf)
		it.headBuf = append(it.headBuf, a.Body...)
		k.Body = it.headBuf[at:len(it.headBuf):len(it.headBuf)]
	}
	return k
}

// keepString copies v into headBuf (see keepHead).
func (it *interner) keepString(v string) string {
	at := len(it.headBuf)
	it.headBuf = append(it.headBuf, v...)
	return view(it.headBuf[at:len(it.headBuf):len(it.headBuf)])
}

// takeHeads returns the answers left to the collector since the last
// call, and the buffer their strings are in, and starts afresh with the
// spare slices given (a batch's, which the collector is done with).
func (it *interner) takeHeads(heads []pendingHead, buf []byte) ([]pendingHead, []byte) {
	h, b := it.heads, it.headBuf
	it.heads, it.headBuf, it.made = heads[:0], buf[:0], 0
	return h, b
}

// judge judges a refusal's body (see Options.Judge), remembering the
// verdicts of the first bodies seen.
func (it *interner) judge(surface string, body []byte) bool {
	b := body[:min(len(body), maxKeptBody)]
	memo := it.judged[surface]
	if memo == nil {
		memo = &judgeMemo{m: map[string]judgeEntry{}}
		it.judged[surface] = memo
	}
	// Refusals mostly repeat the body before them: compare with the last
	// body found in or added to the memo before hashing it.
	if memo.hasLast && memo.last.body == view(b) {
		return memo.last.ok
	}
	if e, seen := memo.m[view(b)]; seen {
		memo.last, memo.hasLast = e, true
		return e.ok
	}
	ok := it.opts.Judge(surface, b)
	if len(memo.m) < maxJudgedPerSurface && it.judgedN < maxJudged {
		e := judgeEntry{body: string(b), ok: ok}
		memo.m[e.body] = e
		memo.last, memo.hasLast = e, true
		it.judgedN++
	}
	return ok
}

// judgeMemo is a surface's verdicts on the first refusal bodies judged,
// and the last of them found or added.
type judgeMemo struct {
	m       map[string]judgeEntry
	last    judgeEntry
	hasLast bool
}

// judgeEntry is a body judged (its key in the memo) and the verdict.
type judgeEntry struct {
	body string
	ok   bool
}

// sampleKey says which samples are alike.
type sampleKey struct {
	surface, source, stream string
	code                    uint16
	refused                 bool
}

// keep adds samples taken in file order, up to maxSamples of each key and
// maxSampled in all.
func (rd *reader) keep(ss []Sample) {
	if rd.sampled == nil {
		rd.sampled = map[sampleKey]int{}
	}
	for _, s := range ss {
		k := sampleKey{s.Surface, s.Source, s.Stream, s.Code, s.Refused}
		if n := rd.sampled[k]; n < maxSamples && len(rd.samples) < maxSampled {
			rd.sampled[k] = n + 1
			rd.samples = append(rd.samples, s)
		}
	}
}

// takeSamples returns the samples taken since the last call, in the order
// taken, and starts afresh: a batch's candidates, which the reader keeps
// or drops in file order.
func (it *interner) takeSamples() []Sample {
	ss := it.pending
	it.pending = nil
	clear(it.seen)
	return ss
}

// sampleOf is the first MaxSample bytes of an answer body, or of the
// JSON-RPC response an event stream carries: what a report quotes.
func sampleOf(contentType string, body []byte) []byte {
	if data, err := mcpwire.ResponseJSON(contentType, body, nil); err == nil {
		body = data
	}
	return body[:min(len(body), MaxSample)]
}

// pathOf returns the path of a URL, without its query (which may carry a
// credential) or fragment.
func pathOf(raw string) string {
	if i := strings.Index(raw, "://"); i >= 0 {
		raw = raw[i+3:]
		if j := strings.IndexByte(raw, '/'); j >= 0 {
			raw = raw[j:]
		} else {
			raw = "/"
		}
	}
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		raw = raw[:i]
	}
	return raw
}
