-- +goose Up
-- The W3C traceparent of the request that wrote the event, which the
-- publisher sends as the NATS message's traceparent header so a consumer's
-- span continues that trace. Transport metadata: it is kept beside the
-- envelope, never in it. Null for a row no traced request wrote.
ALTER TABLE outbox ADD COLUMN traceparent TEXT;

-- +goose Down
ALTER TABLE outbox DROP COLUMN traceparent;
