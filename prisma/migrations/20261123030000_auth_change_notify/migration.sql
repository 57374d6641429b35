-- Every replica caches organizations and authenticated users in memory. A change to either
-- row tells every replica at commit time through NOTIFY, whichever code path or tool made it
-- (an aborted transaction notifies nobody). The function body spells its statement ends as
-- the escape \x3B: the migration runner splits on that character even inside quotes.
CREATE OR REPLACE FUNCTION parley_notify_auth_change() RETURNS trigger
LANGUAGE plpgsql AS E'
BEGIN
  PERFORM pg_notify(''parley_auth_change'', TG_TABLE_NAME || '':'' || OLD.id::text)\x3B
  RETURN NULL\x3B
END
';

CREATE TRIGGER user_profile_auth_change AFTER UPDATE OR DELETE ON user_profile
  FOR EACH ROW EXECUTE FUNCTION parley_notify_auth_change();

CREATE TRIGGER realm_auth_change AFTER UPDATE OR DELETE ON realm
  FOR EACH ROW EXECUTE FUNCTION parley_notify_auth_change();
