-- +goose Up
-- Relying parties of identity's OpenID Provider. A revoked client keeps its
-- row (revoked_at set) so its tokens stay explainable and its id is never
-- reused.
CREATE TABLE oidc_clients (
    id            TEXT PRIMARY KEY,
    account_id    TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name          TEXT NOT NULL,
    secret_digest TEXT,
    public        BOOLEAN NOT NULL,
    redirect_uris TEXT NOT NULL,
    grant_types   TEXT NOT NULL,
    scopes        TEXT NOT NULL,
    created_by    TEXT NOT NULL,
    created_at    TIMESTAMP NOT NULL,
    revoked_at    TIMESTAMP,
    -- A confidential client always has a secret; a public one never.
    CONSTRAINT oidc_clients_secret CHECK (public = (secret_digest IS NULL))
);
CREATE INDEX oidc_clients_account ON oidc_clients (account_id, created_at);

-- Authorization requests live until their code is redeemed; the row stays
-- after redemption so a second use of the code is recognised.
CREATE TABLE oidc_auth_requests (
    id             TEXT PRIMARY KEY,
    client_id      TEXT NOT NULL REFERENCES oidc_clients (id) ON DELETE CASCADE,
    redirect_uri   TEXT NOT NULL,
    scopes         TEXT NOT NULL,
    state          TEXT NOT NULL,
    nonce          TEXT NOT NULL,
    response_type  TEXT NOT NULL,
    response_mode  TEXT NOT NULL,
    code_challenge TEXT NOT NULL,
    user_id        TEXT REFERENCES users (id) ON DELETE CASCADE,
    session_id     TEXT,
    auth_time      TIMESTAMP,
    done           BOOLEAN NOT NULL DEFAULT FALSE,
    code_digest    TEXT UNIQUE,
    code_used_at   TIMESTAMP,
    -- Set when the code is presented again: nothing more is issued for it.
    code_reused_at TIMESTAMP,
    created_at     TIMESTAMP NOT NULL,
    expires_at     TIMESTAMP NOT NULL,
    CONSTRAINT oidc_auth_requests_done CHECK (NOT done OR user_id IS NOT NULL),
    CONSTRAINT oidc_auth_requests_code CHECK (code_digest IS NULL OR done),
    CONSTRAINT oidc_auth_requests_used CHECK (code_used_at IS NULL OR code_digest IS NOT NULL)
);

-- Access and refresh tokens. Only digests are stored: an access token is
-- found by its id (carried sealed inside the token), a refresh token by its
-- digest. family_id ties a refresh chain (and the access tokens issued
-- with it) together so that reuse revokes all of it.
CREATE TABLE oidc_tokens (
    id              TEXT PRIMARY KEY,
    kind            TEXT NOT NULL CHECK (kind IN ('access', 'refresh')),
    client_id       TEXT NOT NULL REFERENCES oidc_clients (id) ON DELETE CASCADE,
    user_id         TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    family_id       TEXT NOT NULL,
    auth_request_id TEXT,
    digest          TEXT UNIQUE,
    scopes          TEXT NOT NULL,
    auth_time       TIMESTAMP NOT NULL,
    created_at      TIMESTAMP NOT NULL,
    expires_at      TIMESTAMP NOT NULL,
    rotated_at      TIMESTAMP,
    revoked_at      TIMESTAMP,
    CONSTRAINT oidc_tokens_refresh_digest CHECK ((kind = 'refresh') = (digest IS NOT NULL)),
    CONSTRAINT oidc_tokens_rotated CHECK (rotated_at IS NULL OR kind = 'refresh')
);
CREATE INDEX oidc_tokens_family ON oidc_tokens (family_id);
CREATE INDEX oidc_tokens_client ON oidc_tokens (client_id);
CREATE INDEX oidc_tokens_auth_request ON oidc_tokens (auth_request_id);
CREATE INDEX oidc_tokens_user_client ON oidc_tokens (user_id, client_id);

-- Foreign keys as triggers, so they hold for every connection (as 00006
-- does for the earlier tables).
-- +goose StatementBegin
CREATE TRIGGER oidc_accounts_cascade_delete AFTER DELETE ON accounts
BEGIN
    DELETE FROM oidc_clients WHERE account_id = OLD.id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER oidc_clients_cascade_delete AFTER DELETE ON oidc_clients
BEGIN
    DELETE FROM oidc_auth_requests WHERE client_id = OLD.id;
    DELETE FROM oidc_tokens WHERE client_id = OLD.id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER oidc_users_cascade_delete AFTER DELETE ON users
BEGIN
    DELETE FROM oidc_auth_requests WHERE user_id = OLD.id;
    DELETE FROM oidc_tokens WHERE user_id = OLD.id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER oidc_clients_parent_insert BEFORE INSERT ON oidc_clients
WHEN NOT EXISTS (SELECT 1 FROM accounts WHERE id = NEW.account_id)
BEGIN
    SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: oidc_clients.account_id names no account');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER oidc_clients_parent_update BEFORE UPDATE OF account_id ON oidc_clients
WHEN NOT EXISTS (SELECT 1 FROM accounts WHERE id = NEW.account_id)
BEGIN
    SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: oidc_clients.account_id names no account');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER oidc_auth_requests_parent_insert BEFORE INSERT ON oidc_auth_requests
WHEN NOT EXISTS (SELECT 1 FROM oidc_clients WHERE id = NEW.client_id)
  OR (NEW.user_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM users WHERE id = NEW.user_id))
BEGIN
    SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: oidc_auth_requests names no such client or user');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER oidc_tokens_parent_insert BEFORE INSERT ON oidc_tokens
WHEN NOT EXISTS (SELECT 1 FROM oidc_clients WHERE id = NEW.client_id)
  OR NOT EXISTS (SELECT 1 FROM users WHERE id = NEW.user_id)
BEGIN
    SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: oidc_tokens names no such client or user');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER oidc_auth_requests_parent_update BEFORE UPDATE OF client_id, user_id ON oidc_auth_requests
WHEN NOT EXISTS (SELECT 1 FROM oidc_clients WHERE id = NEW.client_id)
  OR (NEW.user_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM users WHERE id = NEW.user_id))
BEGIN
    SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: oidc_auth_requests names no such client or user');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER oidc_tokens_parent_update BEFORE UPDATE OF client_id, user_id ON oidc_tokens
WHEN NOT EXISTS (SELECT 1 FROM oidc_clients WHERE id = NEW.client_id)
  OR NOT EXISTS (SELECT 1 FROM users WHERE id = NEW.user_id)
BEGIN
    SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: oidc_tokens names no such client or user');
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER oidc_tokens_parent_update;
DROP TRIGGER oidc_auth_requests_parent_update;
DROP TRIGGER oidc_tokens_parent_insert;
DROP TRIGGER oidc_auth_requests_parent_insert;
DROP TRIGGER oidc_clients_parent_update;
DROP TRIGGER oidc_clients_parent_insert;
DROP TRIGGER oidc_users_cascade_delete;
DROP TRIGGER oidc_clients_cascade_delete;
DROP TRIGGER oidc_accounts_cascade_delete;
DROP TABLE oidc_tokens;
DROP TABLE oidc_auth_requests;
DROP TABLE oidc_clients;
