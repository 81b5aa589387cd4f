-- +goose Up
-- No query looks capabilities up by entitlement (revoking touches only its
-- row; redeeming re-checks the entitlement by the capability's own key),
-- so this index only cost every issue and every redemption a write.
DROP INDEX capabilities_outstanding;

-- +goose Down
CREATE INDEX capabilities_outstanding ON capabilities (entitlement_id) WHERE redeemed_at IS NULL;
