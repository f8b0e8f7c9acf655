package scim

import (
	"encoding/json"
	"net/http"
	"strings"
)

// filter is the one form of RFC 7644's filters that identity providers
// send to find a resource: ATTRIBUTE eq "VALUE" (Entra ID and Okta look
// users up by userName or externalId, groups by displayName). Attribute
// names and the operator are matched without regard to case, an attribute
// may carry its schema's URN, and the value is a JSON string.
type filter struct {
	attr  string // as listed in the allowed names, e.g. "userName"
	value string
}

// parseFilter reads text, allowing the attributes in allowed (the canonical
// spelling of each). Anything else answers 400 invalidFilter.
func parseFilter(text, schema string, allowed ...string) (*filter, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, nil
	}
	attr, rest, ok := strings.Cut(text, " ")
	if !ok {
		return nil, invalidFilter("a filter is ATTRIBUTE eq \"VALUE\"")
	}
	op, value, _ := strings.Cut(strings.TrimLeft(rest, " "), " ")
	if !strings.EqualFold(op, "eq") {
		return nil, invalidFilter("only the operator eq is supported, in ATTRIBUTE eq \"VALUE\"")
	}
	if len(attr) > len(schema)+1 && strings.EqualFold(attr[:len(schema)+1], schema+":") {
		attr = attr[len(schema)+1:]
	}
	f := &filter{}
	for _, a := range allowed {
		if strings.EqualFold(attr, a) {
			f.attr = a
		}
	}
	if f.attr == "" {
		return nil, invalidFilter("filters may name " + strings.Join(allowed, ", ") + ", not " + attr)
	}
	value = strings.TrimSpace(value)
	dec := json.NewDecoder(strings.NewReader(value))
	if !strings.HasPrefix(value, `"`) || dec.Decode(&f.value) != nil || dec.InputOffset() != int64(len(value)) {
		return nil, invalidFilter("the value must be one quoted string, and nothing may follow it (no and, or, not)")
	}
	return f, nil
}

func invalidFilter(detail string) *Error {
	return scimErr(http.StatusBadRequest, "invalidFilter", detail)
}
