-- +goose Up
-- The media id (darkroom's) of the user's avatar: a public image parlor
-- stored there, shown beside the user's name. Identity keeps the id only
-- and never asks darkroom (platform.md's dependency direction); NULL when
-- the user has none.
ALTER TABLE users ADD COLUMN avatar_media_id uuid;

-- +goose Down
ALTER TABLE users DROP COLUMN avatar_media_id;
