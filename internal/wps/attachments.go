package wps

import (
	"context"
	"io"
	"strings"
	"unicode/utf8"
)

// MaxAttachmentBytes bounds one upload.
const MaxAttachmentBytes = 20 << 20

// Attachment is an uploaded file; an ATTACHMENT parameter's value is its id.
type Attachment struct {
	ID          string `json:"id"`
	Filename    string `json:"filename"`
	ContentType string `json:"contentType" doc:"Sniffed from the content"`
	Size        int64  `json:"size"`
	SHA256      string `json:"sha256"`
	CreatedAt   Time   `json:"createdAt"`
	OrgID       string `json:"-"`
	StorageKey  string `json:"-"`
	CreatedBy   string `json:"-"`
}

// BlobStore keeps attachment bytes. The local disk implements it
// (internal/blob); an S3-compatible store can too.
type BlobStore interface {
	// Put stores r under key and returns its size and hex SHA-256.
	Put(ctx context.Context, key string, r io.Reader, limit int64) (size int64, sha string, err error)
	Open(ctx context.Context, key string) (io.ReadCloser, error)
	Delete(ctx context.Context, key string) error
}

// AttachmentRef says that a value refers to an attachment: parameter
// ParameterID of an action of MeasurementID, or of record RecordID of
// EntityID.
type AttachmentRef struct {
	OrgID, AttachmentID, ParameterID string
	MeasurementID                    string
	EntityID, RecordID               string
}

// attachmentRefs lists the attachments that values (by parameter id) of
// params refer to, TABLE cells included; ref fills in the rest.
func attachmentRefs(params []Parameter, vals map[string]any, ref AttachmentRef) []AttachmentRef {
	var out []AttachmentRef
	for _, p := range params {
		v := vals[p.ID]
		switch {
		case v == nil:
		case p.Type == TypeAttachment:
			for _, id := range itemStrings(v) {
				r := ref
				r.AttachmentID, r.ParameterID = id, p.ID
				out = append(out, r)
			}
		case p.Type == TypeTable:
			for _, row := range tableRows(v) {
				out = append(out, attachmentRefs(p.Parameters, row, ref)...)
			}
		}
	}
	return out
}

// CanUpload says whether p may upload a file (Upload's rule): with
// action:write, for a step's file fields, or entity:write, for records'.
func (p *Principal) CanUpload() bool { return p.Can(FnActionWrite) || p.Can(FnEntityWrite) }

// Upload stores a file for the caller's org. Only writers (action:write or
// entity:write) upload. Errors: CodeForbidden, CodeInvalid (empty name),
// CodeTooLarge (over MaxAttachmentBytes).
func (s *Service) Upload(ctx context.Context, p *Principal, blobs BlobStore, filename, contentType string, r io.Reader) (Attachment, error) {
	if !p.CanUpload() {
		return Attachment{}, Errorf(CodeForbidden, "uploading needs a policy with function %q or %q", FnActionWrite, FnEntityWrite)
	}
	if filename == "" || len(filename) > 255 || !utf8.ValidString(filename) || strings.ContainsRune(filename, 0) {
		return Attachment{}, Invalid("file", "needs a file name of at most 255 bytes of valid UTF-8 text")
	}
	a := Attachment{ID: NewID(), OrgID: p.OrgID, Filename: filename, ContentType: contentType, CreatedBy: p.UserID, CreatedAt: s.Now()}
	a.StorageKey = p.OrgID + "/" + a.ID
	var err error
	if a.Size, a.SHA256, err = blobs.Put(ctx, a.StorageKey, r, MaxAttachmentBytes); err != nil {
		return Attachment{}, err
	}
	if err := s.store.Write(ctx, func(tx Tx) error { return tx.CreateAttachment(a) }); err != nil {
		_ = blobs.Delete(context.WithoutCancel(ctx), a.StorageKey)
		return Attachment{}, err
	}
	return a, nil
}

// OpenAttachment returns an attachment of the caller's org and its bytes,
// to its uploader, to ADMIN and to readers who see a value that refers to
// it. Errors: CodeNotFound (for others too, so ids do not leak).
func (s *Service) OpenAttachment(ctx context.Context, p *Principal, blobs BlobStore, id string) (Attachment, io.ReadCloser, error) {
	var a Attachment
	if err := s.store.Read(ctx, func(tx Tx) (err error) {
		if a, err = tx.GetAttachment(p.OrgID, id); err != nil {
			return err
		}
		ok, err := mayDownload(tx, p, a)
		if err == nil && !ok {
			err = NotFound("attachment")
		}
		return err
	}); err != nil {
		return a, nil, err
	}
	rc, err := blobs.Open(ctx, a.StorageKey)
	return a, rc, err
}

// DescribeAttachments returns, by id, the attachments of ids the caller
// may download (name, type, size; no bytes): how a page names the files a
// value refers to. Ids the caller may not download, or that are unknown,
// are left out, so ids do not leak.
func (s *Service) DescribeAttachments(ctx context.Context, p *Principal, ids []string) (map[string]Attachment, error) {
	out := map[string]Attachment{}
	if len(ids) == 0 {
		return out, nil
	}
	err := s.store.Read(ctx, func(tx Tx) error {
		for _, id := range ids {
			if _, done := out[id]; done {
				continue
			}
			a, err := tx.GetAttachment(p.OrgID, id)
			if IsCode(err, CodeNotFound) {
				continue
			} else if err != nil {
				return err
			}
			if ok, err := mayDownload(tx, p, a); err != nil {
				return err
			} else if ok {
				out[id] = a
			}
		}
		return nil
	})
	return out, err
}

// mayDownload applies section 9 to an attachment: its uploader, ADMIN,
// whoever sees a value that refers to it, and every member for the org's
// logo.
func mayDownload(tx Tx, p *Principal, a Attachment) (bool, error) {
	if a.CreatedBy == p.UserID || p.IsAdmin() {
		return true, nil
	}
	if org, err := tx.GetOrg(p.OrgID); err != nil || org.LogoKey == a.ID {
		return err == nil, err
	}
	refs, err := tx.ListAttachmentRefs(p.OrgID, a.ID)
	if err != nil {
		return false, err
	}
	sight := newSight(tx, p)
	for _, ref := range refs {
		switch {
		case ref.MeasurementID != "" && p.Can(FnMeasurementRead):
			m, err := tx.GetMeasurement(p.OrgID, ref.MeasurementID)
			if IsCode(err, CodeNotFound) {
				continue
			} else if err != nil {
				return false, err
			}
			proc, err := tx.GetProcessVersion(p.OrgID, m.ProcessID, m.Version)
			if err != nil {
				return false, err
			}
			if !sight.hiddenAt(m.ProcessID, proc.Steps)[ref.ParameterID] {
				return true, nil
			}
		case ref.RecordID != "":
			if h := sight.inRecords(sight.entity(ref.EntityID)); h != nil && !h[ref.ParameterID] {
				return true, nil
			}
		}
	}
	return false, nil
}
