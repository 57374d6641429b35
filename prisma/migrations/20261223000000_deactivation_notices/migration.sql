-- The email telling a deactivated user so (Zulip's zerver/emails/deactivate), sent when the
-- administrator gave a deactivation_notification_comment (DELETE /users/{id}). Kept until it
-- is sent: the job that sends it may run again after a crash, or be queued again by the
-- worker's sweep after an enqueue lost between COMMIT and Redis, and must not send it twice.
CREATE TABLE deactivation_notice (
  id              SERIAL PRIMARY KEY,
  realm_id        INTEGER NOT NULL REFERENCES realm(id) ON DELETE CASCADE,
  user_profile_id INTEGER NOT NULL REFERENCES user_profile(id) ON DELETE CASCADE,
  comment         TEXT NOT NULL,
  sent            BOOLEAN NOT NULL DEFAULT false,
  created_at      TIMESTAMPTZ(6) NOT NULL DEFAULT now()
);
CREATE INDEX deactivation_notice_unsent_idx ON deactivation_notice (created_at) WHERE NOT sent;
