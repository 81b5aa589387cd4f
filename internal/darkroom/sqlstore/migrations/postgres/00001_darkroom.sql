-- +goose Up
-- Uploads not yet completed (darkroom.md section 2): swept after 24 h.
CREATE TABLE uploads (
    id           uuid PRIMARY KEY,
    owner_id     uuid NOT NULL,
    filename     text NOT NULL CHECK (octet_length(filename) <= 255),
    content_type text NOT NULL CHECK (content_type IN ('image/jpeg', 'image/png', 'image/webp', 'image/gif', 'application/pdf')),
    size         bigint NOT NULL CHECK (size > 0),
    sha256       text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    visibility   text NOT NULL CHECK (visibility IN ('private', 'public')),
    created_at   timestamptz NOT NULL
);
CREATE INDEX uploads_owner ON uploads (owner_id);
CREATE INDEX uploads_created ON uploads (created_at);

-- Kept originals; an upload's id becomes its media's, so a completion is
-- recorded once.
CREATE TABLE media (
    id           uuid PRIMARY KEY,
    owner_id     uuid NOT NULL,
    filename     text NOT NULL CHECK (octet_length(filename) <= 255),
    content_type text NOT NULL CHECK (content_type IN ('image/jpeg', 'image/png', 'image/webp', 'image/gif', 'application/pdf')),
    size         bigint NOT NULL CHECK (size > 0),
    sha256       text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    width        integer NOT NULL CHECK (width >= 0),
    height       integer NOT NULL CHECK (height >= 0),
    visibility   text NOT NULL CHECK (visibility IN ('private', 'public')),
    created_at   timestamptz NOT NULL
);
CREATE INDEX media_owner ON media (owner_id);

-- One row per variant: concurrent first requests on several replicas
-- record it once.
CREATE TABLE variants (
    media_id     uuid NOT NULL REFERENCES media (id) ON DELETE CASCADE,
    preset       text NOT NULL,
    format       text NOT NULL CHECK (format IN ('webp', 'jpeg', 'png')),
    content_type text NOT NULL,
    size         bigint NOT NULL CHECK (size > 0),
    sha256       text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    width        integer NOT NULL CHECK (width > 0),
    height       integer NOT NULL CHECK (height > 0),
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (media_id, preset, format)
);

-- Each user's kept bytes: a completion adds to it only while it stays
-- within the quota (a conditional UPDATE), a deletion takes back.
CREATE TABLE usage (
    owner_id uuid PRIMARY KEY,
    bytes    bigint NOT NULL CHECK (bytes >= 0)
);

-- +goose Down
DROP TABLE usage;
DROP TABLE variants;
DROP TABLE media;
DROP TABLE uploads;
