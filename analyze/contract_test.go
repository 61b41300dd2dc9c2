package analyze

import "testing"

// TestErrorCodesReadsBothAnswerForms: a failure-table answer is judged by
// the JSON-RPC response it carries, in application/json or in an event
// stream (a notification before it aside).
func TestErrorCodesReadsBothAnswerForms(t *testing.T) {
	for _, tt := range []struct {
		name, body string
		rpc        int
		isError    bool
	}{
		{"json tool error", `{"jsonrpc":"2.0","id":1,"result":{"content":[],"isError":true}}`, 0, true},
		{"sse tool error", "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[],\"isError\":true}}\n\n", 0, true},
		{"sse after a notification", "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32602,\"message\":\"x\"}}\n\n", -32602, false},
		{"json error", `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"x"}}`, -32601, false},
		{"text", "Bad Request\n", 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, rpc, parsed := errorCodes([]byte(tt.body))
			isError := parsed.Result != nil && parsed.Result.IsError
			if rpc != tt.rpc || isError != tt.isError {
				t.Errorf("rpc %d, isError %v; want %d, %v", rpc, isError, tt.rpc, tt.isError)
			}
		})
	}
}
