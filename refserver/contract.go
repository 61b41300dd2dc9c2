package refserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Rules are the limits of a contract the target enforces in place of the
// documented ones (serve --contract): each over some routes, counted per
// client address, per a header's value (an API key) or globally, with its
// own quota, window and refusal. A request is held to every rule whose
// routes hold it (stacked limits), and several routes in one rule share
// its budget. A rule limits by its Mode, else by [Config.Limiter]'s
// algorithm.
type Rules struct {
	Limits []Rule
	// Tiers maps a credential, "Header: value" (the header's canonical
	// name), to its tier: a rule with a quota per tier holds a request to
	// the quota of the tier its credential is of.
	Tiers map[string]string
}

// A Rule is one limit of [Rules].
type Rule struct {
	Name   string
	Routes []Route
	// Quota is the requests a key may make per Window; Tiers, when set,
	// is the quota of each tier instead.
	Quota  int
	Tiers  map[string]int
	Window time.Duration
	Key    Key
	// Refusal is how a refusal of the rule is answered.
	Refusal Refusal
	// Mode is the rule's limiter, the family its contract documents
	// (empty: [Config.Limiter]).
	Mode LimiterMode
}

// A Route is a request a rule covers: Method (GET when empty) and Path,
// or, with Tool set, an MCP tools/call of that tool posted to /mcp.
type Route struct {
	Name, Method, Path, Tool string
}

// Key is what a rule counts requests by: the client address (Header and
// Global unset), the value of Header, or nothing (Global: one budget).
// PerAddress with Header counts each key per client address (a key from
// two addresses has two budgets): not what a contract can say, a wrong
// limiter for verify to catch.
type Key struct {
	Header     string
	Global     bool
	PerAddress bool
}

// Refusal is a rule's refusal: Status with Body (JSON; nil: an error
// object with code rate_limited), or, with RPCCode set, a JSON-RPC error
// of that code.
type Refusal struct {
	Status  int
	Body    json.RawMessage
	RPCCode int
}

// rulesRun is a Rules in force: each rule's limiter per quota it gives.
type rulesRun struct {
	rules Rules
	lims  []map[string]*Limiter // per rule: tier ("" without tiers) → limiter
}

// newRulesRun validates rules and makes their limiters of mode.
func newRulesRun(rules Rules, mode LimiterMode) (*rulesRun, error) {
	if len(rules.Limits) == 0 {
		return nil, errors.New("rules: no limits")
	}
	rr := &rulesRun{rules: rules}
	for _, ru := range rules.Limits {
		if len(ru.Routes) == 0 {
			return nil, fmt.Errorf("rule %q covers no route", ru.Name)
		}
		if ru.Refusal.Status < 100 || ru.Refusal.Status > 599 {
			return nil, fmt.Errorf("rule %q: refusal status %d", ru.Name, ru.Refusal.Status)
		}
		quotas := map[string]int{"": ru.Quota}
		if ru.Tiers != nil {
			quotas = ru.Tiers
		}
		lims, m := map[string]*Limiter{}, mode
		if ru.Mode != "" {
			m = ru.Mode
		}
		for tier, q := range quotas {
			l, err := NewLimiter(m, q, ru.Window)
			if err != nil {
				return nil, fmt.Errorf("rule %q: %w", ru.Name, err)
			}
			lims[tier] = l
		}
		rr.lims = append(rr.lims, lims)
	}
	return rr, nil
}

// covers reports whether route ro holds a request of method to path that
// is, when tool is set, an MCP tools/call of tool.
func (ro Route) covers(method, path, tool string) bool {
	if ro.Tool != "" {
		return path == "/mcp" && tool == ro.Tool
	}
	m := ro.Method
	if m == "" {
		m = http.MethodGet
	}
	return m == method && ro.Path == path
}

// toolOf returns the tool an MCP tools/call posted to /mcp calls ("" for
// anything else), leaving r's body readable again.
func toolOf(r *http.Request) string {
	if r.URL.Path != "/mcp" || r.Method != http.MethodPost {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(r.Body, MaxMCPBody))
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(b), r.Body))
	var call struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if json.Unmarshal(b, &call) != nil || call.Method != "tools/call" {
		return ""
	}
	return call.Params.Name
}

// tierOf returns the tier of the first credential r carries that rules
// know, and whether it carries one.
func (rr *rulesRun) tierOf(r *http.Request) (string, bool) {
	for cred, tier := range rr.rules.Tiers {
		h, v, _ := strings.Cut(cred, ": ")
		if slices.Contains(r.Header.Values(h), v) {
			return tier, true
		}
	}
	return "", false
}

// serveRules answers r under the contract's rules: faults first, then
// every rule whose routes hold r decides (each counts r as its algorithm
// does); the first to refuse answers, else r is served: by the reference
// surfaces under /api/public/ and /mcp, by a small JSON answer naming
// the route elsewhere, 404 for a request no route holds there.
func (s *Server) serveRules(w http.ResponseWriter, r *http.Request) {
	rr := s.rules
	id := r.Header.Get("X-Request-Id")
	sf := surface("contract")
	if s.faulted(w, r, sf, id) {
		return
	}
	tool := toolOf(r)
	var route string
	var refusal *Rule
	var quota int
	var hold time.Duration
	for i, ru := range rr.rules.Limits {
		at := slices.IndexFunc(ru.Routes, func(ro Route) bool { return ro.covers(r.Method, r.URL.Path, tool) })
		if at < 0 {
			continue
		}
		if route == "" {
			route = ru.Routes[at].Name
		}
		tier := ""
		if ru.Tiers != nil {
			t, ok := rr.tierOf(r)
			if !ok || rr.lims[i][t] == nil {
				s.logf(r, sf, "", http.StatusUnauthorized, "unknown_key", id)
				writeJSON(w, http.StatusUnauthorized, restError("unknown_key", fmt.Sprintf("limit %s has a quota per tier, and this request carries no credential of a tier it names", ru.Name)))
				return
			}
			tier = t
		}
		key := ClientAddr(r)
		switch {
		case ru.Key.Global:
			key = ""
		case ru.Key.Header != "" && ru.Key.PerAddress:
			key += " " + r.Header.Get(ru.Key.Header)
		case ru.Key.Header != "":
			key = r.Header.Get(ru.Key.Header)
		}
		lim := rr.lims[i][tier]
		ok, h, _ := lim.decide(key, s.cfg.Clock(), false)
		hold = max(hold, h)
		if !ok && refusal == nil {
			refusal, quota = &rr.rules.Limits[i], lim.Limit()
		}
	}
	if refusal != nil {
		s.refuseRule(w, r, refusal, quota, id)
		return
	}
	if hold > 0 && s.cfg.Sleep(r.Context(), hold) != nil {
		return
	}
	next := func(w http.ResponseWriter, r *http.Request, id string) {
		switch p := r.URL.Path; {
		case strings.HasPrefix(p, "/api/public/"):
			s.serveREST(w, r, id)
		case p == "/mcp":
			s.serveMCP(w, r, id)
		case route != "":
			writeJSON(w, http.StatusOK, object{"route": route, "ok": true})
		default:
			writeJSON(w, http.StatusNotFound, restError("not_found", "no route of the contract is "+r.Method+" "+p))
		}
	}
	if s.pool != nil {
		s.pooled(w, r, sf, id, next)
		return
	}
	next(w, r, id)
}

// refuseRule answers r with ru's refusal (its quota for r's tier).
func (s *Server) refuseRule(w http.ResponseWriter, r *http.Request, ru *Rule, quota int, id string) {
	f := ru.Refusal
	if f.RPCCode != 0 {
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		b, _ := io.ReadAll(io.LimitReader(r.Body, MaxMCPBody))
		_ = json.Unmarshal(b, &req)
		s.logf(r, surface(ru.Name), "tools/call", f.Status, strconv.Itoa(f.RPCCode), idString(req.ID, id))
		writeJSON(w, f.Status, rpcResponse{JSONRPC: "2.0", ID: errorID(req.ID), Error: &rpcError{Code: f.RPCCode, Message: "rate limited by " + ru.Name}})
		return
	}
	s.logf(r, surface(ru.Name), "", f.Status, "rate_limited", id)
	body := f.Body
	if body == nil {
		body, _ = json.Marshal(restError("rate_limited", fmt.Sprintf("more than %d requests in %v (%s)", quota, ru.Window, ru.Name)))
	}
	w.Header()["Content-Type"] = jsonContentType
	w.WriteHeader(f.Status)
	_, _ = w.Write(append(body, '\n'))
}
