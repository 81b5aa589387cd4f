-- +goose Up
-- The SQLite twin of the PostgreSQL migration: the user's avatar (a
-- darkroom media id), NULL when none.
ALTER TABLE users ADD COLUMN avatar_media_id TEXT;

-- +goose Down
ALTER TABLE users DROP COLUMN avatar_media_id;
