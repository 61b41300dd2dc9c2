package scenario

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// An Advertisement is one quota policy a route's answer advertised, as
// contract discover read it (RateLimit-Policy, RateLimit-Limit or
// X-RateLimit-Limit).
type Advertisement struct {
	Route string
	// Policy is the policy's name ("" where the field names none).
	Policy string
	Quota  int
	// Window is 0 when the answer did not say it.
	Window      time.Duration
	Partitioned bool
	// Field is what it was read from, as the answer wrote it.
	Field string
}

// A Draft is a contract discovered from what a target advertised, with
// what was guessed: Guessed maps "limit NAME" to each field of that limit
// nobody advertised and why it holds what it holds, and Notes are said
// at the top of the file (a field that did not parse, a policy in another
// unit, a route that advertised nothing).
type Draft struct {
	Contract *Contract
	Guessed  map[string]map[string]string
	Notes    []string
}

// DraftContract returns the contract that routes' advertisements suggest:
// the routes as sent, an identity sending credentials (header → its
// ${…} reference; none: no identity), and a limit per advertised policy,
// over every route that advertised the same one (by name, quota and
// window: one budget they seem to share, which verify then proves or
// refutes). What no answer said is guessed and marked: a window not
// advertised, the key (the credential's header when one was sent, else
// the client address), the refusal (429).
func DraftContract(routes []Route, credentials map[string]string, ads []Advertisement) (*Draft, error) {
	d := &Draft{Contract: &Contract{Routes: routes}, Guessed: map[string]map[string]string{}}
	if len(credentials) > 0 {
		h := map[string]string{}
		for k, v := range credentials {
			h[http.CanonicalHeaderKey(k)] = v
		}
		d.Contract.Identities = []Identity{{Name: "discovered", Address: AddressLimit, Headers: h}}
	}
	type group struct {
		ad     Advertisement
		routes []string
	}
	var groups []*group
	for _, ad := range ads {
		i := slices.IndexFunc(groups, func(g *group) bool {
			return g.ad.Policy == ad.Policy && g.ad.Quota == ad.Quota && g.ad.Window == ad.Window && g.ad.Policy != ""
		})
		if i < 0 {
			groups = append(groups, &group{ad: ad})
			i = len(groups) - 1
		}
		if !slices.Contains(groups[i].routes, ad.Route) {
			groups[i].routes = append(groups[i].routes, ad.Route)
		}
	}
	names := map[string]int{}
	for _, g := range groups {
		names[g.ad.Policy]++
	}
	header := ""
	if hs := slices.Sorted(maps.Keys(credentials)); len(hs) > 0 {
		header = http.CanonicalHeaderKey(hs[0])
	}
	for _, g := range groups {
		name := g.ad.Policy
		if name == "" || names[name] > 1 {
			name = strings.Trim(strings.Join([]string{g.ad.Policy, strings.Join(g.routes, "-")}, "-"), "-")
		}
		guessed := map[string]string{}
		l := Limit{Name: name, Routes: g.routes, Quota: Quota{N: g.ad.Quota}, Window: Duration(g.ad.Window),
			Refused: Refusal{Status: http.StatusTooManyRequests}}
		if g.ad.Quota < 1 {
			return nil, fmt.Errorf("route %s advertised a quota of %d (%s): no request would be admitted; check the target", g.routes[0], g.ad.Quota, g.ad.Field)
		}
		if g.ad.Window == 0 {
			l.Window = Duration(time.Minute)
			guessed["window"] = fmt.Sprintf("%s gives no window: a minute is a guess", g.ad.Field)
		}
		switch {
		case header != "":
			l.Key = Key{Kind: KeyHeader, Header: header}
			why := "a credential was sent, and the answer said nothing of what it counts by"
			if g.ad.Partitioned {
				why = "the policy counts per partition key (pk), and the credential is the likeliest key"
			}
			guessed["key"] = why
		default:
			l.Key = Key{Kind: KeyClientAddress}
			why := "no credential was sent, and the answer said nothing of what it counts by"
			if g.ad.Partitioned {
				why = "the policy counts per partition key (pk), which does not say of what; no credential was sent"
			}
			guessed["key"] = why
		}
		guessed["refused"] = "nothing advertises how a refusal looks: 429 is the usual one"
		if len(g.routes) > 1 {
			guessed["routes"] = fmt.Sprintf("these routes advertised one policy %q: one budget they share, which verify proves or refutes", g.ad.Policy)
		}
		d.Guessed["limit "+name] = guessed
		d.Contract.Limits = append(d.Contract.Limits, l)
	}
	if len(d.Contract.Limits) == 0 {
		return nil, fmt.Errorf("no route's answer advertised a quota in requests: write the contract from the API's documentation (see contract show for the form)")
	}
	return d, nil
}

// Marshal writes the draft as a contract file: the notes at the top and
// "GUESSED:" beside every field nobody advertised, which the reader
// checks against the API's documentation before verify holds the API to
// it. ParseContract reads it back to d.Contract.
func (d *Draft) Marshal(head []string) ([]byte, error) {
	var doc yaml.Node
	if err := doc.Encode(d.Contract); err != nil {
		return nil, err
	}
	doc.HeadComment = strings.Join(append(slices.Clone(head), d.Notes...), "\n")
	if limits := mappingValue(&doc, "limits"); limits != nil {
		for _, l := range limits.Content {
			name := mappingValue(l, "name")
			if name == nil {
				continue
			}
			for field, why := range d.Guessed["limit "+name.Value] {
				for i := 0; i+1 < len(l.Content); i += 2 {
					if l.Content[i].Value == field {
						l.Content[i].LineComment = "GUESSED: " + why
					}
				}
			}
		}
	}
	return yaml.Marshal(&doc)
}

// mappingValue returns the value of key in mapping n (nil: none).
func mappingValue(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
