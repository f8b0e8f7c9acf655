package console_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"wps/internal/sqlstore"
	tu "wps/internal/testutil"
)

// formValues are what a browser without script sends from the page's form
// whose action is action: its inputs but files and buttons, checkboxes
// when checked.
func formValues(t *testing.T, page, action string) url.Values {
	t.Helper()
	_, form, ok := strings.Cut(page, `action="`+action+`"`)
	if !ok {
		t.Fatalf("no form to %s on the page", action)
	}
	form, _, _ = strings.Cut(form, "</form>")
	attr := regexp.MustCompile(`([a-z-]+)="([^"]*)"`)
	v := url.Values{}
	for _, tag := range regexp.MustCompile(`<input[^>]*>`).FindAllString(form, -1) {
		a := map[string]string{}
		for _, m := range attr.FindAllStringSubmatch(tag, -1) {
			a[m[1]] = html.UnescapeString(m[2])
		}
		switch {
		case a["name"] == "" || a["type"] == "file" || a["type"] == "search":
		case a["type"] == "checkbox" && !strings.Contains(tag, " checked"):
		default:
			v.Add(a["name"], a["value"])
		}
	}
	return v
}

// untick is a form's values with the Keep box of file id (field name) unticked.
func untick(t *testing.T, v url.Values, name, id string) url.Values {
	t.Helper()
	k := "k." + name
	n := len(v[k])
	v[k] = slicesDelete(v[k], id)
	if len(v[k]) != n-1 {
		t.Fatalf("no ticked Keep box for %s in %s: %v", id, name, v)
	}
	return v
}

func slicesDelete(xs []string, x string) []string {
	var out []string
	for _, s := range xs {
		if s != x {
			out = append(out, s)
		}
	}
	return out
}

// TestUntickedFileIsRemoved: a file whose Keep box is unticked leaves the
// value (the form marks the files it showed), others stay; a required one
// is refused at its field and stays stored. Records and a step's rework,
// through the form as a browser without script sends it.
func TestUntickedFileIsRemoved(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		o := newOrg(t, engine)
		env, base := o.env, o.env.Server.URL

		t.Run("a record", func(t *testing.T) {
			ent := env.Call(post, "/v1/entities", env.AdminKey, map[string]any{"name": "gauge", "label": "Gauges", "parameters": []map[string]any{
				{"name": "tag", "label": "Tag", "type": "TEXT"},
				{"name": "photo", "label": "Photo", "type": "ATTACHMENT"},
				{"name": "cert", "label": "Certificate", "type": "ATTACHMENT", "isRequired": true},
			}}, 201).JSON()["id"].(string)
			photo, cert := upload(t, env, "photo.png", pngBytes), upload(t, env, "cert.txt", []byte("calibrated"))
			rid := env.Call(post, "/v1/entities/"+ent+"/records", env.AdminKey, map[string]any{"values": map[string]any{"tag": "G-1", "photo": photo, "cert": cert}}, 201).JSON()["id"].(string)
			record := func() map[string]any {
				return env.Call(get, "/v1/entities/"+ent+"/records/"+rid, env.AdminKey, nil, 200).JSON()["values"].(map[string]any)
			}
			root := newClient(t, base)
			root.signIn("root@example.com")
			action := "/entities/" + ent + "/records/" + rid
			edit := func() url.Values {
				_, page := root.do(get, "/entities/"+ent+"?edit="+rid, nil)
				return formValues(t, page, action)
			}

			// The required certificate unticked: refused at its field, shown
			// again unticked, the file still the record's.
			res, page := root.postMultipart(action, untick(t, edit(), "cert", cert), nil)
			if res.StatusCode != http.StatusUnprocessableEntity || !regexp.MustCompile(`id="f-cert-err"[^>]*>[^<]*required`).MatchString(page) {
				t.Fatalf("a required file unticked: %d\n%s", res.StatusCode, page)
			}
			if again := formValues(t, page, action); len(again["k.cert"]) != 0 || again.Get("f.cert") != cert || again.Get("k.photo") != photo {
				t.Fatalf("the refused form shows %v", again)
			}
			if v := record(); v["cert"] != cert || v["photo"] != photo {
				t.Fatalf("a refused save changed the record: %v", v)
			}

			// The photo unticked, nothing added: saved, and the record has no photo.
			res, _ = root.postMultipart(action, untick(t, edit(), "photo", photo), nil)
			if res.StatusCode != http.StatusSeeOther {
				t.Fatalf("save: %d", res.StatusCode)
			}
			if _, page := root.do(get, res.Header.Get("Location"), nil); !strings.Contains(page, "Saved.") {
				t.Fatal("the page does not say saved")
			}
			if v := record(); v["photo"] != nil || v["cert"] != cert || v["tag"] != "G-1" {
				t.Fatalf("after unticking the photo the record holds %v", v)
			}

			// A new certificate while the old one is unticked replaces it.
			res, _ = root.postMultipart(action, untick(t, edit(), "cert", cert), map[string][][2]string{"p.cert": {{"cert2.txt", "recalibrated"}}})
			if v := record(); res.StatusCode != http.StatusSeeOther || v["cert"] == cert || v["cert"] == nil {
				t.Fatalf("a new file for an unticked one: %d %v", res.StatusCode, v)
			}
		})

		t.Run("a step's rework: one of two files unticked", func(t *testing.T) {
			r := sentBack(t, o)
			m, cert, front, back, files := r.measure, r.cert, r.front, r.back, r.files
			ines := newClient(t, base)
			ines.signIn("ines@example.com")
			action := "/measurements/" + m + "/actions"
			form := func() url.Values {
				_, page := ines.do(get, "/measurements/"+m, nil)
				v := formValues(t, page, action)
				v.Set("type", "WRITE_DATA")
				return v
			}

			// The required certificate unticked: refused at its field, nothing stored.
			res, page := ines.postMultipart(action, untick(t, form(), "cert", cert), nil)
			if res.StatusCode != http.StatusUnprocessableEntity || !regexp.MustCompile(`id="f-cert-err"[^>]*>[^<]*required`).MatchString(page) {
				t.Fatalf("a required file unticked: %d\n%s", res.StatusCode, page)
			}
			if got := files(); len(got) != 0 {
				t.Fatalf("a refused rework stored %v", got)
			}

			// One of the two photos unticked: the other stays, and the certificate.
			res, _ = ines.postMultipart(action, untick(t, form(), "photos", front), nil)
			if res.StatusCode != http.StatusSeeOther {
				t.Fatalf("save: %d", res.StatusCode)
			}
			if got := files(); strings.Join(got["photos"], ",") != back || strings.Join(got["cert"], ",") != cert {
				t.Fatalf("after unticking one photo the step holds %v", got)
			}
		})
	})
}

// rework is a measurement whose step Photograph was sent back to the
// inspector with two photos (front, back) and a required certificate.
type rework struct {
	measure, cert, front, back string
	files                      func() map[string][]string // the step's values that count, by parameter
}

func sentBack(t *testing.T, o *org) rework {
	t.Helper()
	env := o.env
	proc := env.Call(post, "/v1/process", env.AdminKey, map[string]any{"name": "Valve check", "steps": []map[string]any{
		{"label": "Photograph", "policyNames": []string{"Inspector"}, "parameters": []map[string]any{
			{"name": "photos", "label": "Photos", "type": "ATTACHMENT", "advancedOptions": map[string]any{"isMultiple": true}},
			{"name": "cert", "label": "Certificate", "type": "ATTACHMENT", "isRequired": true},
		}},
		{"label": "Review", "policyNames": []string{"Supervisor"}},
	}}, 201).JSON()
	steps := proc["steps"].([]any)
	first, review := steps[0].(map[string]any)["id"].(string), steps[1].(map[string]any)["id"].(string)
	names := map[string]string{} // parameter id → name
	for _, p := range steps[0].(map[string]any)["parameters"].([]any) {
		names[p.(map[string]any)["id"].(string)] = p.(map[string]any)["name"].(string)
	}
	m := env.Call(post, "/v1/measurements", o.inspector, map[string]any{"processId": proc["id"]}, 201).JSON()["id"].(string)
	front, back, cert := uploadAs(t, env, o.inspector, "front.png", pngBytes), uploadAs(t, env, o.inspector, "back.txt", []byte("back")), uploadAs(t, env, o.inspector, "cert.txt", []byte("ok"))
	env.Call(post, "/v1/measurements/"+m+"/actions", o.inspector, map[string]any{"stepId": first, "type": "WRITE_DATA",
		"parameters": map[string]any{"photos": []string{front, back}, "cert": cert}}, 201)
	rita := person(t, env, "rita@example.com", "SUPERVISOR")
	env.Call(post, "/v1/measurements/"+m+"/actions", rita, map[string]any{"stepId": review, "type": "REJECTION", "observation": "Blurred."}, 201)

	files := func() map[string][]string { // the step's values that count, by parameter
		out := map[string][]string{}
		for _, a := range env.Call(get, "/v1/measurements/"+m, env.AdminKey, nil, 200).JSON()["process"].(map[string]any)["actions"].([]any) {
			a := a.(map[string]any)
			if a["superseded"] == true || a["reproved"] == true || a["stepId"] != first {
				continue
			}
			for _, d := range a["data"].([]any) {
				var ids []string
				for _, it := range d.(map[string]any)["dataItems"].([]any) {
					ids = append(ids, it.(map[string]any)["value"].(string))
				}
				out[names[d.(map[string]any)["parameterId"].(string)]] = ids
			}
		}
		return out
	}
	return rework{measure: m, cert: cert, front: front, back: back, files: files}
}

// TestKeepBoxInBrowser: in the browser, one of two photos unticked on a
// rework is removed and the other kept; a draft brings the box back
// unticked, and only that one.
func TestKeepBoxInBrowser(t *testing.T) {
	tu.ForEachEngine(t, func(t *testing.T, engine sqlstore.Engine) {
		o := newOrg(t, engine)
		r := sentBack(t, o)
		ines := newBrowser(t).person(o.env.Server.URL)
		signIn(ines, "ines@example.com")
		page := "/measurements/" + r.measure
		ines.open(page)
		ticked := func(name string) string {
			return ines.call("checkbox", "Keep "+name, `function(){ return String(this.checked) }`)
		}
		ines.call("checkbox", "Keep front.png", `function(){ this.click() }`)
		ines.open(page) // a reload: the draft unticks front.png again, and nothing else
		if f, b, c := ticked("front.png"), ticked("back.txt"), ticked("cert.txt"); f != "false" || b != "true" || c != "true" {
			t.Fatalf("after a reload Keep is front %s, back %s, certificate %s", f, b, c)
		}
		ines.press("button", "Save")
		ines.sees("Saved.")
		if got := r.files(); strings.Join(got["photos"], ",") != r.back || strings.Join(got["cert"], ",") != r.cert {
			t.Fatalf("after unticking one photo the step holds %v", got)
		}
	})
}
