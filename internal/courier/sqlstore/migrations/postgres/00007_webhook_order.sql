-- +goose Up
-- Deliveries to one endpoint keep the stream's order per subject: a
-- delivery is attempted only once every earlier delivery of its
-- (endpoint, subject) is delivered or finally failed. stream_seq is the
-- event's sequence in the stream (0 for deliveries enqueued before this
-- migration, which come first); waiting marks a delivery behind an
-- earlier pending one of its queue, and leaves it out of the due index
-- until the settling of the one before promotes it.
ALTER TABLE webhook_deliveries ADD COLUMN subject text NOT NULL DEFAULT '';
ALTER TABLE webhook_deliveries ADD COLUMN stream_seq bigint NOT NULL DEFAULT 0;
ALTER TABLE webhook_deliveries ADD COLUMN waiting boolean NOT NULL DEFAULT false;
-- Every delivery so far was about its endpoint's account.
UPDATE webhook_deliveries d SET subject = e.account_id::text FROM webhook_endpoints e WHERE e.id = d.endpoint_id;
DROP INDEX webhook_deliveries_due;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending' AND NOT waiting;
CREATE INDEX webhook_deliveries_queue ON webhook_deliveries (endpoint_id, subject, stream_seq, seq) WHERE status = 'pending';

-- +goose Down
DROP INDEX webhook_deliveries_queue;
DROP INDEX webhook_deliveries_due;
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
ALTER TABLE webhook_deliveries DROP COLUMN waiting;
ALTER TABLE webhook_deliveries DROP COLUMN stream_seq;
ALTER TABLE webhook_deliveries DROP COLUMN subject;
