-- +goose Up
-- The SQLite twin of the PostgreSQL schema: TEXT ids, TIMESTAMP columns
-- written as UTC text, RAISE(ABORT) triggers in place of plpgsql.
CREATE TABLE credentials (
    id              TEXT PRIMARY KEY CHECK (length(id) = 36),
    password_digest TEXT NOT NULL UNIQUE CHECK (length(password_digest) = 64),
    account_id      TEXT NOT NULL CHECK (length(account_id) = 36),
    repository      TEXT NOT NULL CHECK (repository IN ('kit', 'platform', 'identity', 'courier')),
    version_range   TEXT CHECK (version_range <> ''),
    created_at      TIMESTAMP NOT NULL,
    expires_at      TIMESTAMP NOT NULL CHECK (expires_at > created_at),
    revoked_at      TIMESTAMP CHECK (revoked_at >= created_at)
);

-- +goose StatementBegin
CREATE TRIGGER credentials_guard_update BEFORE UPDATE ON credentials
WHEN OLD.revoked_at IS NOT NULL OR NEW.revoked_at IS NULL
  OR NEW.id <> OLD.id OR NEW.password_digest <> OLD.password_digest
  OR NEW.account_id <> OLD.account_id OR NEW.repository <> OLD.repository
  OR NEW.version_range IS NOT OLD.version_range
  OR NEW.created_at <> OLD.created_at OR NEW.expires_at <> OLD.expires_at
BEGIN
    SELECT RAISE(ABORT, 'credentials: the only permitted change is revoking a live row');
END;
-- +goose StatementEnd

CREATE TABLE pulls (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    credential_id TEXT NOT NULL REFERENCES credentials (id) ON DELETE RESTRICT,
    account_id    TEXT NOT NULL CHECK (length(account_id) = 36),
    repository    TEXT NOT NULL,
    tag           TEXT NOT NULL CHECK (tag <> ''),
    digest        TEXT NOT NULL CHECK (digest LIKE 'sha256:%'),
    pulled_at     TIMESTAMP NOT NULL
);
CREATE INDEX pulls_account ON pulls (account_id, id DESC);

-- +goose StatementBegin
CREATE TRIGGER pulls_no_update BEFORE UPDATE ON pulls
BEGIN
    SELECT RAISE(ABORT, 'pulls: rows are append-only (UPDATE refused)');
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER pulls_no_delete BEFORE DELETE ON pulls
BEGIN
    SELECT RAISE(ABORT, 'pulls: rows are append-only (DELETE refused)');
END;
-- +goose StatementEnd

-- +goose Down
DROP TABLE pulls;
DROP TABLE credentials;
