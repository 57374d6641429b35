-- Organization settings PATCH /realm takes that were sent as the Zulip defaults but not kept:
-- a change by an administrator now persists and reaches every client (Realm.property_types
-- and org_type in Zulip). Defaults are those of a new Zulip organization. The GIF rating uses
-- the ids of lib/realm-state.ts GIF_RATING_OPTIONS, where 1 is g. (No semicolons in these
-- comments: the schema engine splits statements on them.)
ALTER TABLE realm
  ADD COLUMN org_type                                       SMALLINT NOT NULL DEFAULT 0,
  ADD COLUMN default_code_block_language                    TEXT     NOT NULL DEFAULT '',
  ADD COLUMN digest_emails_enabled                          BOOLEAN  NOT NULL DEFAULT false,
  ADD COLUMN digest_weekday                                 SMALLINT NOT NULL DEFAULT 1,
  ADD COLUMN enable_guest_user_dm_warning                   BOOLEAN  NOT NULL DEFAULT true,
  ADD COLUMN enable_guest_user_indicator                    BOOLEAN  NOT NULL DEFAULT true,
  ADD COLUMN giphy_rating                                   SMALLINT NOT NULL DEFAULT 1,
  ADD COLUMN inline_image_preview                           BOOLEAN  NOT NULL DEFAULT true,
  ADD COLUMN inline_url_embed_preview                       BOOLEAN  NOT NULL DEFAULT false,
  ADD COLUMN message_content_allowed_in_email_notifications BOOLEAN  NOT NULL DEFAULT true,
  ADD COLUMN require_e2ee_push_notifications                BOOLEAN  NOT NULL DEFAULT false,
  ADD COLUMN send_channel_events_messages                   BOOLEAN  NOT NULL DEFAULT false,
  ADD COLUMN want_advertise_in_communities_directory        BOOLEAN  NOT NULL DEFAULT false;
