-- +goose Up
-- Notification preferences per user (the token's sub). address is the
-- user's email as identity last reported it, which is how a send's
-- recipient is matched to a user; one address belongs to one row at most.
CREATE TABLE preferences (
    user_id               TEXT PRIMARY KEY,
    address               TEXT UNIQUE CHECK (address = lower(address)),
    product_updates       BOOLEAN NOT NULL DEFAULT 1 CHECK (product_updates IN (0, 1)),
    release_announcements BOOLEAN NOT NULL DEFAULT 1 CHECK (release_announcements IN (0, 1)),
    account_activity      BOOLEAN NOT NULL DEFAULT 1 CHECK (account_activity IN (0, 1)),
    updated_at            TIMESTAMP NOT NULL
);

-- +goose Down
DROP TABLE preferences;
