-- The auth-change trigger also notes what it touched in a transaction-local setting, so the
-- process that commits can evict its own cache entries at once, before its next request
-- (other replicas learn it from the NOTIFY). \x3B is a statement end, escaped for the runner.
CREATE OR REPLACE FUNCTION parley_notify_auth_change() RETURNS trigger
LANGUAGE plpgsql AS E'
BEGIN
  PERFORM pg_notify(''parley_auth_change'', TG_TABLE_NAME || '':'' || OLD.id::text)\x3B
  PERFORM set_config(''parley.auth_changed'',
    coalesce(current_setting(''parley.auth_changed'', true), '''') || TG_TABLE_NAME || '':'' || OLD.id::text || '','',
    true)\x3B
  RETURN NULL\x3B
END
';
