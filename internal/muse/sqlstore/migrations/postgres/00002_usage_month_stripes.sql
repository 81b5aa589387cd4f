-- +goose Up
-- The month's total in sixteen stripes per account and month: each usage
-- row adds its tokens to the stripe its id's last four bits name (random
-- in a UUIDv7), so an account's concurrent completions seldom wait on one
-- row lock to commit. The total is the sum of an account's stripes for
-- the month, still kept equal to the sum of its usage rows for every
-- connection by the trigger.
ALTER TABLE usage_months ADD COLUMN stripe smallint NOT NULL DEFAULT 0 CHECK (stripe BETWEEN 0 AND 15);
ALTER TABLE usage_months ALTER COLUMN stripe DROP DEFAULT;
ALTER TABLE usage_months DROP CONSTRAINT usage_months_pkey;
ALTER TABLE usage_months ADD PRIMARY KEY (account_id, month, stripe);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION usage_month_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO usage_months (account_id, month, stripe, tokens)
    VALUES (NEW.account_id, substr(NEW.day, 1, 7), get_byte(uuid_send(NEW.id), 15) & 15,
            NEW.prompt_tokens + NEW.completion_tokens)
    ON CONFLICT (account_id, month, stripe) DO UPDATE SET tokens = usage_months.tokens + EXCLUDED.tokens;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION usage_month_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO usage_months (account_id, month, tokens)
    VALUES (NEW.account_id, substr(NEW.day, 1, 7), NEW.prompt_tokens + NEW.completion_tokens)
    ON CONFLICT (account_id, month) DO UPDATE SET tokens = usage_months.tokens + EXCLUDED.tokens;
    RETURN NEW;
END;
$$;
-- +goose StatementEnd
-- The totals are made again from the usage rows, under a lock that holds
-- writers back until the migration commits.
LOCK TABLE usage IN SHARE MODE;
DELETE FROM usage_months;
ALTER TABLE usage_months DROP CONSTRAINT usage_months_pkey;
ALTER TABLE usage_months DROP COLUMN stripe;
ALTER TABLE usage_months ADD PRIMARY KEY (account_id, month);
INSERT INTO usage_months (account_id, month, tokens)
    SELECT account_id, substr(day, 1, 7), sum(prompt_tokens + completion_tokens) FROM usage
    GROUP BY account_id, substr(day, 1, 7);
