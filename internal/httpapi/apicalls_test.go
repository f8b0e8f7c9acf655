package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"wps/internal/apicall"
	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// apiCalls lets the API call the test's servers and wait for them however
// long a busy machine takes: only a hung call times out.
func apiCalls(t *testing.T) *apicall.Config {
	return &apicall.Config{Hosts: []string{"127.0.0.1"}, AllowPrivate: true, Timeout: time.Until(tu.Deadline(t))}
}

// rateServer answers exchange rates the way an operator's service might,
// and remembers what it was sent.
type rateServer struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []map[string]any
	gets   []string
}

func newRateServer(t *testing.T) *rateServer {
	rs := &rateServer{}
	ended := make(chan struct{})
	rates := map[string]any{"USD": 5.25, "EUR": "6.1"}
	rs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/rate":
			var body map[string]any
			_ = json.NewDecoder(r.Body).Decode(&body)
			rs.mu.Lock()
			rs.bodies = append(rs.bodies, body)
			rs.mu.Unlock()
			values, _ := body["values"].(map[string]any)
			cur, _ := values["currency"].(string)
			_ = json.NewEncoder(w).Encode(map[string]any{"data": map[string]any{"rate": rates[cur]}})
		case "/rate-get":
			rs.mu.Lock()
			rs.gets = append(rs.gets, r.URL.RawQuery)
			rs.mu.Unlock()
			_ = json.NewEncoder(w).Encode(map[string]any{"value": rates[r.URL.Query().Get("currency")]})
		case "/down":
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/slow": // answers only once the caller has given up (or the test ended)
			_, _ = io.Copy(io.Discard, r.Body) // the server watches the connection from then on
			select {
			case <-r.Context().Done():
			case <-ended:
			}
		case "/text":
			_, _ = w.Write([]byte(`"not a number"`))
		}
	}))
	t.Cleanup(rs.Close)
	t.Cleanup(func() { close(ended) }) // first
	return rs
}

func (rs *rateServer) calls() int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return len(rs.bodies) + len(rs.gets)
}

// quoteProcess is a step whose rate comes from the API calls given and
// whose total is computed from it.
func quoteProcess(name string, calls ...map[string]any) map[string]any {
	return map[string]any{"name": name, "steps": []map[string]any{
		{"label": "Quote", "policyNames": []string{"Admins"}, "parameters": []map[string]any{
			{"name": "currency", "type": "SELECT", "optionItems": []map[string]any{{"value": "USD"}, {"value": "EUR"}}},
			{"name": "amount", "type": "NUMBER"},
			{"name": "rate", "type": "NUMBER", "decimals": 4, "apiCalls": calls},
			{"name": "total", "type": "FORMULA", "computedFormula": []string{"amount", "*", "rate"}, "decimals": 2},
		}},
	}}
}

func call(url string, extra ...string) map[string]any {
	c := map[string]any{"url": url, "parameters": []string{"currency"}}
	for i := 0; i+1 < len(extra); i += 2 {
		c[extra[i]] = extra[i+1]
	}
	return map[string]any{"apiCall": c}
}

func TestAPICallsFillParameters(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		rs := newRateServer(t)
		env := tu.NewEnv(t, engine, tu.Options{APICalls: apiCalls(t)})
		env.Call(post, "/v1/users/policies", env.AdminKey, map[string]any{"name": "Admins", "roles": []string{"ADMIN"}}, 201)
		p := env.Call(post, "/v1/process", env.AdminKey, quoteProcess("Quote", call(rs.URL+"/rate", "resultPath", "data.rate", "description", "FX desk")), 201).JSON()
		link := p["steps"].([]any)[0].(map[string]any)["parameters"].([]any)[2].(map[string]any)["apiCalls"].([]any)[0].(map[string]any)
		apiCall := link["apiCall"].(map[string]any)
		if link["apiCallId"] != apiCall["id"] || link["parameterId"] == "" || apiCall["type"] != "POST" || len(apiCall["parameters"].([]any)) != 1 || apiCall["parameters"].([]any)[0] == "currency" {
			t.Fatalf("saved link: %v", link)
		}

		m := env.Call(post, "/v1/measurements/simplified", env.AdminKey, map[string]any{"processUuid": p["id"],
			"parameters": map[string]any{"currency": "USD", "amount": 100}}, 201).JSON()
		if got := actionValues(m); got["rate"] != "5.25" || got["total"] != "525" {
			t.Fatalf("filled: %v", got)
		}
		sent := rs.bodies[0]
		if sent["measurementId"] != m["id"] || sent["parameter"] != "rate" || sent["stepId"] == "" ||
			sent["values"].(map[string]any)["currency"] != "USD" {
			t.Fatalf("the endpoint got %v (measurement %v)", sent, m["id"])
		}

		// A measurement shows a step parameter's apiCalls as the calls themselves.
		full := env.Call(get, "/v1/measurements/"+m["id"].(string), env.AdminKey, nil, 200).JSON()
		shown := full["process"].(map[string]any)["steps"].([]any)[0].(map[string]any)["parameters"].([]any)[2].(map[string]any)["apiCalls"].([]any)
		if len(shown) != 1 || shown[0].(map[string]any)["url"] != rs.URL+"/rate" || shown[0].(map[string]any)["id"] != apiCall["id"] {
			t.Fatalf("measurement's step parameter apiCalls: %v", shown)
		}
		// The value the call gave names its call (the console shows its description beside it); a value sent names none.
		for _, d := range full["process"].(map[string]any)["actions"].([]any)[0].(map[string]any)["data"].([]any) {
			d := d.(map[string]any)
			if filled := d["parameterId"] == link["parameterId"]; filled != (d["apiCallId"] == apiCall["id"]) || !filled && d["apiCallId"] != nil {
				t.Fatalf("data %v: apiCallId %v, want it on the parameter the call filled only", d["parameterId"], d["apiCallId"])
			}
		}

		// On an action: an input given calls (a string answer is converted);
		// a value the caller sends wins and no call is made; nor when no listed input is given.
		plain := func() (string, string) {
			pm := env.Call(post, "/v1/measurements", env.AdminKey, map[string]any{"processId": p["id"]}, 201).JSON()
			return pm["id"].(string), p["steps"].([]any)[0].(map[string]any)["id"].(string)
		}
		id, step := plain()
		a := env.Call(post, "/v1/measurements/"+id+"/actions", env.AdminKey, map[string]any{"stepId": step, "type": "WRITE_DATA",
			"parameters": map[string]any{"currency": "EUR", "amount": 10}}, 201).JSON()
		if s := string(mustJSON(a)); !strings.Contains(s, `"value":"6.1"`) || !strings.Contains(s, `"value":"61"`) {
			t.Fatalf("after EUR: %s", s)
		}
		n := rs.calls()
		env.Call(post, "/v1/measurements/simplified", env.AdminKey, map[string]any{"processUuid": p["id"],
			"parameters": map[string]any{"currency": "USD", "amount": 1, "rate": 4}}, 201)
		id, step = plain()
		env.Call(post, "/v1/measurements/"+id+"/actions", env.AdminKey, map[string]any{"stepId": step, "type": "WRITE_DATA",
			"parameters": map[string]any{"amount": 20}}, 201)
		if rs.calls() != n {
			t.Fatalf("%d calls, want none", rs.calls()-n)
		}

		// GET sends the values as a query; a failing first call falls back to the next.
		pg := env.Call(post, "/v1/process", env.AdminKey, quoteProcess("Quote by GET", call(rs.URL+"/down"), call(rs.URL+"/rate-get", "type", "GET")), 201).JSON()
		mg := env.Call(post, "/v1/measurements/simplified", env.AdminKey, map[string]any{"processUuid": pg["id"],
			"parameters": map[string]any{"currency": "USD", "amount": 2}}, 201).JSON()
		if got := actionValues(mg); got["rate"] != "5.25" || got["total"] != "10.5" || rs.gets[0] != "currency=USD" {
			t.Fatalf("GET fallback: %v, query %q", got, rs.gets)
		}

		// Failures answer 502 naming the parameter, and nothing is written. A
		// call that takes longer than WPS_API_CALL_TIMEOUT fails: on a server
		// whose timeout is short (the endpoint never answers in time).
		impatient := tu.NewEnv(t, engine, tu.Options{APICalls: &apicall.Config{Hosts: []string{"127.0.0.1"}, AllowPrivate: true, Timeout: 100 * time.Millisecond}})
		impatient.Call(post, "/v1/users/policies", impatient.AdminKey, map[string]any{"name": "Admins", "roles": []string{"ADMIN"}}, 201)
		for path, detail := range map[string]string{"/down": "answered 503", "/slow": "timeout", "/text": "not a valid NUMBER"} {
			env := env
			if path == "/slow" {
				env = impatient
			}
			pf := env.Call(post, "/v1/process", env.AdminKey, quoteProcess("Quote "+path, call(rs.URL+path)), 201).JSON()
			res := env.Do(tu.Request{Method: post, Path: "/v1/measurements/simplified", Key: env.AdminKey,
				Body: map[string]any{"processUuid": pf["id"], "parameters": map[string]any{"currency": "USD", "amount": 1}}})
			pr := tu.Problem(t, res, 502, "parameters.rate")
			if !strings.Contains(pr["detail"].(string), detail) {
				t.Fatalf("%s: detail %q", path, pr["detail"])
			}
			if n := env.Call(get, "/v1/measurements?processId="+pf["id"].(string), env.AdminKey, nil, 200).JSON()["meta"].(map[string]any)["total"]; n != 0.0 {
				t.Fatalf("%s: %v measurements kept after a failed call", path, n)
			}
		}
	})
}

func TestAPICallDefinitions(t *testing.T) {
	bad := func(t *testing.T, env *tu.Env, body map[string]any, field, detail string) {
		t.Helper()
		pr := tu.Problem(t, env.Do(tu.Request{Method: post, Path: "/v1/process", Key: env.AdminKey, Body: body}), 422, field)
		if !strings.Contains(pr["detail"].(string), detail) {
			t.Fatalf("detail %q, want %q", pr["detail"], detail)
		}
	}
	const url = "steps[0].parameters[2].apiCalls[0].apiCall.url"
	rs := newRateServer(t)

	off := tu.NewEnv(t, sqlstore.SQLite)
	off.Call(post, "/v1/users/policies", off.AdminKey, map[string]any{"name": "Admins", "roles": []string{"ADMIN"}}, 201)
	bad(t, off, quoteProcess("Off", call(rs.URL+"/rate")), url, "WPS_API_CALL_HOSTS")

	guarded := tu.NewEnv(t, sqlstore.SQLite, tu.Options{APICalls: &apicall.Config{Hosts: []string{"127.0.0.1", "*.example.com"}}})
	guarded.Call(post, "/v1/users/policies", guarded.AdminKey, map[string]any{"name": "Admins", "roles": []string{"ADMIN"}}, 201)
	bad(t, guarded, quoteProcess("Private", call(rs.URL+"/rate")), url, "private")
	bad(t, guarded, quoteProcess("Elsewhere", call("https://example.org/rate")), url, "allow-list")
	bad(t, guarded, quoteProcess("Apex", call("https://example.com/rate")), url, "allow-list")
	guarded.Call(post, "/v1/process", guarded.AdminKey, quoteProcess("Sub", call("https://fx.example.com/rate")), 201)
	bad(t, guarded, quoteProcess("Method", call("https://fx.example.com/rate", "type", "DELETE")), "steps[0].parameters[2].apiCalls[0].apiCall.type", "POST or GET")
	bad(t, guarded, quoteProcess("Input", map[string]any{"apiCall": map[string]any{"url": "https://fx.example.com/rate", "parameters": []string{"nope"}}}),
		"steps[0].parameters[2].apiCalls[0].apiCall.parameters[0]", "no parameter")
	bad(t, guarded, quoteProcess("Self", map[string]any{"apiCall": map[string]any{"url": "https://fx.example.com/rate", "parameters": []string{"rate"}}}),
		"steps[0].parameters[2].apiCalls[0].apiCall.parameters[0]", "fills")
	bad(t, guarded, quoteProcess("Bare", map[string]any{"apiCallId": "x"}), "steps[0].parameters[2].apiCalls[0].apiCall", "required")
	bad(t, guarded, map[string]any{"name": "Formula", "steps": []map[string]any{{"label": "S", "policyNames": []string{"Admins"}, "parameters": []map[string]any{
		{"name": "a", "type": "NUMBER"}, {"name": "b", "type": "NUMBER"},
		{"name": "f", "type": "ATTACHMENT", "apiCalls": []map[string]any{call("https://fx.example.com/rate")}}}}}},
		"steps[0].parameters[2].apiCalls[0]", "cannot fill a ATTACHMENT")
	tu.Problem(t, guarded.Do(tu.Request{Method: post, Path: "/v1/entities", Key: guarded.AdminKey, Body: map[string]any{"name": "Rates",
		"parameters": []map[string]any{{"name": "rate", "type": "NUMBER", "apiCalls": []map[string]any{call("https://fx.example.com/rate")}}}}}), 422, "parameters[0].apiCalls")
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
