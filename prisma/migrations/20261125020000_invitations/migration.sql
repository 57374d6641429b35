-- Invitations and sign-up (Zulip MultiuseInvite, PreregistrationUser and Confirmation).
-- Channels and groups an invitation grants are kept as id arrays: they are read once, when
-- the account is created, and ids that no longer name a usable channel or group are skipped
-- then.

-- A reusable invitation link (POST /invites/multiuse). status: 0 active, 2 revoked.
CREATE TABLE multiuse_invite (
  id                                  SERIAL PRIMARY KEY,
  realm_id                            INTEGER NOT NULL REFERENCES realm(id),
  referred_by_id                      INTEGER NOT NULL REFERENCES user_profile(id),
  invited_as                          SMALLINT NOT NULL DEFAULT 400,
  stream_ids                          INTEGER[] NOT NULL DEFAULT '{}',
  group_ids                           INTEGER[] NOT NULL DEFAULT '{}',
  include_realm_default_subscriptions BOOLEAN NOT NULL DEFAULT false,
  welcome_message_custom_text         TEXT,
  status                              SMALLINT NOT NULL DEFAULT 0,
  date_created                        TIMESTAMPTZ(6) NOT NULL DEFAULT now()
);
CREATE INDEX multiuse_invite_realm_id_idx ON multiuse_invite (realm_id);
CREATE INDEX multiuse_invite_referred_by_id_idx ON multiuse_invite (referred_by_id);

-- Someone who may create an account: an email invitation (referred_by set), or an address
-- that came through a reusable link (multiuse_invite_id set). status: 0 pending, 1 used,
-- 2 revoked. mail_requested / mail_sent count the invitation emails asked for and sent: the
-- mail job sends only while mail_sent < its own number, so a retried job never sends twice.
CREATE TABLE preregistration_user (
  id                                  SERIAL PRIMARY KEY,
  realm_id                            INTEGER NOT NULL REFERENCES realm(id),
  email                               VARCHAR(254) NOT NULL,
  referred_by_id                      INTEGER REFERENCES user_profile(id),
  multiuse_invite_id                  INTEGER REFERENCES multiuse_invite(id),
  invited_as                          SMALLINT NOT NULL DEFAULT 400,
  stream_ids                          INTEGER[] NOT NULL DEFAULT '{}',
  group_ids                           INTEGER[] NOT NULL DEFAULT '{}',
  include_realm_default_subscriptions BOOLEAN NOT NULL DEFAULT false,
  notify_referrer_on_join             BOOLEAN NOT NULL DEFAULT true,
  welcome_message_custom_text         TEXT,
  invited_at                          TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
  status                              SMALLINT NOT NULL DEFAULT 0,
  created_user_id                     INTEGER REFERENCES user_profile(id),
  mail_requested                      INTEGER NOT NULL DEFAULT 0,
  mail_sent                           INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX preregistration_user_realm_email_idx ON preregistration_user (realm_id, lower(email));
CREATE INDEX preregistration_user_referred_by_id_idx ON preregistration_user (referred_by_id);

-- A confirmation key (24 lowercase base32 characters) for one invitation or reusable link.
-- type: 1 user registration, 2 invitation, 6 reusable invitation link (Zulip numbers).
-- expiry_date null: never expires.
CREATE TABLE confirmation (
  id                      SERIAL PRIMARY KEY,
  realm_id                INTEGER NOT NULL REFERENCES realm(id),
  confirmation_key        VARCHAR(40) NOT NULL UNIQUE,
  type                    SMALLINT NOT NULL,
  preregistration_user_id INTEGER REFERENCES preregistration_user(id) ON DELETE CASCADE,
  multiuse_invite_id      INTEGER REFERENCES multiuse_invite(id) ON DELETE CASCADE,
  date_sent               TIMESTAMPTZ(6) NOT NULL DEFAULT now(),
  expiry_date             TIMESTAMPTZ(6),
  CONSTRAINT confirmation_one_object CHECK (
    (preregistration_user_id IS NULL) <> (multiuse_invite_id IS NULL))
);
CREATE INDEX confirmation_preregistration_user_id_idx ON confirmation (preregistration_user_id);
CREATE INDEX confirmation_multiuse_invite_id_idx ON confirmation (multiuse_invite_id);

-- Invitation emails sent per organization and day (Zulip invites_sent::day count), for the
-- daily invitation limits.
CREATE TABLE realm_invites_sent (
  realm_id INTEGER NOT NULL REFERENCES realm(id),
  day      DATE NOT NULL,
  count    INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (realm_id, day)
);
