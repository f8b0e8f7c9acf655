package wps

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
)

// APICaller makes the HTTP calls of parameters' apiCalls (package apicall).
type APICaller interface {
	// Check says why a URL may not be called (off, host not allowed,
	// private address), nil when it may.
	Check(rawURL string) error
	// Call sends req and returns the value of its answer at req.ResultPath
	// (nil when null).
	Call(ctx context.Context, req APIRequest) (json.RawMessage, error)
}

// APIRequest is one call of an apiCall: Values are the current values of
// its listed parameters, by parameter name.
type APIRequest struct {
	Method, URL, ResultPath string
	MeasurementID           string
	ProcessID               string
	StepID                  string
	Parameter               string // the name of the parameter the answer fills
	Values                  map[string]any
	CallID                  string // the apiCall's id (not sent)
}

// apiCallEvidenceKey holds, in the data of an action, which apiCall's
// answer filled each parameter (parameter id → apiCall id): the console
// shows that call's description beside the value, and the ledger hashes it
// with the values.
const apiCallEvidenceKey = "_apiCalls"

// FilledBy is, by parameter id, the apiCall whose answer gave the action's
// value.
func (a Action) FilledBy() map[string]string {
	m, _ := a.Data[apiCallEvidenceKey].(map[string]any)
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k], _ = v.(string)
	}
	return out
}

// Body is the JSON a POST call sends.
func (r APIRequest) Body() map[string]any {
	return map[string]any{"measurementId": r.MeasurementID, "processId": r.ProcessID, "stepId": r.StepID,
		"parameter": r.Parameter, "values": r.Values}
}

// key names a request by what it sends, so that an answer fetched outside
// the transaction is used only for the same question.
func (r APIRequest) key() string {
	b, _ := json.Marshal([]any{r.Method, r.URL, r.ResultPath, r.Parameter, r.Values})
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// apiAnswer is the outcome of one call.
type apiAnswer struct {
	value json.RawMessage
	err   error
}

// needCalls stops a write transaction that needs answers it does not have:
// the calls are made outside it (never holding the single writer while the
// network answers) and the transaction runs again with the answers. Each
// chain lists one parameter's calls in order.
type needCalls struct{ chains [][]APIRequest }

func (*needCalls) Error() string { return "API calls needed" }

// APICallMethods are the methods an apiCall's type may name.
var APICallMethods = []string{"POST", "GET"}

// apiCallTypes are the parameter types an API answer may fill.
var apiCallTypes = []string{TypeText, TypeLongText, TypeInt, TypeNumber, TypeBoolean, TypeDate, TypeDateTime,
	TypeSelect, TypeMultiSelect, TypeEmail, TypeURL}

// checkAPICalls validates the apiCalls of step parameter p (field f) and
// turns the names in apiCall.parameters into ids: a parameter of the same
// step, else the one parameter of the process with that name.
func (c *stepCheck) checkAPICalls(st *Step, p *Parameter, f string) {
	for k := range p.APICalls {
		l := &p.APICalls[k]
		lf := fieldIndex(f+".apiCalls", k)
		l.ParameterID = p.ID
		if l.CreatedAt == nil {
			l.CreatedAt = &c.now
		}
		a := l.APICall
		if a == nil {
			c.v.Add(lf+".apiCall", "is required: the call's url, type (POST or GET) and parameters")
			continue
		}
		setID(&a.ID)
		l.APICallID = a.ID
		if a.CreatedAt == nil {
			a.CreatedAt = &c.now
		}
		a.UpdatedAt = &c.now
		if !slices.Contains(apiCallTypes, p.Type) {
			c.v.Add(lf, "an API call cannot fill a %s parameter", p.Type)
		}
		switch {
		case c.calls == nil:
			c.v.Add(lf+".apiCall.url", "API calls are off on this server (its operator sets WPS_API_CALL_HOSTS)")
		case a.URL == "":
			c.v.Add(lf+".apiCall.url", "is required")
		default:
			if err := c.calls.Check(a.URL); err != nil {
				c.v.Add(lf+".apiCall.url", "%v", err)
			}
		}
		if a.Type == "" {
			a.Type = "POST"
		}
		if !slices.Contains(APICallMethods, a.Type) {
			c.v.Add(lf+".apiCall.type", "must be POST or GET")
		}
		for n, ref := range a.Parameters {
			name, _ := ref.(string)
			id := c.paramRef(st, name)
			switch {
			case id == "":
				c.v.Add(fieldIndex(lf+".apiCall.parameters", n), "no parameter %v in this process (name it, or give its id)", ref)
			case id == p.ID:
				c.v.Add(fieldIndex(lf+".apiCall.parameters", n), "is the parameter the call fills")
			default:
				a.Parameters[n] = id
			}
		}
	}
}

// paramRef resolves a parameter of the process being saved by id, or by
// name: the step's own first, else the only one of the process.
func (c *stepCheck) paramRef(st *Step, ref string) string {
	var found []string
	for _, s := range c.steps {
		for _, p := range s.Parameters {
			if p.ID == ref {
				return p.ID
			}
			if p.Name == ref {
				if s.ID == st.ID {
					return p.ID
				}
				found = append(found, p.ID)
			}
		}
	}
	if len(found) == 1 {
		return found[0]
	}
	return ""
}

// fillFromAPIs fills, for each parameter of st with apiCalls that the
// caller did not send, the answer of its first call that gives a value. A
// call runs when one of its listed parameters gets a value in this action
// (or, listing none, while the parameter is empty). Answers come from
// r.answers; when one is missing, *needCalls asks the caller to fetch them.
// Errors: CodeUpstream when every call failed or an answer is not a value
// the parameter accepts.
func (r *run) fillFromAPIs(st Step, data, cur map[string]any) (filled bool, err error) {
	var need needCalls
	for _, p := range st.Parameters {
		if len(p.APICalls) == 0 || data[p.ID] != nil {
			continue
		}
		chain := r.apiRequests(st, p, data, cur)
		var lastErr error
		for i, req := range chain {
			ans, ok := r.answers[req.key()]
			if !ok {
				need.chains = append(need.chains, chain[i:])
				lastErr = nil // the rest of the chain may still answer
				break
			}
			if ans.err != nil {
				lastErr = ans.err
				continue
			}
			if ans.value == nil {
				continue
			}
			var decoded any
			d := json.NewDecoder(bytes.NewReader(ans.value))
			d.UseNumber()
			_ = d.Decode(&decoded)
			v, ok := convertValue(p, decoded)
			if !ok {
				return false, upstream("parameters."+p.Name, "the API call answered %s, which is not a valid %s value", ans.value, p.Type)
			}
			data[p.ID], cur[p.ID] = v, v
			by, _ := data[apiCallEvidenceKey].(map[string]any)
			if by == nil {
				by = map[string]any{}
				data[apiCallEvidenceKey] = by
			}
			by[p.ID] = req.CallID
			filled = true
			lastErr = nil
			break
		}
		if lastErr != nil && data[p.ID] == nil {
			return false, upstream("parameters."+p.Name, "the API call failed: %v (send the value to skip the call)", lastErr)
		}
	}
	if len(need.chains) > 0 {
		return false, &need
	}
	return filled, nil
}

// apiRequests are the calls that fill p in this action, in order.
func (r *run) apiRequests(st Step, p Parameter, data, cur map[string]any) []APIRequest {
	var out []APIRequest
	for _, l := range p.APICalls {
		a := l.APICall
		if a == nil {
			continue
		}
		trigger := len(a.Parameters) == 0 && cur[p.ID] == nil
		values := map[string]any{}
		for _, ref := range a.Parameters {
			id, _ := ref.(string)
			if _, given := data[id]; given {
				trigger = true
			}
			values[r.paramName(id)] = cur[id]
		}
		if trigger {
			out = append(out, APIRequest{Method: a.Type, URL: a.URL, ResultPath: a.ResultPath, MeasurementID: r.m.ID,
				ProcessID: r.m.ProcessID, StepID: st.ID, Parameter: p.Name, Values: values, CallID: a.ID})
		}
	}
	return out
}

func (r *run) paramName(id string) string {
	for _, st := range r.proc.Steps {
		if _, p := paramByID(st.Parameters, id); p.ID != "" {
			return p.Name
		}
	}
	return id
}

func upstream(field, format string, args ...any) *Error {
	e := Invalid(field, format, args...)
	e.Code = CodeUpstream
	return e
}

// fetch makes the calls of need's chains, each chain until a call gives
// a value, and keeps their answers in answers.
func (s *Service) fetch(ctx context.Context, need *needCalls, answers map[string]apiAnswer) {
	for _, chain := range need.chains {
		for _, req := range chain {
			var ans apiAnswer
			if s.calls == nil {
				ans.err = fmt.Errorf("API calls are off on this server")
			} else {
				ans.value, ans.err = s.calls.Call(ctx, req)
			}
			answers[req.key()] = ans
			if ans.err == nil && ans.value != nil {
				break
			}
		}
	}
}
