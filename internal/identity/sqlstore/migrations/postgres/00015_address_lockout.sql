-- +goose Up
-- Failed sign-ins at addresses no user holds, counted as a user's are, so
-- that an unknown address locks after the same number of failures as a
-- registered one and the lockout cannot tell them apart. Keyed by the
-- SHA-256 of the normalised address: the table keeps no address anyone
-- typed.
CREATE TABLE login_failures (
    address_digest text COLLATE "C" PRIMARY KEY,
    failed_logins  integer NOT NULL CHECK (failed_logins >= 0),
    locked_until   timestamptz,
    updated_at     timestamptz NOT NULL
);

-- +goose Down
DROP TABLE login_failures;
