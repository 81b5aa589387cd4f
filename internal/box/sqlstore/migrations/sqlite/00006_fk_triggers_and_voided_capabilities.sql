-- +goose Up
-- Foreign keys bind only connections that turn them on (the sqlite3 shell
-- does not), so on SQLite every foreign key's rule is also a trigger and
-- holds for every connection. Each refusal's message starts as SQLite's
-- own does ("FOREIGN KEY constraint failed"), so it is classified alike.
-- entitlements' own id never changes (entitlements_guard_update), so only
-- releases needs an update rule on the parent side.

-- +goose StatementBegin
CREATE TRIGGER entitlements_restrict_delete BEFORE DELETE ON entitlements
WHEN EXISTS (SELECT 1 FROM entitlement_events WHERE entitlement_id = OLD.id)
  OR EXISTS (SELECT 1 FROM capabilities WHERE entitlement_id = OLD.id)
  OR EXISTS (SELECT 1 FROM claims WHERE entitlement_id = OLD.id)
BEGIN
    SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: an entitlement with events, capabilities or a claim is never deleted');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER entitlement_events_parent_insert BEFORE INSERT ON entitlement_events
WHEN NOT EXISTS (SELECT 1 FROM entitlements WHERE id = NEW.entitlement_id)
BEGIN
    SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: entitlement_events.entitlement_id names no entitlement');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER capabilities_parent_insert BEFORE INSERT ON capabilities
WHEN NOT EXISTS (SELECT 1 FROM entitlements WHERE id = NEW.entitlement_id)
BEGIN
    SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: capabilities.entitlement_id names no entitlement');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER capabilities_parent_update BEFORE UPDATE OF entitlement_id ON capabilities
WHEN NOT EXISTS (SELECT 1 FROM entitlements WHERE id = NEW.entitlement_id)
BEGIN
    SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: capabilities.entitlement_id names no entitlement');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER claims_parent_insert BEFORE INSERT ON claims
WHEN NOT EXISTS (SELECT 1 FROM entitlements WHERE id = NEW.entitlement_id)
BEGIN
    SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: claims.entitlement_id names no entitlement');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER claims_parent_update BEFORE UPDATE OF entitlement_id ON claims
WHEN NOT EXISTS (SELECT 1 FROM entitlements WHERE id = NEW.entitlement_id)
BEGIN
    SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: claims.entitlement_id names no entitlement');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER releases_restrict_delete BEFORE DELETE ON releases
WHEN EXISTS (SELECT 1 FROM approvals WHERE release_id = OLD.id)
BEGIN
    SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: a release with approvals is never deleted');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER releases_restrict_update BEFORE UPDATE OF id ON releases
WHEN NEW.id IS NOT OLD.id AND EXISTS (SELECT 1 FROM approvals WHERE release_id = OLD.id)
BEGIN
    SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: a release with approvals keeps its id');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER approvals_parent_insert BEFORE INSERT ON approvals
WHEN NOT EXISTS (SELECT 1 FROM releases WHERE id = NEW.release_id)
BEGIN
    SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: approvals.release_id names no release');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER approvals_parent_update BEFORE UPDATE OF release_id ON approvals
WHEN NOT EXISTS (SELECT 1 FROM releases WHERE id = NEW.release_id)
BEGIN
    SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: approvals.release_id names no release');
END;
-- +goose StatementEnd

-- A capability of a deleted account is voided (identity.account.deleted,
-- operations.md section 8): redeeming requires voided_at to be null. Only
-- an outstanding capability is voided; a redeemed one stays as it was.
ALTER TABLE capabilities ADD COLUMN voided_at TIMESTAMP CHECK (voided_at IS NULL OR redeemed_at IS NULL);

-- +goose Down
ALTER TABLE capabilities DROP COLUMN voided_at;
DROP TRIGGER approvals_parent_update;
DROP TRIGGER approvals_parent_insert;
DROP TRIGGER releases_restrict_update;
DROP TRIGGER releases_restrict_delete;
DROP TRIGGER claims_parent_update;
DROP TRIGGER claims_parent_insert;
DROP TRIGGER capabilities_parent_update;
DROP TRIGGER capabilities_parent_insert;
DROP TRIGGER entitlement_events_parent_insert;
DROP TRIGGER entitlements_restrict_delete;
