-- +goose Up
-- An org's OpenID Connect sign-in (semantics section 18). The client secret
-- is kept as is: wps sends it to the provider's token endpoint.
CREATE TABLE sso_settings (
    org_id            TEXT PRIMARY KEY REFERENCES orgs (id),
    issuer            TEXT NOT NULL,
    client_id         TEXT NOT NULL,
    client_secret     TEXT NOT NULL,
    email_domains     TEXT NOT NULL DEFAULT '[]',
    groups_claim      TEXT NOT NULL DEFAULT '',
    group_roles       TEXT NOT NULL DEFAULT '{}',
    auto_create_users INTEGER NOT NULL DEFAULT 0,
    password_sign_in  TEXT NOT NULL DEFAULT 'allowed',
    updated_at        BIGINT NOT NULL
);

-- /sso/start?email= finds the org by the email's domain: a domain belongs
-- to one org.
CREATE TABLE sso_domains (
    domain TEXT PRIMARY KEY,
    org_id TEXT NOT NULL REFERENCES orgs (id)
);
CREATE INDEX sso_domains_org ON sso_domains (org_id);

-- +goose Down
DROP TABLE sso_domains;
DROP TABLE sso_settings;
