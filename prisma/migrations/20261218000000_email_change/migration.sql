-- Changing one's own email address (Zulip's EmailChangeStatus, PATCH /settings with `email`):
-- the request is kept here, its link is a confirmation of type 3 (Zulip's EMAIL_CHANGE), and
-- the address changes only when the link is opened. status: 0 pending, 1 confirmed.
-- mail_sent: the confirmation mail to the new address went out (the job that sends it runs
-- again after a crash, and must not send it twice). notice_sent: the same for the notice to
-- the old address once confirmed.
CREATE TABLE email_change_status (
  id              SERIAL PRIMARY KEY,
  realm_id        INTEGER NOT NULL REFERENCES realm(id) ON DELETE CASCADE,
  user_profile_id INTEGER NOT NULL REFERENCES user_profile(id) ON DELETE CASCADE,
  old_email       VARCHAR(254) NOT NULL,
  new_email       VARCHAR(254) NOT NULL,
  status          SMALLINT NOT NULL DEFAULT 0,
  mail_sent       BOOLEAN NOT NULL DEFAULT false,
  notice_sent     BOOLEAN NOT NULL DEFAULT false,
  updated_at      TIMESTAMPTZ(6) NOT NULL DEFAULT now()
);
CREATE INDEX email_change_status_user_profile_id_idx ON email_change_status (user_profile_id);

ALTER TABLE confirmation
  ADD COLUMN email_change_status_id INTEGER REFERENCES email_change_status(id) ON DELETE CASCADE;
CREATE INDEX confirmation_email_change_status_id_idx ON confirmation (email_change_status_id);
ALTER TABLE confirmation DROP CONSTRAINT confirmation_one_object;
ALTER TABLE confirmation ADD CONSTRAINT confirmation_one_object CHECK (
  (preregistration_user_id IS NOT NULL)::int + (multiuse_invite_id IS NOT NULL)::int
    + (email_change_status_id IS NOT NULL)::int = 1);
