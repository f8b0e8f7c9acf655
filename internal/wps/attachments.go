package wps

import (
	"context"
	"io"
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

// Upload stores a file for the caller's org. Errors: CodeInvalid (empty
// name), CodeTooLarge (over MaxAttachmentBytes).
func (s *Service) Upload(ctx context.Context, p *Principal, blobs BlobStore, filename, contentType string, r io.Reader) (Attachment, error) {
	if filename == "" || len(filename) > 255 {
		return Attachment{}, Invalid("file", "needs a file name of at most 255 characters")
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

// OpenAttachment returns an attachment of the caller's org and its bytes.
// Errors: CodeNotFound.
func (s *Service) OpenAttachment(ctx context.Context, p *Principal, blobs BlobStore, id string) (Attachment, io.ReadCloser, error) {
	var a Attachment
	if err := s.store.Read(ctx, func(tx Tx) (err error) {
		a, err = tx.GetAttachment(p.OrgID, id)
		return err
	}); err != nil {
		return a, nil, err
	}
	rc, err := blobs.Open(ctx, a.StorageKey)
	return a, rc, err
}
