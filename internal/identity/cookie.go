package identity

import (
	"net/http"
	"time"
)

// SessionCookieName names the cookie that carries a console session.
const SessionCookieName = "wps_session"

// SessionCookie is the cookie that carries a session's token: HttpOnly,
// SameSite=Lax, for the whole site (the console and the API), Secure when
// secure. An empty token makes the cookie that ends it in the browser.
func SessionCookie(token string, expires time.Time, secure bool) http.Cookie {
	c := http.Cookie{Name: SessionCookieName, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: secure, Expires: expires}
	if token == "" {
		c.Expires, c.MaxAge = time.Time{}, -1
	}
	return c
}
