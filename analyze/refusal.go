package analyze

import (
	"cmp"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/connectbyjbrh/ratecheck/method"
)

// A Refusal is how a contract says the refusals of one of its limits look
// (verify --contract judges each limit as a surface named after it): the
// status, and a JSON value the body contains or a JSON-RPC error code.
// Neither of those set: the contract says nothing of the body, and the
// shape check skips.
type Refusal struct {
	// Status is the refusal's HTTP status (0: 429). An answer of another
	// status is not a refusal of the limit, a 429 included.
	Status uint16
	// Body is a JSON value (as encoding/json decodes one) the refusal's
	// body contains: every key of an object with the same value,
	// recursively; nil: any body.
	Body any
	// RPCCode is the JSON-RPC error code of the refusal (0: none said).
	RPCCode int
}

// status is the refusal's HTTP status.
func (r Refusal) status() uint16 { return cmp.Or(r.Status, 429) }

// refusalStatus is the status the refusals of surface come with: its
// contract limit's, else 429 (the documented API's).
func refusalStatus(refusals map[string]Refusal, surface string) uint16 {
	return refusals[surface].status()
}

// described reports whether r says anything of a refusal's body.
func (r Refusal) described() bool { return r.Body != nil || r.RPCCode != 0 }

// String says what a refusal's body must hold.
func (r Refusal) String() string {
	if r.RPCCode != 0 {
		return fmt.Sprintf("JSON-RPC error %d", r.RPCCode)
	}
	b, _ := json.Marshal(r.Body)
	return string(b)
}

// matches reports whether body b holds what r says (an MCP refusal may
// come as an event stream).
func (r Refusal) matches(b []byte) bool {
	if r.RPCCode != 0 {
		data, ok := answerJSON("", b)
		if !ok {
			return false
		}
		_, rpc, _ := errorCodes(data)
		return rpc == r.RPCCode
	}
	var have any
	if json.Unmarshal(b, &have) != nil {
		return false
	}
	return contains(have, r.Body)
}

// contains reports whether JSON value have holds want: an object holds
// every key of want with a value that holds want's; anything else is
// equal (numbers as encoding/json decodes them).
func contains(have, want any) bool {
	w, ok := want.(map[string]any)
	if !ok {
		return reflect.DeepEqual(have, want)
	}
	h, ok := have.(map[string]any)
	if !ok {
		return false
	}
	for k, v := range w {
		hv, present := h[k]
		if !present || !contains(hv, v) {
			return false
		}
	}
	return true
}

// shapes judge refusal bodies: a contract's limits by their Refusal, the
// documented API's rest and mcp by their documented error (shapeOK).
type shapes map[string]Refusal

// judge reports whether the body of a refusal of surface holds its
// documented error.
func (s shapes) judge(surface string, b []byte) bool {
	if r, ok := s[surface]; ok {
		return !r.described() || r.matches(b)
	}
	return shapeOK(surface, b)
}

// want says what the refusals of surface must carry, and whether anything
// is said at all.
func (s shapes) want(surface string) (string, bool) {
	if r, ok := s[surface]; ok {
		return r.String(), r.described()
	}
	switch surface {
	case method.REST:
		return `{"error":{"code":"rate_limited"}}`, true
	case method.MCP:
		return "JSON-RPC error -32603", true
	}
	return "", false
}
