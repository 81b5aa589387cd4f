-- +goose Up
-- Installations (licensing.md §2); see the PostgreSQL twin. SQLite runs
-- one write transaction at a time, so the limit's triggers count without
-- a lock.
ALTER TABLE entitlements ADD COLUMN max_installations INTEGER
    CHECK (max_installations IS NULL OR max_installations BETWEEN 1 AND 1000000);

DROP TRIGGER entitlements_guard_update;
-- +goose StatementBegin
CREATE TRIGGER entitlements_guard_update BEFORE UPDATE ON entitlements
WHEN OLD.status <> 'active' OR NEW.status <> 'revoked'
  OR NEW.id <> OLD.id OR NEW.account_id <> OLD.account_id OR NEW.product <> OLD.product
  OR NEW.version_range IS NOT OLD.version_range
  OR NEW.source IS NOT OLD.source
  OR NEW.reference IS NOT OLD.reference
  OR NEW.max_installations IS NOT OLD.max_installations
  OR NEW.granted_by <> OLD.granted_by OR NEW.granted_at <> OLD.granted_at
BEGIN
    SELECT RAISE(ABORT, 'entitlements: the only permitted change is revoking an active row');
END;
-- +goose StatementEnd

CREATE TABLE installations (
    id             TEXT PRIMARY KEY CHECK (length(id) = 36),
    account_id     TEXT NOT NULL CHECK (length(account_id) = 36),
    entitlement_id INTEGER NOT NULL REFERENCES entitlements (id) ON DELETE RESTRICT,
    product        TEXT NOT NULL CHECK (product IN ('kit', 'platform', 'identity', 'courier')),
    fingerprint    TEXT NOT NULL CHECK (length(fingerprint) BETWEEN 1 AND 128 AND fingerprint NOT GLOB '*[^ -~]*'),
    name           TEXT NOT NULL CHECK (name <> ''),
    version        TEXT CHECK (version <> ''),
    status         TEXT NOT NULL CHECK (status IN ('active', 'deactivated', 'revoked')),
    last_seen_at   TIMESTAMP NOT NULL,
    lapses_at      TIMESTAMP NOT NULL CHECK (lapses_at > last_seen_at),
    created_at     TIMESTAMP NOT NULL,
    ended_at       TIMESTAMP,
    CHECK ((status = 'active') = (ended_at IS NULL))
);
CREATE UNIQUE INDEX installations_one_fingerprint ON installations (account_id, product, fingerprint) WHERE status = 'active';
CREATE INDEX installations_entitlement ON installations (entitlement_id) WHERE status = 'active';
CREATE INDEX installations_account ON installations (account_id, created_at);

-- +goose StatementBegin
CREATE TRIGGER installations_guard_insert BEFORE INSERT ON installations
WHEN NEW.status <> 'active' OR NOT EXISTS (
    SELECT 1 FROM entitlements e
    WHERE e.id = NEW.entitlement_id AND e.status = 'active' AND e.account_id = NEW.account_id AND e.product = NEW.product)
BEGIN
    SELECT RAISE(ABORT, 'installation_entitlement: no active entitlement of the account for the product');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER installations_limit_insert BEFORE INSERT ON installations
WHEN (SELECT count(*) FROM installations i
      WHERE i.entitlement_id = NEW.entitlement_id AND i.status = 'active' AND i.lapses_at > NEW.last_seen_at)
     >= (SELECT max_installations FROM entitlements WHERE id = NEW.entitlement_id)
BEGIN
    SELECT RAISE(ABORT, 'installation_limit: the entitlement allows no more installations');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER installations_guard_update BEFORE UPDATE ON installations
WHEN OLD.status <> 'active'
  OR NEW.id <> OLD.id OR NEW.account_id <> OLD.account_id OR NEW.entitlement_id <> OLD.entitlement_id
  OR NEW.product <> OLD.product OR NEW.fingerprint <> OLD.fingerprint OR NEW.created_at <> OLD.created_at
BEGIN
    SELECT RAISE(ABORT, 'installations: an ended installation never changes, and only the status, name, version and times of an active one change');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER installations_limit_update BEFORE UPDATE ON installations
WHEN NEW.status = 'active' AND OLD.lapses_at <= NEW.last_seen_at
 AND (SELECT count(*) FROM installations i
      WHERE i.entitlement_id = NEW.entitlement_id AND i.status = 'active' AND i.lapses_at > NEW.last_seen_at AND i.id <> NEW.id)
     >= (SELECT max_installations FROM entitlements WHERE id = NEW.entitlement_id)
BEGIN
    SELECT RAISE(ABORT, 'installation_limit: the entitlement allows no more installations');
END;
-- +goose StatementEnd

DROP TRIGGER entitlements_restrict_delete;
-- +goose StatementBegin
CREATE TRIGGER entitlements_restrict_delete BEFORE DELETE ON entitlements
WHEN EXISTS (SELECT 1 FROM entitlement_events WHERE entitlement_id = OLD.id)
  OR EXISTS (SELECT 1 FROM capabilities WHERE entitlement_id = OLD.id)
  OR EXISTS (SELECT 1 FROM claims WHERE entitlement_id = OLD.id)
  OR EXISTS (SELECT 1 FROM installations WHERE entitlement_id = OLD.id)
BEGIN
    SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: an entitlement with events, capabilities, a claim or installations is never deleted');
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER entitlements_restrict_delete;
-- +goose StatementBegin
CREATE TRIGGER entitlements_restrict_delete BEFORE DELETE ON entitlements
WHEN EXISTS (SELECT 1 FROM entitlement_events WHERE entitlement_id = OLD.id)
  OR EXISTS (SELECT 1 FROM capabilities WHERE entitlement_id = OLD.id)
  OR EXISTS (SELECT 1 FROM claims WHERE entitlement_id = OLD.id)
BEGIN
    SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed: an entitlement with events, capabilities or a claim is never deleted');
END;
-- +goose StatementEnd
DROP TABLE installations;
DROP TRIGGER entitlements_guard_update;
-- +goose StatementBegin
CREATE TRIGGER entitlements_guard_update BEFORE UPDATE ON entitlements
WHEN OLD.status <> 'active' OR NEW.status <> 'revoked'
  OR NEW.id <> OLD.id OR NEW.account_id <> OLD.account_id OR NEW.product <> OLD.product
  OR NEW.version_range IS NOT OLD.version_range
  OR NEW.source IS NOT OLD.source
  OR NEW.reference IS NOT OLD.reference
  OR NEW.granted_by <> OLD.granted_by OR NEW.granted_at <> OLD.granted_at
BEGIN
    SELECT RAISE(ABORT, 'entitlements: the only permitted change is revoking an active row');
END;
-- +goose StatementEnd
ALTER TABLE entitlements DROP COLUMN max_installations;
