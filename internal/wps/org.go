package wps

import (
	"context"
	"net/mail"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// OrgUpdate changes the org's settings; nil fields stay as they are.
type OrgUpdate struct {
	LogoKey    *string
	PinnedURL  *string
	ThemeColor *string
	Operations *[]string
}

var colorRe = regexp.MustCompile(`^#[0-9A-Fa-f]{6}$`)

// GetOrg returns the caller's org.
func (s *Service) GetOrg(ctx context.Context, p *Principal) (Org, error) {
	var o Org
	err := s.store.Read(ctx, func(tx Tx) (err error) {
		o, err = tx.GetOrg(p.OrgID)
		return err
	})
	return o, err
}

// UpdateOrg applies u to the caller's org. Errors: CodeInvalid naming the field.
func (s *Service) UpdateOrg(ctx context.Context, p *Principal, u OrgUpdate) (Org, error) {
	if err := p.Require(FnOrgUpdate); err != nil {
		return Org{}, err
	}
	var v Validator
	if u.LogoKey != nil {
		v.Check(len(*u.LogoKey) <= 500, "logoKey", "must be at most 500 characters")
	}
	if u.PinnedURL != nil && *u.PinnedURL != "" {
		v.Check(validHTTPURL(*u.PinnedURL), "pinnedUrl", "must be an absolute http or https URL")
	}
	if u.ThemeColor != nil && *u.ThemeColor != "" {
		v.Check(colorRe.MatchString(*u.ThemeColor), "themeColor", "must be a color as #RRGGBB")
	}
	if u.Operations != nil {
		v.Check(len(*u.Operations) <= len(ConsoleSections), "operations", "must have at most %d items", len(ConsoleSections))
		for i, op := range *u.Operations {
			v.Check(slices.Contains(ConsoleSections, op), fieldIndex("operations", i), "must be a console section: %s", strings.Join(ConsoleSections, ", "))
		}
	}
	if err := v.Err(); err != nil {
		return Org{}, err
	}
	var o Org
	err := s.store.Write(ctx, func(tx Tx) (err error) {
		if u.LogoKey != nil && *u.LogoKey != "" {
			a, err := tx.GetAttachment(p.OrgID, *u.LogoKey)
			if IsCode(err, CodeNotFound) {
				return Invalid("logoKey", "must be the id of an uploaded image (POST /v1/attachments)")
			} else if err != nil {
				return err
			}
			if !strings.HasPrefix(a.ContentType, "image/") {
				return Invalid("logoKey", "must be an image; the attachment is %s", a.ContentType)
			}
		}
		if o, err = tx.GetOrg(p.OrgID); err != nil {
			return err
		}
		before := o
		setIf(&o.LogoKey, u.LogoKey)
		setIf(&o.PinnedURL, u.PinnedURL)
		setIf(&o.ThemeColor, u.ThemeColor)
		setIf(&o.Operations, u.Operations)
		o.UpdatedAt = s.Now()
		if err := tx.UpdateOrg(o); err != nil {
			return err
		}
		if changes := diffFields(before, o); len(changes) > 0 {
			return s.recordAudit(tx, AuditEvent{OrgID: p.OrgID, Type: AuditOrgUpdated, Actor: actorOf(p),
				Target: AuditTarget{Kind: TargetOrg, ID: o.ID, Name: o.Name}, Changes: changes})
		}
		return nil
	})
	return o, err
}

// ConsoleSections are the sections of the console an org's operations may
// name: those shown to people who are not ADMIN (all when none is named).
var ConsoleSections = []string{"inbox", "measurements", "processes", "entities", "reports"}

func setIf[T any](dst *T, src *T) {
	if src != nil {
		*dst = *src
	}
}

func validHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && ValidPort(u.Port()) && len(s) <= 2000
}

// ValidPort reports a URL's port that can be dialled (1 to 65535), or none.
func ValidPort(p string) bool {
	n, err := strconv.ParseUint(p, 10, 16)
	return p == "" || (err == nil && n > 0)
}

func validEmail(s string) bool {
	a, err := mail.ParseAddress(s)
	return err == nil && a.Address == s && len(s) <= 320
}

func fieldIndex(field string, i int) string {
	return field + "[" + strconv.Itoa(i) + "]"
}
