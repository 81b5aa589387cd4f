-- +goose Up
-- As on PostgreSQL.
CREATE TABLE uploads (
    id           TEXT PRIMARY KEY,
    owner_id     TEXT NOT NULL,
    filename     TEXT NOT NULL CHECK (length(CAST(filename AS BLOB)) <= 255),
    content_type TEXT NOT NULL CHECK (content_type IN ('image/jpeg', 'image/png', 'image/webp', 'image/gif', 'application/pdf')),
    size         INTEGER NOT NULL CHECK (size > 0),
    sha256       TEXT NOT NULL CHECK (length(sha256) = 64 AND sha256 NOT GLOB '*[^0-9a-f]*'),
    visibility   TEXT NOT NULL CHECK (visibility IN ('private', 'public')),
    created_at   TIMESTAMP NOT NULL
);
CREATE INDEX uploads_owner ON uploads (owner_id);
CREATE INDEX uploads_created ON uploads (created_at);

CREATE TABLE media (
    id           TEXT PRIMARY KEY,
    owner_id     TEXT NOT NULL,
    filename     TEXT NOT NULL CHECK (length(CAST(filename AS BLOB)) <= 255),
    content_type TEXT NOT NULL CHECK (content_type IN ('image/jpeg', 'image/png', 'image/webp', 'image/gif', 'application/pdf')),
    size         INTEGER NOT NULL CHECK (size > 0),
    sha256       TEXT NOT NULL CHECK (length(sha256) = 64 AND sha256 NOT GLOB '*[^0-9a-f]*'),
    width        INTEGER NOT NULL CHECK (width >= 0),
    height       INTEGER NOT NULL CHECK (height >= 0),
    visibility   TEXT NOT NULL CHECK (visibility IN ('private', 'public')),
    created_at   TIMESTAMP NOT NULL
);
CREATE INDEX media_owner ON media (owner_id);

CREATE TABLE variants (
    media_id     TEXT NOT NULL REFERENCES media (id) ON DELETE CASCADE,
    preset       TEXT NOT NULL,
    format       TEXT NOT NULL CHECK (format IN ('webp', 'jpeg', 'png')),
    content_type TEXT NOT NULL,
    size         INTEGER NOT NULL CHECK (size > 0),
    sha256       TEXT NOT NULL CHECK (length(sha256) = 64 AND sha256 NOT GLOB '*[^0-9a-f]*'),
    width        INTEGER NOT NULL CHECK (width > 0),
    height       INTEGER NOT NULL CHECK (height > 0),
    created_at   TIMESTAMP NOT NULL,
    PRIMARY KEY (media_id, preset, format)
);

CREATE TABLE usage (
    owner_id TEXT PRIMARY KEY,
    bytes    INTEGER NOT NULL CHECK (bytes >= 0)
);

-- The same rules on a connection with foreign keys off (the sqlite3
-- shell's): a variant names media, and media leave no variant behind.
-- +goose StatementBegin
CREATE TRIGGER variants_media_exists BEFORE INSERT ON variants
WHEN NOT EXISTS (SELECT 1 FROM media WHERE id = NEW.media_id)
BEGIN
    SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed');
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER media_delete_variants BEFORE DELETE ON media BEGIN
    DELETE FROM variants WHERE media_id = OLD.id;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER media_delete_variants;
DROP TRIGGER variants_media_exists;
DROP TABLE usage;
DROP TABLE variants;
DROP TABLE media;
DROP TABLE uploads;
