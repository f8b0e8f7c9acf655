package console

import (
	"bytes"
	"net/url"
	"strings"

	"golang.org/x/net/html"
)

// drawnForm is what the form with the given id in page would post if sent
// as drawn: each enabled control's name and value, as a browser collects
// them (checked boxes only, a list's selected options or its first, no
// buttons). A page without script posts it back unchanged unless its user
// edits it, so the designer compares the two to tell.
func drawnForm(page []byte, id string) url.Values {
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		return nil
	}
	out := url.Values{}
	var walk func(n *html.Node, in bool)
	walk = func(n *html.Node, in bool) {
		if n.Type == html.ElementNode {
			if n.Data == "form" {
				in = htmlAttr(n, "id") == id
			}
			name, ok := htmlAttr(n, "name"), in && !hasAttr(n, "disabled")
			switch {
			case !ok || name == "":
			case n.Data == "input":
				switch t := strings.ToLower(htmlAttr(n, "type")); t {
				case "submit", "button", "image", "reset", "file":
				case "checkbox", "radio":
					if hasAttr(n, "checked") {
						out.Add(name, or(htmlAttr(n, "value"), "on"))
					}
				default:
					out.Add(name, htmlAttr(n, "value"))
				}
			case n.Data == "textarea":
				out.Add(name, nodeText(n))
			case n.Data == "select":
				var first *html.Node
				picked := false
				eachOption(n, func(o *html.Node) {
					if first == nil {
						first = o
					}
					if hasAttr(o, "selected") {
						out.Add(name, optionValue(o))
						picked = true
					}
				})
				if !picked && first != nil && !hasAttr(n, "multiple") {
					out.Add(name, optionValue(first))
				}
				return
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c, in)
		}
	}
	walk(doc, false)
	return out
}

func eachOption(n *html.Node, fn func(*html.Node)) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		switch {
		case c.Type == html.ElementNode && c.Data == "option" && !hasAttr(c, "disabled"):
			fn(c)
		case c.Type == html.ElementNode && c.Data == "optgroup":
			eachOption(c, fn)
		}
	}
}

func optionValue(o *html.Node) string {
	for _, a := range o.Attr {
		if a.Key == "value" {
			return a.Val
		}
	}
	return strings.Join(strings.Fields(nodeText(o)), " ")
}

func htmlAttr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Key == key {
			return true
		}
	}
	return false
}

func nodeText(n *html.Node) string {
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
	}
	return b.String()
}
