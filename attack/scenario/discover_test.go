package scenario

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestDraftContract: a draft takes each advertised policy as a limit over
// the routes that advertised it, marks what nobody advertised (the key,
// the refusal, a window, a shared budget) as guessed beside the field,
// says its notes at the top, and reads back as a valid contract.
func TestDraftContract(t *testing.T) {
	t.Parallel()
	routes := []Route{{Name: "search", Request: Request{Path: "/v1/search"}}, {Name: "list", Request: Request{Path: "/v1/items"}},
		{Name: "export", Request: Request{Method: "POST", Path: "/v1/export"}}}
	ads := []Advertisement{
		{Route: "search", Policy: "default", Quota: 100, Window: 10 * time.Second, Field: `RateLimit-Policy: "default";q=100;w=10`},
		{Route: "list", Policy: "default", Quota: 100, Window: 10 * time.Second, Field: `RateLimit-Policy: "default";q=100;w=10`},
		{Route: "export", Quota: 20, Field: "X-RateLimit-Limit: 20"},
	}
	d, err := DraftContract(routes, map[string]string{"x-api-key": "${API_KEY}"}, ads)
	if err != nil {
		t.Fatal(err)
	}
	d.Notes = []string{"route ping advertised nothing"}
	data, err := d.Marshal([]string{"A draft discovered from http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for _, want := range []string{
		"# A draft discovered from http://127.0.0.1:1\n# route ping advertised nothing\n",
		"name: default\n", "routes: # GUESSED: these routes advertised one policy \"default\": one budget they share",
		"key: header X-Api-Key # GUESSED: a credential was sent",
		"refused: # GUESSED: nothing advertises how a refusal looks: 429 is the usual one",
		"name: export\n", "window: 1m0s # GUESSED: X-RateLimit-Limit: 20 gives no window: a minute is a guess",
		"X-Api-Key: ${API_KEY}",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the draft lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "window: 10s # GUESSED") {
		t.Errorf("an advertised window is marked guessed:\n%s", text)
	}
	c, err := ParseContract("draft.yaml", data)
	if err != nil {
		t.Fatalf("the draft is not a valid contract: %v\n%s", err, text)
	}
	if !reflect.DeepEqual(c, d.Contract) {
		t.Errorf("the draft reads back to\n%+v\nnot\n%+v", c, d.Contract)
	}
	if got := len(c.Limits); got != 2 || c.Limits[0].Quota.N != 100 || time.Duration(c.Limits[0].Window) != 10*time.Second || len(c.Limits[0].Routes) != 2 {
		t.Errorf("limits %+v, want default (100 per 10s over search and list) and export", c.Limits)
	}

	// Without a credential the key guessed is the client address, and a
	// policy of one name with two quotas is two limits named by route.
	d, err = DraftContract(routes[:2], nil, []Advertisement{
		{Route: "search", Policy: "p", Quota: 10, Window: time.Second, Partitioned: true},
		{Route: "list", Policy: "p", Quota: 20, Window: time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	if l := d.Contract.Limits; len(l) != 2 || l[0].Name != "p-search" || l[1].Name != "p-list" || l[0].Key.Kind != KeyClientAddress || len(d.Contract.Identities) != 0 {
		t.Errorf("limits %+v identities %+v, want p-search and p-list by client address, no identity", l, d.Contract.Identities)
	}
	if why := d.Guessed["limit p-search"]["key"]; !strings.Contains(why, "partition key (pk)") {
		t.Errorf("the key guessed for a partitioned policy says %q", why)
	}
	if _, err := DraftContract(routes, nil, nil); err == nil || !strings.Contains(err.Error(), "no route's answer advertised a quota") {
		t.Errorf("nothing advertised: %v, want an error saying so", err)
	}
}
