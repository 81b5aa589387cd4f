-- +goose Up
-- Sessions record when they were last used, so a user can tell their
-- sessions apart; Authenticate refreshes it at most once a minute.
ALTER TABLE sessions ADD COLUMN last_seen_at timestamptz;
UPDATE sessions SET last_seen_at = created_at;
ALTER TABLE sessions ALTER COLUMN last_seen_at SET NOT NULL;

-- An invitation ends in one of three ways besides expiry: accepted,
-- declined by the invitee, or revoked by an admin. At most one of them
-- happens, and each is made by one conditional UPDATE.
ALTER TABLE invitations ADD COLUMN declined_at timestamptz;
ALTER TABLE invitations ADD COLUMN revoked_at timestamptz;
ALTER TABLE invitations ADD CONSTRAINT invitations_one_end CHECK (
    (accepted_at IS NOT NULL)::int + (declined_at IS NOT NULL)::int + (revoked_at IS NOT NULL)::int <= 1);

-- An account keeps an owner for every connection, not only for the store's
-- code: removing or demoting an owner needs another owner to remain. The
-- account's row is locked first, as the store does, so two owners leaving
-- at once are serialised and the second sees the first gone. A cascade
-- from deleting the account, or the user, finds that row gone and passes.
-- +goose StatementBegin
CREATE FUNCTION memberships_keep_an_owner() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.role = 'owner' AND (TG_OP = 'DELETE' OR NEW.role <> 'owner' OR NEW.account_id <> OLD.account_id) THEN
        PERFORM 1 FROM accounts WHERE id = OLD.account_id FOR UPDATE;
        IF FOUND AND EXISTS (SELECT 1 FROM users WHERE id = OLD.user_id)
           AND NOT EXISTS (SELECT 1 FROM memberships
                           WHERE account_id = OLD.account_id AND role = 'owner' AND user_id <> OLD.user_id) THEN
            RAISE EXCEPTION 'memberships: the last owner of account % cannot be removed or demoted', OLD.account_id;
        END IF;
    END IF;
    IF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER memberships_keep_an_owner BEFORE DELETE OR UPDATE ON memberships
    FOR EACH ROW EXECUTE FUNCTION memberships_keep_an_owner();

-- Staff changes, written by `identity staff` in the transaction that makes
-- them. The trail is append-only for every connection.
CREATE TABLE staff_audit (
    id         uuid PRIMARY KEY,
    user_id    uuid NOT NULL,
    action     text NOT NULL CHECK (action IN ('enabled', 'disabled')),
    actor      text NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE INDEX staff_audit_user_id ON staff_audit (user_id, created_at);

-- +goose StatementBegin
CREATE FUNCTION staff_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'staff_audit: audit rows are append-only (% refused)', TG_OP;
END;
$$;
-- +goose StatementEnd
CREATE TRIGGER staff_audit_no_update BEFORE UPDATE ON staff_audit
    FOR EACH ROW EXECUTE FUNCTION staff_audit_append_only();
CREATE TRIGGER staff_audit_no_delete BEFORE DELETE ON staff_audit
    FOR EACH ROW EXECUTE FUNCTION staff_audit_append_only();
CREATE TRIGGER staff_audit_no_truncate BEFORE TRUNCATE ON staff_audit
    FOR EACH STATEMENT EXECUTE FUNCTION staff_audit_append_only();

-- +goose Down
DROP TABLE staff_audit;
DROP FUNCTION staff_audit_append_only;
DROP TRIGGER memberships_keep_an_owner ON memberships;
DROP FUNCTION memberships_keep_an_owner;
ALTER TABLE invitations DROP CONSTRAINT invitations_one_end;
ALTER TABLE invitations DROP COLUMN revoked_at;
ALTER TABLE invitations DROP COLUMN declined_at;
ALTER TABLE sessions DROP COLUMN last_seen_at;
