-- +goose Up
-- The SQLite twin: TEXT ids, TIMESTAMP columns as UTC text, BLOB for bytes.
CREATE TABLE consumed_events (
    consumer     TEXT      NOT NULL,
    event_id     TEXT      NOT NULL,
    type         TEXT      NOT NULL,
    subject      TEXT      NOT NULL,
    time         TIMESTAMP NOT NULL,
    processed_at TIMESTAMP NOT NULL,
    PRIMARY KEY (consumer, event_id)
);

CREATE TABLE parked_events (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    consumer     TEXT      NOT NULL,
    stream       TEXT      NOT NULL,
    stream_seq   INTEGER   NOT NULL,
    nats_subject TEXT      NOT NULL,
    event_id     TEXT,
    type         TEXT,
    body         BLOB      NOT NULL,
    error        TEXT      NOT NULL,
    deliveries   INTEGER   NOT NULL,
    parked_at    TIMESTAMP NOT NULL,
    UNIQUE (consumer, stream, stream_seq)
);

-- +goose Down
DROP TABLE parked_events;
DROP TABLE consumed_events;
