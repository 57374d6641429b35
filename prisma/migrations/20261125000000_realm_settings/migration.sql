-- Issue 17: organization settings that PATCH /realm changes. Every group-valued organization
-- permission (the REALM_PERMISSION_GROUP_SETTINGS of Zulip) becomes a column naming a
-- user_group, backfilled from the system groups of each organization with the Zulip defaults,
-- and the scalar settings /register reported as fixed defaults become columns with those
-- defaults. The realm auth-change trigger (20261123040000) fires on any UPDATE of the row, so
-- API replicas drop their cached copy of an organization whenever one of these changes.
-- (No semicolons or quotes in these comments: the migration runner splits on semicolons.)

ALTER TABLE "realm"
  ADD COLUMN "create_multiuse_invite_group_id" INTEGER,
  ADD COLUMN "can_access_all_users_group_id" INTEGER,
  ADD COLUMN "can_add_custom_emoji_group_id" INTEGER,
  ADD COLUMN "can_create_bots_group_id" INTEGER,
  ADD COLUMN "can_create_groups_id" INTEGER,
  ADD COLUMN "can_create_write_only_bots_group_id" INTEGER,
  ADD COLUMN "can_delete_any_message_group_id" INTEGER,
  ADD COLUMN "can_delete_own_message_group_id" INTEGER,
  ADD COLUMN "can_invite_users_group_id" INTEGER,
  ADD COLUMN "can_manage_all_groups_id" INTEGER,
  ADD COLUMN "can_manage_billing_group_id" INTEGER,
  ADD COLUMN "can_mention_many_users_group_id" INTEGER,
  ADD COLUMN "can_move_messages_between_channels_group_id" INTEGER,
  ADD COLUMN "can_move_messages_between_topics_group_id" INTEGER,
  ADD COLUMN "can_resolve_topics_group_id" INTEGER,
  ADD COLUMN "can_set_delete_message_policy_group_id" INTEGER,
  ADD COLUMN "can_set_topics_policy_group_id" INTEGER,
  ADD COLUMN "can_summarize_topics_group_id" INTEGER,
  ADD COLUMN "direct_message_initiator_group_id" INTEGER,
  ADD COLUMN "direct_message_permission_group_id" INTEGER,
  ADD COLUMN "move_messages_within_stream_limit_seconds" INTEGER DEFAULT 604800,
  ADD COLUMN "move_messages_between_streams_limit_seconds" INTEGER DEFAULT 604800,
  ADD COLUMN "disallow_disposable_email_addresses" BOOLEAN NOT NULL DEFAULT true,
  ADD COLUMN "avatar_changes_disabled" BOOLEAN NOT NULL DEFAULT false,
  ADD COLUMN "name_changes_disabled" BOOLEAN NOT NULL DEFAULT false,
  ADD COLUMN "email_changes_disabled" BOOLEAN NOT NULL DEFAULT false,
  ADD COLUMN "require_unique_names" BOOLEAN NOT NULL DEFAULT false,
  ADD COLUMN "send_welcome_emails" BOOLEAN NOT NULL DEFAULT true,
  ADD COLUMN "enable_read_receipts" BOOLEAN NOT NULL DEFAULT true,
  ADD COLUMN "video_chat_provider" SMALLINT NOT NULL DEFAULT 1,
  ADD COLUMN "jitsi_server_url" VARCHAR(200),
  ADD COLUMN "welcome_message_custom_text" TEXT NOT NULL DEFAULT '';

-- The Zulip numbers of message_edit_history_visibility_policy: 1 all, 2 moves, 3 none.
UPDATE "realm" SET "message_edit_history_visibility_policy" = 3
  WHERE "message_edit_history_visibility_policy" > 3;

ALTER TABLE "realm" ADD CONSTRAINT "realm_create_multiuse_invite_group_id_fkey" FOREIGN KEY ("create_multiuse_invite_group_id") REFERENCES "user_group"("id") ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE "realm" ADD CONSTRAINT "realm_can_access_all_users_group_id_fkey" FOREIGN KEY ("can_access_all_users_group_id") REFERENCES "user_group"("id") ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE "realm" ADD CONSTRAINT "realm_can_add_custom_emoji_group_id_fkey" FOREIGN KEY ("can_add_custom_emoji_group_id") REFERENCES "user_group"("id") ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE "realm" ADD CONSTRAINT "realm_can_create_bots_group_id_fkey" FOREIGN KEY ("can_create_bots_group_id") REFERENCES "user_group"("id") ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE "realm" ADD CONSTRAINT "realm_can_create_groups_id_fkey" FOREIGN KEY ("can_create_groups_id") REFERENCES "user_group"("id") ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE "realm" ADD CONSTRAINT "realm_can_create_write_only_bots_group_id_fkey" FOREIGN KEY ("can_create_write_only_bots_group_id") REFERENCES "user_group"("id") ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE "realm" ADD CONSTRAINT "realm_can_delete_any_message_group_id_fkey" FOREIGN KEY ("can_delete_any_message_group_id") REFERENCES "user_group"("id") ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE "realm" ADD CONSTRAINT "realm_can_delete_own_message_group_id_fkey" FOREIGN KEY ("can_delete_own_message_group_id") REFERENCES "user_group"("id") ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE "realm" ADD CONSTRAINT "realm_can_invite_users_group_id_fkey" FOREIGN KEY ("can_invite_users_group_id") REFERENCES "user_group"("id") ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE "realm" ADD CONSTRAINT "realm_can_manage_all_groups_id_fkey" FOREIGN KEY ("can_manage_all_groups_id") REFERENCES "user_group"("id") ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE "realm" ADD CONSTRAINT "realm_can_manage_billing_group_id_fkey" FOREIGN KEY ("can_manage_billing_group_id") REFERENCES "user_group"("id") ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE "realm" ADD CONSTRAINT "realm_can_mention_many_users_group_id_fkey" FOREIGN KEY ("can_mention_many_users_group_id") REFERENCES "user_group"("id") ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE "realm" ADD CONSTRAINT "realm_can_move_messages_between_channels_group_id_fkey" FOREIGN KEY ("can_move_messages_between_channels_group_id") REFERENCES "user_group"("id") ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE "realm" ADD CONSTRAINT "realm_can_move_messages_between_topics_group_id_fkey" FOREIGN KEY ("can_move_messages_between_topics_group_id") REFERENCES "user_group"("id") ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE "realm" ADD CONSTRAINT "realm_can_resolve_topics_group_id_fkey" FOREIGN KEY ("can_resolve_topics_group_id") REFERENCES "user_group"("id") ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE "realm" ADD CONSTRAINT "realm_can_set_delete_message_policy_group_id_fkey" FOREIGN KEY ("can_set_delete_message_policy_group_id") REFERENCES "user_group"("id") ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE "realm" ADD CONSTRAINT "realm_can_set_topics_policy_group_id_fkey" FOREIGN KEY ("can_set_topics_policy_group_id") REFERENCES "user_group"("id") ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE "realm" ADD CONSTRAINT "realm_can_summarize_topics_group_id_fkey" FOREIGN KEY ("can_summarize_topics_group_id") REFERENCES "user_group"("id") ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE "realm" ADD CONSTRAINT "realm_direct_message_initiator_group_id_fkey" FOREIGN KEY ("direct_message_initiator_group_id") REFERENCES "user_group"("id") ON DELETE SET NULL ON UPDATE CASCADE;
ALTER TABLE "realm" ADD CONSTRAINT "realm_direct_message_permission_group_id_fkey" FOREIGN KEY ("direct_message_permission_group_id") REFERENCES "user_group"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- Existing organizations: the Zulip defaults, by system group name.
UPDATE "realm" SET
  "create_multiuse_invite_group_id" = (SELECT "id" FROM "user_group" g WHERE g."realm_id" = "realm"."id" AND g."name" = 'role:administrators'),
  "can_access_all_users_group_id" = (SELECT "id" FROM "user_group" g WHERE g."realm_id" = "realm"."id" AND g."name" = 'role:everyone'),
  "can_add_custom_emoji_group_id" = (SELECT "id" FROM "user_group" g WHERE g."realm_id" = "realm"."id" AND g."name" = 'role:members'),
  "can_create_bots_group_id" = (SELECT "id" FROM "user_group" g WHERE g."realm_id" = "realm"."id" AND g."name" = 'role:members'),
  "can_create_groups_id" = (SELECT "id" FROM "user_group" g WHERE g."realm_id" = "realm"."id" AND g."name" = 'role:members'),
  "can_create_write_only_bots_group_id" = (SELECT "id" FROM "user_group" g WHERE g."realm_id" = "realm"."id" AND g."name" = 'role:members'),
  "can_delete_any_message_group_id" = (SELECT "id" FROM "user_group" g WHERE g."realm_id" = "realm"."id" AND g."name" = 'role:administrators'),
  "can_delete_own_message_group_id" = (SELECT "id" FROM "user_group" g WHERE g."realm_id" = "realm"."id" AND g."name" = 'role:everyone'),
  "can_invite_users_group_id" = (SELECT "id" FROM "user_group" g WHERE g."realm_id" = "realm"."id" AND g."name" = 'role:members'),
  "can_manage_all_groups_id" = (SELECT "id" FROM "user_group" g WHERE g."realm_id" = "realm"."id" AND g."name" = 'role:owners'),
  "can_manage_billing_group_id" = (SELECT "id" FROM "user_group" g WHERE g."realm_id" = "realm"."id" AND g."name" = 'role:administrators'),
  "can_mention_many_users_group_id" = (SELECT "id" FROM "user_group" g WHERE g."realm_id" = "realm"."id" AND g."name" = 'role:administrators'),
  "can_move_messages_between_channels_group_id" = (SELECT "id" FROM "user_group" g WHERE g."realm_id" = "realm"."id" AND g."name" = 'role:members'),
  "can_move_messages_between_topics_group_id" = (SELECT "id" FROM "user_group" g WHERE g."realm_id" = "realm"."id" AND g."name" = 'role:everyone'),
  "can_resolve_topics_group_id" = (SELECT "id" FROM "user_group" g WHERE g."realm_id" = "realm"."id" AND g."name" = 'role:everyone'),
  "can_set_delete_message_policy_group_id" = (SELECT "id" FROM "user_group" g WHERE g."realm_id" = "realm"."id" AND g."name" = 'role:moderators'),
  "can_set_topics_policy_group_id" = (SELECT "id" FROM "user_group" g WHERE g."realm_id" = "realm"."id" AND g."name" = 'role:members'),
  "can_summarize_topics_group_id" = (SELECT "id" FROM "user_group" g WHERE g."realm_id" = "realm"."id" AND g."name" = 'role:everyone'),
  "direct_message_initiator_group_id" = (SELECT "id" FROM "user_group" g WHERE g."realm_id" = "realm"."id" AND g."name" = 'role:everyone'),
  "direct_message_permission_group_id" = (SELECT "id" FROM "user_group" g WHERE g."realm_id" = "realm"."id" AND g."name" = 'role:everyone');
