-- Mobile push notifications (Zulip PushDeviceToken, spec 4.14).

-- A device a user registered for push notifications. kind is 1 for APNs (iOS, with the app id
-- the notification is addressed to) and 2 for FCM (Android, Zulip calls it GCM). A device is
-- registered once per user, kind and token: registering it again refreshes last_updated and
-- the app id. Tokens may be up to 4096 characters, more than a btree entry holds, so the
-- uniqueness is on a digest of the token.
CREATE TABLE push_device_token (
  id              SERIAL PRIMARY KEY,
  user_profile_id INTEGER NOT NULL REFERENCES user_profile(id) ON DELETE CASCADE,
  kind            SMALLINT NOT NULL,
  token           TEXT NOT NULL,
  ios_app_id      TEXT,
  last_updated    TIMESTAMPTZ(6) NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX push_device_token_user_kind_token_key
  ON push_device_token (user_profile_id, kind, md5(token));

-- What the default (log) push transport delivered: one row per user and notification, with
-- the payloads as they would go to the devices and how many devices of each kind there were
-- (never the tokens). For development, tests and operators checking what would be sent.
CREATE TABLE push_notification_log (
  id              BIGSERIAL PRIMARY KEY,
  user_profile_id INTEGER NOT NULL REFERENCES user_profile(id) ON DELETE CASCADE,
  message_id      INTEGER,
  event           VARCHAR(10) NOT NULL,
  apple_devices   INTEGER NOT NULL,
  android_devices INTEGER NOT NULL,
  apns_payload    JSONB NOT NULL,
  gcm_payload     JSONB NOT NULL,
  gcm_options     JSONB NOT NULL,
  created         TIMESTAMPTZ(6) NOT NULL DEFAULT now()
);
CREATE INDEX push_notification_log_user_idx ON push_notification_log (user_profile_id, id);
