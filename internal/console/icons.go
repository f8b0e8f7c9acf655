package console

import (
	"html/template"
	"strings"
)

// icons are the drawings of wps.IconNames: the inside of a 24×24 SVG drawn
// with a 2-pixel stroke in the text's colour, inline (no other host, nothing
// the CSP would have to allow). TestIconsDrawn checks each name has one.
var icons = map[string]string{
	"alert":       `<path d="M12 3 22 20H2Z"/><path d="M12 10v4M12 17v.5"/>`,
	"bolt":        `<path d="M13 2 5 14h6l-1 8 8-12h-6Z"/>`,
	"box":         `<path d="M3 7l9-4 9 4v10l-9 4-9-4Z"/><path d="M3 7l9 4 9-4M12 11v10"/>`,
	"calendar":    `<rect x="3" y="5" width="18" height="16" rx="2"/><path d="M3 10h18M8 3v4M16 3v4"/>`,
	"camera":      `<path d="M3 8h4l2-3h6l2 3h4v12H3Z"/><circle cx="12" cy="13" r="4"/>`,
	"cart":        `<path d="M2 3h3l3 12h11l2-8H7"/><circle cx="9" cy="20" r="1.5"/><circle cx="18" cy="20" r="1.5"/>`,
	"check":       `<circle cx="12" cy="12" r="9"/><path d="M7.5 12.5l3 3 6-6.5"/>`,
	"clipboard":   `<rect x="5" y="4" width="14" height="18" rx="2"/><rect x="9" y="2" width="6" height="4" rx="1"/><path d="M8 11h8M8 15h8M8 19h5"/>`,
	"document":    `<path d="M6 2h8l5 5v15H6Z"/><path d="M14 2v5h5M9 12h7M9 16h7"/>`,
	"factory":     `<path d="M2 21V10l6 4v-4l6 4V4h4v17Z"/><path d="M2 21h20"/>`,
	"flask":       `<path d="M9 2h6M10 2v7L4 20h16L14 9V2"/><path d="M7 15h10"/>`,
	"leaf":        `<path d="M5 19C4 10 10 4 20 4c0 10-6 16-15 15Z"/><path d="M5 19 13 11"/>`,
	"shield":      `<path d="M12 2 4 5v6c0 5 3.5 9 8 11 4.5-2 8-6 8-11V5Z"/><path d="M8.5 12l2.5 2.5 4.5-5"/>`,
	"thermometer": `<path d="M10 14V5a2 2 0 0 1 4 0v9a4 4 0 1 1-4 0Z"/><path d="M12 9v8"/>`,
	"truck":       `<path d="M2 6h12v10H2ZM14 10h4l4 4v2h-8Z"/><circle cx="6" cy="18" r="2"/><circle cx="18" cy="18" r="2"/>`,
	"user":        `<circle cx="12" cy="8" r="4"/><path d="M4 21c1-4.5 4-7 8-7s7 2.5 8 7"/>`,
	"wrench":      `<circle cx="16" cy="8" r="4.5"/><path d="M12.8 11.2 4 20"/><path d="M16 8h.01"/>`,
}

// icon is the inline SVG of a process's icon, or nothing for an unknown
// name. It is decoration: the name beside it says what it is.
func icon(name string) template.HTML {
	d, ok := icons[name]
	if !ok {
		return ""
	}
	var b strings.Builder
	b.WriteString(`<svg class="icon" width="20" height="20" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round" aria-hidden="true" focusable="false">`)
	b.WriteString(d) // constant markup of this file
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
