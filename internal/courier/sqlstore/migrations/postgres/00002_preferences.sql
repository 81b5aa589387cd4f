-- +goose Up
-- Notification preferences per user (the token's sub). address is the
-- user's email as identity last reported it, which is how a send's
-- recipient is matched to a user; one address belongs to one row at most.
CREATE TABLE preferences (
    user_id               uuid PRIMARY KEY,
    address               text UNIQUE CHECK (address = lower(address)),
    product_updates       boolean NOT NULL DEFAULT true,
    release_announcements boolean NOT NULL DEFAULT true,
    account_activity      boolean NOT NULL DEFAULT true,
    updated_at            timestamptz NOT NULL
);

-- +goose Down
DROP TABLE preferences;
