-- +goose Up
-- The SQLite twin of the PostgreSQL migration: one-time tokens of the
-- credential lifecycle (digests only) and the mail outbox.
CREATE TABLE user_tokens (
    id           TEXT PRIMARY KEY,
    user_id      TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    purpose      TEXT NOT NULL CHECK (purpose IN ('verify_email', 'password_reset', 'email_change')),
    token_digest TEXT NOT NULL,
    email        TEXT NOT NULL,
    created_at   TIMESTAMP NOT NULL,
    expires_at   TIMESTAMP NOT NULL CHECK (expires_at > created_at),
    used_at      TIMESTAMP
);
CREATE UNIQUE INDEX user_tokens_token_digest_key ON user_tokens (token_digest);
CREATE INDEX user_tokens_user_id ON user_tokens (user_id);

-- +goose StatementBegin
CREATE TRIGGER user_tokens_single_use BEFORE UPDATE ON user_tokens
WHEN (OLD.used_at IS NOT NULL AND NEW.used_at IS NOT OLD.used_at)
  OR NEW.token_digest IS NOT OLD.token_digest OR NEW.user_id IS NOT OLD.user_id OR NEW.purpose IS NOT OLD.purpose
BEGIN
    SELECT RAISE(ABORT, 'user_tokens: a used token stays used and a token never changes what it is');
END;
-- +goose StatementEnd

-- Foreign keys bind only connections that turn them on (see 00006).
-- +goose StatementBegin
CREATE TRIGGER user_tokens_parent_insert BEFORE INSERT ON user_tokens
WHEN NOT EXISTS (SELECT 1 FROM users WHERE id = NEW.user_id)
BEGIN
    SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: user_tokens.user_id names no user');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER users_cascade_delete_tokens AFTER DELETE ON users
BEGIN
    DELETE FROM user_tokens WHERE user_id = OLD.id;
END;
-- +goose StatementEnd

ALTER TABLE users ADD COLUMN verification_sent_at TIMESTAMP;

CREATE TABLE mail_outbox (
    id              TEXT PRIMARY KEY,
    template        TEXT NOT NULL,
    recipient       TEXT NOT NULL,
    data_sealed     BLOB,
    created_at      TIMESTAMP NOT NULL,
    next_attempt_at TIMESTAMP NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    sent_at         TIMESTAMP,
    last_error      TEXT,
    CHECK (sent_at IS NULL OR data_sealed IS NULL)
);
CREATE INDEX mail_outbox_pending ON mail_outbox (next_attempt_at) WHERE sent_at IS NULL;

-- +goose Down
DROP TABLE mail_outbox;
ALTER TABLE users DROP COLUMN verification_sent_at;
DROP TRIGGER users_cascade_delete_tokens;
DROP TRIGGER user_tokens_parent_insert;
DROP TRIGGER user_tokens_single_use;
DROP TABLE user_tokens;
