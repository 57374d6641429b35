-- API replicas cache each organization's linkifiers (read by every send and message fetch).
-- A change to any of them tells every replica at commit time on the auth-change channel, as
-- "realm_filter:<realm id>", and notes it in the transaction-local setting so the process
-- that commits drops its own entry before its next request (migration
-- 20261123040000_auth_change_marker). \x3B is a statement end, escaped for the runner.
CREATE OR REPLACE FUNCTION parley_notify_linkifier_change() RETURNS trigger
LANGUAGE plpgsql AS E'
DECLARE
  realm integer := CASE WHEN TG_OP = ''DELETE'' THEN OLD.realm_id ELSE NEW.realm_id END\x3B
BEGIN
  PERFORM pg_notify(''parley_auth_change'', ''realm_filter:'' || realm::text)\x3B
  PERFORM set_config(''parley.auth_changed'',
    coalesce(current_setting(''parley.auth_changed'', true), '''') || ''realm_filter:'' || realm::text || '','',
    true)\x3B
  RETURN NULL\x3B
END
';

CREATE TRIGGER realm_filter_change AFTER INSERT OR UPDATE OR DELETE ON realm_filter
  FOR EACH ROW EXECUTE FUNCTION parley_notify_linkifier_change();
