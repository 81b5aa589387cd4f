-- +goose Up
-- PostgreSQL enforces foreign keys for every connection, so the triggers
-- SQLite's 00006 adds for them have no twin here; only the column is new.
-- A capability of a deleted account is voided (identity.account.deleted,
-- operations.md section 8): redeeming requires voided_at to be null. Only
-- an outstanding capability is voided; a redeemed one stays as it was.
ALTER TABLE capabilities ADD COLUMN voided_at timestamptz CHECK (voided_at IS NULL OR redeemed_at IS NULL);

-- +goose Down
ALTER TABLE capabilities DROP COLUMN voided_at;
