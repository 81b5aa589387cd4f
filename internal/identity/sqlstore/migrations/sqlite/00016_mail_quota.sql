-- +goose Up
-- The SQLite twin of the PostgreSQL migration: mails per key and window.
CREATE TABLE mail_quota (
    key_digest   TEXT PRIMARY KEY,
    window_start TIMESTAMP NOT NULL,
    sent         INTEGER NOT NULL CHECK (sent > 0)
);

-- +goose Down
DROP TABLE mail_quota;
