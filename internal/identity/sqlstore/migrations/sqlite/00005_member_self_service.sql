-- +goose Up
-- SQLite cannot add a NOT NULL column without a constant default, so
-- last_seen_at is filled here and always written by the code.
ALTER TABLE sessions ADD COLUMN last_seen_at TIMESTAMP;
UPDATE sessions SET last_seen_at = created_at;

-- At most one of accepted, declined, revoked. SQLite cannot add a CHECK to
-- an existing table, so triggers hold the rule for every connection.
ALTER TABLE invitations ADD COLUMN declined_at TIMESTAMP;
ALTER TABLE invitations ADD COLUMN revoked_at TIMESTAMP;
-- +goose StatementBegin
CREATE TRIGGER invitations_one_end BEFORE UPDATE ON invitations
WHEN (NEW.accepted_at IS NOT NULL) + (NEW.declined_at IS NOT NULL) + (NEW.revoked_at IS NOT NULL) > 1
BEGIN
    SELECT RAISE(ABORT, 'invitations: an invitation ends at most once');
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER invitations_one_end_insert BEFORE INSERT ON invitations
WHEN (NEW.accepted_at IS NOT NULL) + (NEW.declined_at IS NOT NULL) + (NEW.revoked_at IS NOT NULL) > 1
BEGIN
    SELECT RAISE(ABORT, 'invitations: an invitation ends at most once');
END;
-- +goose StatementEnd

-- An account keeps an owner for every connection: removing or demoting an
-- owner needs another owner to remain. (SQLite runs one write transaction
-- at a time, so the count cannot race.) A cascade from deleting the
-- account, or the user, runs after that row is gone and passes.
-- +goose StatementBegin
CREATE TRIGGER memberships_keep_an_owner_delete BEFORE DELETE ON memberships
WHEN OLD.role = 'owner'
  AND EXISTS (SELECT 1 FROM accounts WHERE id = OLD.account_id)
  AND EXISTS (SELECT 1 FROM users WHERE id = OLD.user_id)
  AND NOT EXISTS (SELECT 1 FROM memberships WHERE account_id = OLD.account_id AND role = 'owner' AND user_id <> OLD.user_id)
BEGIN
    SELECT RAISE(ABORT, 'memberships: the last owner of an account cannot be removed or demoted');
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER memberships_keep_an_owner_update BEFORE UPDATE ON memberships
WHEN OLD.role = 'owner' AND (NEW.role <> 'owner' OR NEW.account_id <> OLD.account_id)
  AND EXISTS (SELECT 1 FROM accounts WHERE id = OLD.account_id)
  AND EXISTS (SELECT 1 FROM users WHERE id = OLD.user_id)
  AND NOT EXISTS (SELECT 1 FROM memberships WHERE account_id = OLD.account_id AND role = 'owner' AND user_id <> OLD.user_id)
BEGIN
    SELECT RAISE(ABORT, 'memberships: the last owner of an account cannot be removed or demoted');
END;
-- +goose StatementEnd

CREATE TABLE staff_audit (
    id         TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL,
    action     TEXT NOT NULL CHECK (action IN ('enabled', 'disabled')),
    actor      TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL
);
CREATE INDEX staff_audit_user_id ON staff_audit (user_id, created_at);
-- +goose StatementBegin
CREATE TRIGGER staff_audit_no_update BEFORE UPDATE ON staff_audit
BEGIN
    SELECT RAISE(ABORT, 'staff_audit: audit rows are append-only (UPDATE refused)');
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER staff_audit_no_delete BEFORE DELETE ON staff_audit
BEGIN
    SELECT RAISE(ABORT, 'staff_audit: audit rows are append-only (DELETE refused)');
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER staff_audit_no_delete;
DROP TRIGGER staff_audit_no_update;
DROP TABLE staff_audit;
DROP TRIGGER memberships_keep_an_owner_update;
DROP TRIGGER memberships_keep_an_owner_delete;
DROP TRIGGER invitations_one_end_insert;
DROP TRIGGER invitations_one_end;
ALTER TABLE invitations DROP COLUMN revoked_at;
ALTER TABLE invitations DROP COLUMN declined_at;
ALTER TABLE sessions DROP COLUMN last_seen_at;
