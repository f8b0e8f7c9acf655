-- +goose Up
-- Which values refer to an attachment: a parameter of an action of a
-- measurement, or of an entity record. Downloads are allowed to readers who
-- see one of those values (semantics section 9).
CREATE TABLE attachment_refs (
    org_id         TEXT NOT NULL,
    attachment_id  TEXT NOT NULL,
    parameter_id   TEXT NOT NULL,
    measurement_id TEXT NOT NULL DEFAULT '',
    entity_id      TEXT NOT NULL DEFAULT '',
    record_id      TEXT NOT NULL DEFAULT ''
);
CREATE INDEX attachment_refs_attachment ON attachment_refs (org_id, attachment_id);
CREATE INDEX attachment_refs_record ON attachment_refs (org_id, record_id);

-- +goose Down
DROP TABLE attachment_refs;
