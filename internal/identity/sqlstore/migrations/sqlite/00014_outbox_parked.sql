-- +goose Up
-- The metrics' count of parked events reads this index, not the whole
-- outbox, whose published rows stay: a scrape every few seconds must not
-- cost more as the table grows.
CREATE INDEX outbox_parked ON outbox (seq) WHERE parked_at IS NOT NULL AND published_at IS NULL;

-- +goose Down
DROP INDEX outbox_parked;
