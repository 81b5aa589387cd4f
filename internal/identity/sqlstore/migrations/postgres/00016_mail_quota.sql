-- +goose Up
-- How many mails of one kind went to one address, or were caused by one
-- user, in the current window (identity.MailLimit): one row per key,
-- counted by an upsert in the transaction that queues the mail. Keyed by
-- the SHA-256 of the key, so no address is kept here.
CREATE TABLE mail_quota (
    key_digest   text COLLATE "C" PRIMARY KEY,
    window_start timestamptz NOT NULL,
    sent         integer NOT NULL CHECK (sent > 0)
);

-- +goose Down
DROP TABLE mail_quota;
