package refserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"
)

// restErrorBody is the documented REST error shape.
type restErrorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message,omitempty"`
	} `json:"error"`
}

func restError(code, msg string) restErrorBody {
	var b restErrorBody
	b.Error.Code, b.Error.Message = code, msg
	return b
}

// writeJSON writes v as a JSON answer with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// serveREST answers /api/public/*: search, pages and manifests, GET only.
func (s *Server) serveREST(w http.ResponseWriter, r *http.Request, id string) {
	fail := func(status int, code, msg string) {
		s.logf(r, surfaceREST, "", status, code, id)
		writeJSON(w, status, restError(code, msg))
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		fail(http.StatusMethodNotAllowed, "method_not_allowed", r.Method+" is not allowed: every public route is a GET")
		return
	}
	rest := strings.TrimPrefix(r.URL.Path, "/api/public/")
	switch kind, ref, _ := strings.Cut(rest, "/"); {
	case rest == "search":
		q := r.URL.Query()
		query := q.Get("q")
		if utf8.RuneCountInString(strings.TrimSpace(query)) < 2 {
			fail(http.StatusUnprocessableEntity, "invalid_parameter", "q must be at least 2 characters")
			return
		}
		limit := 10
		if v := q.Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 25 {
				fail(http.StatusUnprocessableEntity, "invalid_parameter", "limit must be an integer from 1 to 25")
				return
			}
			limit = n
		}
		hits := s.corpus.search(query, limit)
		if hits == nil {
			hits = []hit{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"query": query, "limit": limit, "results": hits})
	case kind == "pages" && ref != "" && !strings.Contains(ref, "/"):
		p, ok := s.corpus.pages[ref]
		if !ok {
			fail(http.StatusNotFound, "not_found", fmt.Sprintf("no page with ref %q", ref))
			return
		}
		writeJSON(w, http.StatusOK, p)
	case kind == "manifests" && ref != "" && !strings.Contains(ref, "/"):
		m, ok := s.corpus.manifests[ref]
		if !ok {
			fail(http.StatusNotFound, "not_found", fmt.Sprintf("no manifest with ref %q", ref))
			return
		}
		writeJSON(w, http.StatusOK, m)
	default:
		fail(http.StatusNotFound, "not_found", "no such route")
	}
}
