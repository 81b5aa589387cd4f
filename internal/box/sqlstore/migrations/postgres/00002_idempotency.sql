-- +goose Up
-- Idempotency-Key records (internal/idempotency): a digest of the key and
-- the sealed response, never either in the clear.
CREATE TABLE idempotency_keys (
    scope        text NOT NULL,
    key_digest   text NOT NULL,
    fingerprint  text NOT NULL,
    status       integer,
    content_type text,
    location     text,
    body         bytea,
    created_at   timestamptz NOT NULL,
    completed_at timestamptz,
    PRIMARY KEY (scope, key_digest)
);
CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);

-- +goose Down
DROP TABLE idempotency_keys;
