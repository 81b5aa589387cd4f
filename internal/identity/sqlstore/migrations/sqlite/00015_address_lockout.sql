-- +goose Up
-- The SQLite twin of the PostgreSQL migration: failed sign-ins at
-- addresses no user holds, keyed by the address's SHA-256.
CREATE TABLE login_failures (
    address_digest TEXT PRIMARY KEY,
    failed_logins  INTEGER NOT NULL CHECK (failed_logins >= 0),
    locked_until   TIMESTAMP,
    updated_at     TIMESTAMP NOT NULL
);

-- +goose Down
DROP TABLE login_failures;
