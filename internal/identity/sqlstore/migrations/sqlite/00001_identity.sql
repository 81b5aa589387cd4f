-- +goose Up
-- The SQLite twin of the PostgreSQL schema: TEXT ids, TIMESTAMP columns
-- written as UTC text (so they order correctly), BLOB for bytes.
CREATE TABLE users (
    id            TEXT PRIMARY KEY,
    email         TEXT NOT NULL,
    display_name  TEXT NOT NULL DEFAULT '',
    password_hash TEXT NOT NULL,
    staff         BOOLEAN NOT NULL DEFAULT 0,
    failed_logins INTEGER NOT NULL DEFAULT 0 CHECK (failed_logins >= 0),
    locked_until  TIMESTAMP,
    disabled_at   TIMESTAMP,
    verified_at   TIMESTAMP,
    created_at    TIMESTAMP NOT NULL,
    updated_at    TIMESTAMP NOT NULL
);
CREATE UNIQUE INDEX users_email_key ON users (email);

CREATE TABLE sessions (
    id         TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at TIMESTAMP NOT NULL,
    expires_at TIMESTAMP NOT NULL,
    ended_at   TIMESTAMP
);
CREATE INDEX sessions_user_id ON sessions (user_id);

CREATE TABLE accounts (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL CHECK (length(name) BETWEEN 1 AND 120),
    slug       TEXT NOT NULL CHECK (length(slug) BETWEEN 1 AND 63),
    personal   BOOLEAN NOT NULL,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL
);
CREATE UNIQUE INDEX accounts_slug_key ON accounts (slug);

CREATE TABLE memberships (
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role       TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
    created_at TIMESTAMP NOT NULL,
    PRIMARY KEY (account_id, user_id)
);
CREATE INDEX memberships_user_id ON memberships (user_id);

CREATE TABLE invitations (
    id           TEXT PRIMARY KEY,
    account_id   TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    email        TEXT NOT NULL,
    role         TEXT NOT NULL CHECK (role IN ('admin', 'member')),
    token_digest TEXT NOT NULL,
    invited_by   TEXT NOT NULL,
    created_at   TIMESTAMP NOT NULL,
    expires_at   TIMESTAMP NOT NULL,
    accepted_at  TIMESTAMP,
    accepted_by  TEXT
);
CREATE UNIQUE INDEX invitations_token_digest_key ON invitations (token_digest);
CREATE INDEX invitations_account_id ON invitations (account_id);

CREATE TABLE signing_keys (
    kid                TEXT PRIMARY KEY,
    algorithm          TEXT NOT NULL,
    public_key         BLOB NOT NULL,
    private_key_sealed BLOB NOT NULL,
    created_at         TIMESTAMP NOT NULL,
    withdrawn_at       TIMESTAMP
);

CREATE TABLE outbox (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    id              TEXT NOT NULL UNIQUE,
    type            TEXT NOT NULL,
    source          TEXT NOT NULL,
    subject         TEXT NOT NULL,
    time            TIMESTAMP NOT NULL,
    data            TEXT NOT NULL,
    created_at      TIMESTAMP NOT NULL,
    published_at    TIMESTAMP,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TIMESTAMP NOT NULL,
    last_error      TEXT,
    parked_at       TIMESTAMP
);
CREATE INDEX outbox_pending ON outbox (seq) WHERE published_at IS NULL AND parked_at IS NULL;

-- +goose StatementBegin
CREATE TRIGGER outbox_keep_unpublished BEFORE DELETE ON outbox
WHEN OLD.published_at IS NULL
BEGIN
    SELECT RAISE(ABORT, 'outbox: an unpublished row is never deleted');
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER outbox_keep_unpublished;
DROP TABLE outbox;
DROP TABLE signing_keys;
DROP TABLE invitations;
DROP TABLE memberships;
DROP TABLE accounts;
DROP TABLE sessions;
DROP TABLE users;
