package console

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
)

// rgb is a colour of the sRGB space, each channel 0..255.
type rgb struct{ r, g, b uint8 }

// parseHex reads #RGB or #RRGGBB (the # is optional).
func parseHex(s string) (rgb, bool) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "#")
	if len(s) == 3 {
		s = string([]byte{s[0], s[0], s[1], s[1], s[2], s[2]})
	}
	if len(s) != 6 {
		return rgb{}, false
	}
	v, err := strconv.ParseUint(s, 16, 32)
	if err != nil {
		return rgb{}, false
	}
	return rgb{uint8(v >> 16), uint8(v >> 8), uint8(v)}, true
}

func (c rgb) hex() string { return fmt.Sprintf("%02x%02x%02x", c.r, c.g, c.b) }

// luminance is the WCAG 2 relative luminance.
func (c rgb) luminance() float64 {
	lin := func(v uint8) float64 {
		x := float64(v) / 255
		if x <= 0.04045 {
			return x / 12.92
		}
		return math.Pow((x+0.055)/1.055, 2.4)
	}
	return 0.2126*lin(c.r) + 0.7152*lin(c.g) + 0.0722*lin(c.b)
}

// contrast is the WCAG 2 contrast ratio of two colours (1 to 21).
func contrast(a, b rgb) float64 {
	la, lb := a.luminance(), b.luminance()
	if la < lb {
		la, lb = lb, la
	}
	return (la + 0.05) / (lb + 0.05)
}

var (
	white = rgb{255, 255, 255}
	black = rgb{0, 0, 0}
	ink   = rgb{17, 24, 39} // the console's text colour
)

// onColor is the text colour for a background: white or ink, whichever
// contrasts more, or black where neither reaches 4.5:1 (WCAG AA; white or
// black always does).
func onColor(bg rgb) rgb {
	best := white
	if contrast(bg, ink) > contrast(bg, white) {
		best = ink
	}
	if contrast(bg, best) < 4.5 && contrast(bg, black) > contrast(bg, best) {
		best = black
	}
	return best
}

// readableOn darkens (or, on dark backgrounds, lightens) c until it
// reaches ratio against every one of bgs: the theme colour used as text
// (links, focus rings) on the page's backgrounds.
func readableOn(c rgb, ratio float64, bgs ...rgb) rgb {
	dark := bgs[0].luminance() < 0.5
	least := func(c rgb) float64 {
		m := 21.0
		for _, bg := range bgs {
			m = math.Min(m, contrast(c, bg))
		}
		return m
	}
	for i := 0; i < 100 && least(c) < ratio; i++ {
		step := func(v uint8) uint8 {
			if dark {
				return uint8(math.Min(255, float64(v)*1.08+4))
			}
			return uint8(float64(v) * 0.92)
		}
		c = rgb{step(c.r), step(c.g), step(c.b)}
	}
	return c
}

// The backgrounds text stands on in console.css (cards, page, table
// headers, overdue rows, notices), in light and in dark mode: the theme's
// text colour must read on each.
var (
	lightGrounds = []rgb{white, {0xf6, 0xf7, 0xf9}, {0xf9, 0xfa, 0xfb}, {0xff, 0xfa, 0xeb}, {0xf3, 0xf4, 0xf6}, {0xec, 0xfd, 0xf3}}
	darkGrounds  = []rgb{{0x11, 0x18, 0x27}, {0x0b, 0x11, 0x20}, {0x1f, 0x29, 0x37}, {0x2a, 0x21, 0x10}, {0x05, 0x2e, 0x1c}}
)

// theme serves the stylesheet of an org's colour: GET /theme.css?c=RRGGBB.
// It depends on the colour only, so it is cached for good.
func (c *Console) theme(w http.ResponseWriter, r *http.Request) {
	col, ok := parseHex(r.URL.Query().Get("c"))
	if !ok {
		http.Error(w, "c must be a colour as RRGGBB", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
	fmt.Fprint(w, themeCSS(col))
}

// themeCSS sets the console's colour variables from the org's colour:
// the colour itself where it is a background, the text on it (white or
// black, whichever reads), and the colour made readable as text on the
// page, in light and in dark mode.
func themeCSS(col rgb) string {
	return fmt.Sprintf(":root{--brand:#%s;--on-brand:#%s;--brand-text:#%s}\n"+
		"@media (prefers-color-scheme: dark){:root{--brand-text:#%s}}\n",
		col.hex(), onColor(col).hex(), readableOn(col, 4.5, lightGrounds...).hex(), readableOn(col, 4.5, darkGrounds...).hex())
}
