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

// readableOn darkens (or lightens) c until it reaches ratio against bg:
// the theme colour used for links and text on the page's background.
func readableOn(c, bg rgb, ratio float64) rgb {
	for i := 0; i < 100 && contrast(c, bg) < ratio; i++ {
		step := func(v uint8) uint8 {
			if bg.luminance() > 0.5 {
				return uint8(float64(v) * 0.92)
			}
			return uint8(math.Min(255, float64(v)*1.08+2))
		}
		c = rgb{step(c.r), step(c.g), step(c.b)}
	}
	return c
}

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

// themeCSS sets the console's colour variables from the org's colour.
func themeCSS(col rgb) string {
	return fmt.Sprintf(":root{--brand:#%s;--on-brand:#%s;--brand-text:#%s}\n",
		col.hex(), onColor(col).hex(), readableOn(col, white, 4.5).hex())
}
