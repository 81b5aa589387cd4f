-- +goose Up
CREATE TABLE idempotency_keys (
    scope        TEXT NOT NULL,
    key_digest   TEXT NOT NULL,
    fingerprint  TEXT NOT NULL,
    status       INTEGER,
    content_type TEXT,
    location     TEXT,
    body         BLOB,
    created_at   TIMESTAMP NOT NULL,
    completed_at TIMESTAMP,
    PRIMARY KEY (scope, key_digest)
);
CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);

-- +goose Down
DROP TABLE idempotency_keys;
