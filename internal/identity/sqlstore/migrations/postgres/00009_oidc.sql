-- +goose Up
-- Relying parties of identity's OpenID Provider. A revoked client keeps its
-- row (revoked_at set) so its tokens stay explainable and its id is never
-- reused.
CREATE TABLE oidc_clients (
    id            UUID PRIMARY KEY,
    account_id    UUID NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name          TEXT NOT NULL,
    secret_digest TEXT,
    public        BOOLEAN NOT NULL,
    redirect_uris TEXT NOT NULL,
    grant_types   TEXT NOT NULL,
    scopes        TEXT NOT NULL,
    created_by    UUID NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL,
    revoked_at    TIMESTAMPTZ,
    -- A confidential client always has a secret; a public one never.
    CONSTRAINT oidc_clients_secret CHECK (public = (secret_digest IS NULL))
);
CREATE INDEX oidc_clients_account ON oidc_clients (account_id, created_at);

-- Authorization requests live until their code is redeemed; the row stays
-- after redemption so a second use of the code is recognised.
CREATE TABLE oidc_auth_requests (
    id             TEXT PRIMARY KEY,
    client_id      UUID NOT NULL REFERENCES oidc_clients (id) ON DELETE CASCADE,
    redirect_uri   TEXT NOT NULL,
    scopes         TEXT NOT NULL,
    state          TEXT NOT NULL,
    nonce          TEXT NOT NULL,
    response_type  TEXT NOT NULL,
    response_mode  TEXT NOT NULL,
    code_challenge TEXT NOT NULL,
    user_id        UUID REFERENCES users (id) ON DELETE CASCADE,
    session_id     UUID,
    auth_time      TIMESTAMPTZ,
    done           BOOLEAN NOT NULL DEFAULT FALSE,
    code_digest    TEXT UNIQUE,
    code_used_at   TIMESTAMPTZ,
    -- Set when the code is presented again: nothing more is issued for it.
    code_reused_at TIMESTAMPTZ,
    created_at     TIMESTAMPTZ NOT NULL,
    expires_at     TIMESTAMPTZ NOT NULL,
    CONSTRAINT oidc_auth_requests_done CHECK (NOT done OR user_id IS NOT NULL),
    CONSTRAINT oidc_auth_requests_code CHECK (code_digest IS NULL OR done),
    CONSTRAINT oidc_auth_requests_used CHECK (code_used_at IS NULL OR code_digest IS NOT NULL)
);

-- Access and refresh tokens. Only digests are stored: an access token is
-- found by its id (carried sealed inside the token), a refresh token by its
-- digest. family_id ties a refresh chain (and the access tokens issued
-- with it) together so that reuse revokes all of it.
CREATE TABLE oidc_tokens (
    id              UUID PRIMARY KEY,
    kind            TEXT NOT NULL CHECK (kind IN ('access', 'refresh')),
    client_id       UUID NOT NULL REFERENCES oidc_clients (id) ON DELETE CASCADE,
    user_id         UUID NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    family_id       UUID NOT NULL,
    auth_request_id TEXT,
    digest          TEXT UNIQUE,
    scopes          TEXT NOT NULL,
    auth_time       TIMESTAMPTZ NOT NULL,
    created_at      TIMESTAMPTZ NOT NULL,
    expires_at      TIMESTAMPTZ NOT NULL,
    rotated_at      TIMESTAMPTZ,
    revoked_at      TIMESTAMPTZ,
    CONSTRAINT oidc_tokens_refresh_digest CHECK ((kind = 'refresh') = (digest IS NOT NULL)),
    CONSTRAINT oidc_tokens_rotated CHECK (rotated_at IS NULL OR kind = 'refresh')
);
CREATE INDEX oidc_tokens_family ON oidc_tokens (family_id);
CREATE INDEX oidc_tokens_client ON oidc_tokens (client_id) WHERE revoked_at IS NULL;
CREATE INDEX oidc_tokens_auth_request ON oidc_tokens (auth_request_id);
CREATE INDEX oidc_tokens_user_client ON oidc_tokens (user_id, client_id);

-- +goose Down
DROP TABLE oidc_tokens;
DROP TABLE oidc_auth_requests;
DROP TABLE oidc_clients;
