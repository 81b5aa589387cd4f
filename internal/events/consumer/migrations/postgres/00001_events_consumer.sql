-- +goose Up
-- Every envelope id a consumer has applied. The primary key is what makes
-- at-least-once delivery apply each event once: the id is inserted in the
-- same transaction as the consumer's own work.
CREATE TABLE consumed_events (
    consumer     text        NOT NULL,
    event_id     uuid        NOT NULL,
    type         text        NOT NULL,
    subject      text        NOT NULL,
    time         timestamptz NOT NULL,
    processed_at timestamptz NOT NULL,
    PRIMARY KEY (consumer, event_id)
);

-- Events a consumer could not process, kept with the error for an
-- operator. One row per stream message: a redelivery parks nothing twice.
CREATE TABLE parked_events (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    consumer    text        NOT NULL,
    stream      text        NOT NULL,
    stream_seq  bigint      NOT NULL,
    nats_subject text        NOT NULL,
    event_id    uuid,
    type        text,
    body        bytea       NOT NULL,
    error       text        NOT NULL,
    deliveries  integer     NOT NULL,
    parked_at   timestamptz NOT NULL,
    UNIQUE (consumer, stream, stream_seq)
);

-- +goose Down
DROP TABLE parked_events;
DROP TABLE consumed_events;
