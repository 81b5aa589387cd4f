-- +goose Up
-- See the PostgreSQL migration for the meaning of each table. As in
-- 00006, the cascades are also triggers, so they hold for connections
-- that leave foreign keys off.
CREATE TABLE mfa_totp (
    user_id        TEXT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    secret_sealed  BLOB,
    pending_sealed BLOB,
    last_step      INTEGER NOT NULL DEFAULT 0 CHECK (last_step >= 0),
    enabled_at     TIMESTAMP,
    updated_at     TIMESTAMP NOT NULL,
    CHECK (secret_sealed IS NOT NULL OR pending_sealed IS NOT NULL),
    CHECK ((secret_sealed IS NULL) = (enabled_at IS NULL))
);

CREATE TABLE mfa_recovery_codes (
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    digest     TEXT NOT NULL,
    pending    BOOLEAN NOT NULL,
    used_at    TIMESTAMP,
    created_at TIMESTAMP NOT NULL,
    PRIMARY KEY (user_id, digest)
);

CREATE TABLE mfa_challenges (
    digest     TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    expires_at TIMESTAMP NOT NULL,
    used_at    TIMESTAMP,
    created_at TIMESTAMP NOT NULL
);
CREATE INDEX mfa_challenges_user_id ON mfa_challenges (user_id);

CREATE TABLE api_keys (
    id           TEXT PRIMARY KEY,
    account_id   TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    name         TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 120),
    scopes       TEXT NOT NULL CHECK (scopes <> ''),
    digest       TEXT NOT NULL,
    created_by   TEXT NOT NULL,
    created_at   TIMESTAMP NOT NULL,
    expires_at   TIMESTAMP,
    last_used_at TIMESTAMP,
    revoked_at   TIMESTAMP
);
CREATE UNIQUE INDEX api_keys_digest_key ON api_keys (digest);
CREATE INDEX api_keys_account_id ON api_keys (account_id, created_at);

-- +goose StatementBegin
CREATE TRIGGER users_cascade_delete_mfa AFTER DELETE ON users
BEGIN
    DELETE FROM mfa_totp WHERE user_id = OLD.id;
    DELETE FROM mfa_recovery_codes WHERE user_id = OLD.id;
    DELETE FROM mfa_challenges WHERE user_id = OLD.id;
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER accounts_cascade_delete_api_keys AFTER DELETE ON accounts
BEGIN
    DELETE FROM api_keys WHERE account_id = OLD.id;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER accounts_cascade_delete_api_keys;
DROP TRIGGER users_cascade_delete_mfa;
DROP TABLE api_keys;
DROP TABLE mfa_challenges;
DROP TABLE mfa_recovery_codes;
DROP TABLE mfa_totp;
