-- +goose Up
-- The stream consumer that enqueues webhook deliveries runs on one
-- courier replica at a time, the holder of this lease: two replicas
-- consuming together commit their batches in either order, and an event
-- about a subject could be enqueued after a later one was delivered.
CREATE TABLE webhook_consumer_lease (
    name       text PRIMARY KEY,
    holder     text NOT NULL,
    expires_at timestamptz NOT NULL
);

-- +goose Down
DROP TABLE webhook_consumer_lease;
