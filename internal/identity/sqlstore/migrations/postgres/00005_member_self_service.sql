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
ALTER TABLE invitations DROP CONSTRAINT invitations_one_end;
ALTER TABLE invitations DROP COLUMN revoked_at;
ALTER TABLE invitations DROP COLUMN declined_at;
ALTER TABLE sessions DROP COLUMN last_seen_at;
