package scim

import (
	"encoding/json"
	"net/http"
	"strings"
)

// filter is one term of the filters identity providers send to find a
// resource: ATTRIBUTE eq "VALUE". Entra ID and Okta look users up by
// userName, externalId or the work email, groups by displayName, and Entra
// ID asks whether a user is a member with id eq "…" and members eq "…".
type filter struct {
	attr  string // as listed in the allowed names, e.g. "userName"
	value string
}

// parseFilter reads text: one or more terms ATTRIBUTE eq "VALUE" joined by
// and, allowing the attributes in allowed (the canonical spelling of each;
// "emails.value" also allows emails[type eq "work"].value). Attribute
// names, eq and and are matched without regard to case, an attribute may
// carry its schema's URN, and a value is a JSON string. Anything else
// answers 400 invalidFilter.
func parseFilter(text, schema string, allowed ...string) ([]filter, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, nil
	}
	var out []filter
	for {
		i, depth := 0, 0
		for ; i < len(text) && (text[i] != ' ' || depth > 0); i++ {
			switch text[i] {
			case '[':
				depth++
			case ']':
				depth--
			}
		}
		attr, rest := text[:i], strings.TrimLeft(text[i:], " ")
		op, rest, _ := strings.Cut(rest, " ")
		if !strings.EqualFold(op, "eq") {
			return nil, invalidFilter("only the operator eq is supported, in ATTRIBUTE eq \"VALUE\" (joined by and)")
		}
		f := filter{attr: canonical(attr, schema, allowed)}
		if f.attr == "" {
			return nil, invalidFilter("filters may name " + strings.Join(allowed, ", ") + ", not " + attr)
		}
		rest = strings.TrimLeft(rest, " ")
		dec := json.NewDecoder(strings.NewReader(rest))
		if !strings.HasPrefix(rest, `"`) || dec.Decode(&f.value) != nil {
			return nil, invalidFilter("a value must be a quoted string")
		}
		out = append(out, f)
		rest = strings.TrimSpace(rest[dec.InputOffset():])
		if rest == "" {
			return out, nil
		}
		and, next, _ := strings.Cut(rest, " ")
		if !strings.EqualFold(and, "and") || len(out) == 4 {
			return nil, invalidFilter("terms may only be joined by and (at most 4); no or, not or parentheses")
		}
		text = strings.TrimLeft(next, " ")
	}
}

// canonical is the allowed name attr spells, or "".
func canonical(attr, schema string, allowed []string) string {
	if len(attr) > len(schema)+1 && strings.EqualFold(attr[:len(schema)+1], schema+":") {
		attr = attr[len(schema)+1:]
	}
	if strings.EqualFold(strings.ReplaceAll(attr, " ", ""), `emails[typeeq"work"].value`) {
		attr = "emails.value"
	}
	for _, a := range allowed {
		if strings.EqualFold(attr, a) {
			return a
		}
	}
	return ""
}

func invalidFilter(detail string) *Error {
	return scimErr(http.StatusBadRequest, "invalidFilter", detail)
}
