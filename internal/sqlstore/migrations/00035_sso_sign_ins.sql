-- +goose Up
-- Each user's last sign-in through single sign-on and what it changed of
-- their roles (groups claim), shown on the console's users page.
CREATE TABLE sso_sign_ins (
    org_id        TEXT NOT NULL REFERENCES orgs (id),
    user_id       TEXT NOT NULL,
    at            BIGINT NOT NULL,
    roles_added   TEXT NOT NULL DEFAULT '[]',
    roles_removed TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (org_id, user_id)
);

-- +goose Down
DROP TABLE sso_sign_ins;
