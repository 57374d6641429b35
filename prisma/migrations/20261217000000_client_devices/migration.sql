-- Logged-in client devices and end-to-end encrypted push notifications (Zulip's Device,
-- feature levels 468-470: POST /register_client_device, /remove_client_device and
-- /mobile_push/register).
--
-- A device row is made by register_client_device with every push column null. Registering
-- it for E2EE push stores the key notifications are encrypted with (push_key: a byte naming
-- the cryptosystem, 0x31 for libsodium's secretbox, then the 32-byte key, and push_key_id the
-- client's unsigned 32-bit name for it) and a token id (the first 8 bytes of the SHA-256 of
-- the FCM/APNs token, as a signed big-endian integer: the token itself is sealed for the
-- bouncer and never seen here). pending_push_token_id holds it while the worker registers it
-- with the push service, push_token_id once registered, push_registration_error_code when
-- the service refused it.
CREATE TABLE device (
  id                                 SERIAL PRIMARY KEY,
  user_profile_id                    INTEGER NOT NULL REFERENCES user_profile(id) ON DELETE CASCADE,
  push_key                           BYTEA,
  push_key_id                        BIGINT CHECK (push_key_id BETWEEN 0 AND 4294967295),
  push_token_id                      BIGINT,
  pending_push_token_id              BIGINT,
  push_token_kind                    VARCHAR(4) CHECK (push_token_kind IN ('apns', 'fcm')),
  push_token_last_updated_timestamp  TIMESTAMPTZ(6),
  push_registration_error_code       VARCHAR(100),
  date_created                       TIMESTAMPTZ(6) NOT NULL DEFAULT now()
);
CREATE INDEX device_user_idx ON device (user_profile_id);

-- has_push_device (migration 20261201020000) now also counts a device that can be sent an
-- encrypted notification: a registered token and a key. Same locking as before.
-- \x3B spells a statement end inside the function body: the migration runner splits on
-- that character even inside quotes.
CREATE OR REPLACE FUNCTION parley_push_device_changed() RETURNS trigger
LANGUAGE plpgsql AS E'
DECLARE
  users int[]\x3B
BEGIN
  IF TG_OP = ''INSERT'' THEN
    users := ARRAY[NEW.user_profile_id]\x3B
  ELSIF TG_OP = ''DELETE'' THEN
    users := ARRAY[OLD.user_profile_id]\x3B
  ELSE
    users := ARRAY[OLD.user_profile_id, NEW.user_profile_id]\x3B
  END IF\x3B
  PERFORM 1 FROM user_profile WHERE id = ANY(users) ORDER BY id FOR NO KEY UPDATE\x3B
  UPDATE user_profile u
  SET has_push_device = parley_user_has_push_device(u.id)
  WHERE u.id = ANY(users)
    AND u.has_push_device IS DISTINCT FROM parley_user_has_push_device(u.id)\x3B
  RETURN NULL\x3B
END
';

CREATE FUNCTION parley_user_has_push_device(user_id integer) RETURNS boolean
LANGUAGE sql STABLE AS E'
  SELECT EXISTS (SELECT 1 FROM push_device_token d WHERE d.user_profile_id = user_id)
    OR EXISTS (SELECT 1 FROM device d WHERE d.user_profile_id = user_id
                 AND d.push_token_id IS NOT NULL AND d.push_key IS NOT NULL)
';

CREATE TRIGGER device_changed
  AFTER INSERT OR DELETE OR UPDATE OF user_profile_id, push_token_id, push_key ON device
  FOR EACH ROW EXECUTE FUNCTION parley_push_device_changed();

-- The log transport records encrypted notifications too: how many devices, the payload
-- before encryption, and the requests as the push service would get them (token ids, key
-- ids, ciphertext).
ALTER TABLE push_notification_log
  ADD COLUMN e2ee_devices INTEGER NOT NULL DEFAULT 0,
  ADD COLUMN e2ee_payload JSONB,
  ADD COLUMN e2ee_requests JSONB;
