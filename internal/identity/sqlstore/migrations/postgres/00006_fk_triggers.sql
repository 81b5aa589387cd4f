-- +goose Up
-- SQLite's 00006 turns every foreign key's rule into a trigger, because
-- there a connection may run with foreign keys off. PostgreSQL enforces
-- foreign keys for every connection, so this version changes nothing; it
-- exists so both engines report the same schema version.
SELECT 1;

-- +goose Down
SELECT 1;
