-- +goose Up
-- A failed attempt is shown to the account's admins as a category and a
-- safe message, never the dial error (which named the platform's
-- resolver and told whether an internal name resolves). The attempts
-- recorded before keep only what their category says.
ALTER TABLE webhook_attempts ADD COLUMN error_category text NOT NULL DEFAULT ''
    CHECK (error_category IN ('', 'dns', 'refused', 'timeout', 'tls', 'blocked_address', 'http_status', 'connection', 'internal'));
UPDATE webhook_attempts SET error_category = CASE
        WHEN error LIKE 'timeout%' THEN 'timeout'
        WHEN error LIKE 'the endpoint''s address is%' THEN 'blocked_address'
        WHEN error LIKE '%lookup %' OR error LIKE '%no such host%' THEN 'dns'
        WHEN error LIKE '%connection refused%' THEN 'refused'
        WHEN error LIKE '%tls%' OR error LIKE '%x509%' OR error LIKE '%certificate%' THEN 'tls'
        WHEN error LIKE 'the endpoint''s secret%' THEN 'internal'
        WHEN error <> '' OR status_code = 0 THEN 'connection'
        ELSE 'http_status' END
    WHERE error <> '' OR status_code < 200 OR status_code > 299;
UPDATE webhook_attempts SET error = CASE error_category
        WHEN 'timeout' THEN 'no answer in time'
        WHEN 'blocked_address' THEN 'the endpoint''s host is at an address that is not public; no connection was made'
        WHEN 'dns' THEN 'the endpoint''s host name could not be resolved'
        WHEN 'refused' THEN 'the endpoint''s host refused the connection'
        WHEN 'tls' THEN 'the endpoint''s certificate is not valid'
        WHEN 'internal' THEN 'courier could not sign the request'
        WHEN 'connection' THEN 'the connection failed before an answer came'
        ELSE 'the endpoint answered ' || status_code || ', not 2xx' END
    WHERE error_category <> '';

-- +goose Down
ALTER TABLE webhook_attempts DROP COLUMN error_category;
