-- +goose Up
-- A claim only moves next_attempt_at, which no index covers. With room left
-- on the row's page, PostgreSQL makes that a heap-only (HOT) update: no new
-- entry in the primary key, the id index or outbox_pending, and the old
-- version is pruned with the page. Full pages (the default fillfactor, 100)
-- made every claim a full update writing three index entries. Marking a row
-- published changes outbox_pending's predicate, so it is a full update
-- either way. The setting applies to pages filled from now on, which is
-- where pending rows are. SQLite has no such setting.
ALTER TABLE outbox SET (fillfactor = 50);

-- +goose Down
ALTER TABLE outbox RESET (fillfactor);
